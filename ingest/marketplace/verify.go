package marketplace

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MissingError reports a signing header a delivery lacks.
type MissingError struct{ Header string }

func (e *MissingError) Error() string { return "missing signature header " + e.Header }

// Verification failures other than a missing header.
var (
	// ErrTimestamp: the signing timestamp is malformed or outside the
	// contract's tolerance (a replay, or a clock far off).
	ErrTimestamp = errors.New("signature timestamp malformed or outside the tolerance")
	// ErrMismatch: no signature of the delivery matches.
	ErrMismatch = errors.New("signature does not match")
)

// maxSignatures bounds the entries of a Standard Webhooks signature list.
const maxSignatures = 8

// signing is what a delivery's headers say about its signature.
type signing struct {
	signatures [][]byte
	id         string    // the delivery id, when it is signed
	timestamp  string    // as sent, when the contract has one
	at         time.Time // the timestamp parsed; zero without one
}

// check reads the signing headers before any lookup: a *MissingError for
// an absent header, ErrTimestamp for a bad or stale timestamp. A malformed
// signature yields no candidate, so it fails as a mismatch later.
func (c *Contract) check(h http.Header, now time.Time) (signing, error) {
	var s signing
	sig := h.Get(c.Signature)
	if strings.TrimSpace(sig) == "" {
		return s, &MissingError{Header: c.Signature}
	}
	if c.Signed == SignedIDTimestampBody {
		if s.id = h.Get(c.Delivery.Header); s.id == "" {
			return s, &MissingError{Header: c.Delivery.Header}
		}
	}
	if c.Timestamp != "" {
		if s.timestamp = h.Get(c.Timestamp); s.timestamp == "" {
			return s, &MissingError{Header: c.Timestamp}
		}
		at, ok := unixSeconds(s.timestamp)
		if !ok || at.Before(now.Add(-c.Tolerance)) || at.After(now.Add(c.Tolerance)) {
			return s, ErrTimestamp
		}
		s.at = at
	}
	s.signatures = c.signatures(sig)
	return s, nil
}

// unixSeconds parses a timestamp of 1 to 12 decimal digits.
func unixSeconds(s string) (time.Time, bool) {
	if s == "" || len(s) > 12 {
		return time.Time{}, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0).UTC(), true
}

// signatures decodes the candidate MACs of a signature header; entries
// that are malformed or of another scheme are skipped.
func (c *Contract) signatures(header string) [][]byte {
	header = strings.TrimSpace(header)
	if c.Encoding == EncodingHex {
		v, ok := strings.CutPrefix(header, c.Prefix)
		if !ok {
			return nil
		}
		mac, err := hex.DecodeString(v)
		if err != nil || len(mac) != sha256.Size {
			return nil
		}
		return [][]byte{mac}
	}
	var out [][]byte
	for _, entry := range strings.Fields(header) {
		if len(out) == maxSignatures {
			break
		}
		version, value, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		mac, err := base64.StdEncoding.DecodeString(value)
		if err == nil && len(mac) == sha256.Size {
			out = append(out, mac)
		}
	}
	return out
}

// mac computes the HMAC-SHA256 the contract signs.
func (c *Contract) mac(key []byte, appKey, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	switch c.Signed {
	case SignedAppKeyBody:
		m.Write([]byte(appKey))
	case SignedIDTimestampBody:
		m.Write([]byte(id + "." + timestamp + "."))
	}
	m.Write(body)
	return m.Sum(nil)
}

// matches reports, in constant time per candidate, whether one of s's
// signatures is the MAC of body under the connection's secret and app key.
func (c *Contract) matches(s signing, body []byte, secret, appKey string) bool {
	key, err := c.Key(secret)
	if err != nil || len(s.signatures) == 0 {
		return false
	}
	want := c.mac(key, appKey, s.id, s.timestamp, body)
	ok := false
	for _, got := range s.signatures {
		if hmac.Equal(want, got) {
			ok = true
		}
	}
	return ok
}

// Verify checks a delivery's signature with a connection's secret and app
// key at now: nil, a *MissingError, ErrTimestamp or ErrMismatch.
func (c *Contract) Verify(h http.Header, body []byte, secret, appKey string, now time.Time) error {
	s, err := c.check(h, now)
	if err != nil {
		return err
	}
	if !c.matches(s, body, secret, appKey) {
		return ErrMismatch
	}
	return nil
}

// Sign returns the headers a marketplace following the contract sends with
// body: the signature, and the timestamp, delivery id and account id where
// the contract carries them in headers. It is what tests and the
// documentation's examples use.
func (c *Contract) Sign(secret, appKey, accountID, deliveryID string, at time.Time, body []byte) (map[string]string, error) {
	key, err := c.Key(secret)
	if err != nil {
		return nil, err
	}
	h := map[string]string{"Content-Type": "application/json"}
	ts := ""
	if c.Timestamp != "" {
		ts = strconv.FormatInt(at.Unix(), 10)
		h[c.Timestamp] = ts
	}
	if c.Delivery.Header != "" {
		h[c.Delivery.Header] = deliveryID
	}
	if c.Account.Header != "" {
		h[c.Account.Header] = accountID
	}
	mac := c.mac(key, appKey, deliveryID, ts, body)
	if c.Encoding == EncodingStandardWebhooks {
		h[c.Signature] = "v1," + base64.StdEncoding.EncodeToString(mac)
	} else {
		h[c.Signature] = c.Prefix + hex.EncodeToString(mac)
	}
	return h, nil
}
