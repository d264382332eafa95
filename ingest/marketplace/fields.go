package marketplace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// maxDeliveryID bounds a delivery id taken from a header or the body.
const maxDeliveryID = 200

// topLevel returns the values of the named top-level fields of a JSON
// object as strings (a string as is, a number as written), reading up to
// the first syntax error: a truncated or damaged document still gives the
// fields before the damage, so a delivery whose account is named in its
// body can be verified, and then recorded, even when the rest is not JSON.
// A later duplicate wins, as with encoding/json; a field whose value is an
// object, an array, a boolean or null has none.
func topLevel(body []byte, names ...string) map[string]string {
	out := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return out
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, ok := tok.(string)
		if !ok {
			return out
		}
		val, err := dec.Token()
		if err != nil {
			return out
		}
		wanted := false
		for _, n := range names {
			wanted = wanted || n == key
		}
		switch v := val.(type) {
		case string:
			if wanted {
				out[key] = v
			}
		case json.Number:
			if wanted {
				out[key] = v.String()
			}
		case json.Delim:
			delete(out, key)
			if !skip(dec) {
				return out
			}
		default:
			delete(out, key)
		}
	}
	return out
}

// skip consumes the rest of an object or array whose opening delimiter was
// just read; false on a syntax error.
func skip(dec *json.Decoder) bool {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return true
}

// locate reads a located value of a delivery.
func locate(l Locator, h http.Header, body []byte) string {
	if l.Header != "" {
		return h.Get(l.Header)
	}
	return topLevel(body, l.BodyField)[l.BodyField]
}

// account returns the seller account a delivery names ("" when none).
func (c *Contract) account(h http.Header, body []byte) string {
	return locate(c.Account, h, body)
}

// kind returns the event type a delivery names, clipped to the domain's
// limit ("" when none or unreadable).
func (c *Contract) kind(h http.Header, body []byte) string {
	k := locate(c.Kind, h, body)
	if len(k) > domain.MaxMarketplaceKind {
		return k[:domain.MaxMarketplaceKind]
	}
	return k
}

// deliveryID returns the sender's delivery id. A header-located id is
// required (400 invalid_parameter); a body-located one that is absent
// falls back to the SHA-256 of the body, so a retried identical delivery
// is still applied once.
func (c *Contract) deliveryID(h http.Header, body []byte) (string, error) {
	id := locate(c.Delivery, h, body)
	if c.Delivery.Header != "" && (id == "" || len(id) > maxDeliveryID) {
		return "", httpapi.InvalidParameter(c.Delivery.Header,
			"header "+c.Delivery.Header+" is required (at most 200 characters)")
	}
	if id == "" || len(id) > maxDeliveryID {
		sum := sha256.Sum256(body)
		return "sha256:" + hex.EncodeToString(sum[:]), nil
	}
	return id, nil
}
