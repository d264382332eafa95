package ingest

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"

	"github.com/cgp-platform/cgp/httpapi"
)

// The hints below help a sender whose request has the wrong form (another
// platform's header names, a hex signature). They look only at the
// request's headers, never at a secret or at whether the shop exists, so
// an unknown shop and a wrong signature still get the same answer for the
// same request, and a hint teaches an attacker nothing they did not send.

// foreignPrefixes are header prefixes other commerce platforms sign with.
var foreignPrefixes = []string{"X-Shopify-", "X-Wc-Webhook-", "X-Bc-", "X-Magento-"}

// signatureRequired is the 400 for a delivery without X-Commerce-Hmac-Sha256,
// naming another platform's headers when the delivery carries them.
func signatureRequired(h http.Header) *httpapi.Error {
	e := httpapi.SignatureRequired(HeaderHMAC)
	if hint := foreignHeaderHint(h); hint != "" {
		e.Message += "; " + hint
		e.Details["hint"] = hint
	}
	return e
}

// invalidSignature is the 401 for a signature that does not verify (or an
// unknown shop), with a hint on the signature's encoding and header names.
func invalidSignature(h http.Header, sig string) *httpapi.Error {
	hints := []string{}
	if hint := encodingHint(sig); hint != "" {
		hints = append(hints, hint)
	}
	if hint := foreignHeaderHint(h); hint != "" {
		hints = append(hints, hint)
	}
	if len(hints) == 0 {
		hints = append(hints, HeaderHMAC+" must be the base64 (not hex) HMAC-SHA256 of the raw request body, keyed with the shop's webhook secret, and "+
			HeaderShopDomain+" the shop's domain")
	}
	return httpapi.InvalidSignatureHint(strings.Join(hints, "; "))
}

// encodingHint recognises a signature sent in another encoding than the
// standard base64 of 32 bytes.
func encodingHint(sig string) string {
	s := strings.TrimSpace(sig)
	if v, ok := strings.CutPrefix(strings.ToLower(s), "sha256="); ok {
		return HeaderHMAC + " is the bare base64 HMAC-SHA256, without a \"sha256=\" prefix" + hexNote(v)
	}
	if b, err := base64.StdEncoding.Strict().DecodeString(s); err == nil && len(b) == 32 {
		return ""
	}
	if hexNote(s) != "" {
		return HeaderHMAC + " looks hex-encoded; send the HMAC-SHA256 digest base64-encoded (openssl dgst -sha256 -hmac SECRET -binary | base64)"
	}
	if b, err := base64.URLEncoding.DecodeString(s); err == nil && len(b) == 32 {
		return HeaderHMAC + " looks base64url-encoded; send standard base64 (with + / and = padding)"
	}
	if b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "=")); err == nil && len(b) == 32 {
		return HeaderHMAC + " is missing its base64 padding (=)"
	}
	return HeaderHMAC + " is not the base64 encoding of a 32-byte HMAC-SHA256 digest"
}

func hexNote(s string) string {
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return " (and base64-encoded, not hex)"
	}
	return ""
}

// foreignHeaderHint names another platform's webhook headers the request
// carries instead of (or beside) the X-Commerce-* ones.
func foreignHeaderHint(h http.Header) string {
	var found []string
	for name := range h {
		for _, p := range foreignPrefixes {
			if strings.HasPrefix(name, p) {
				found = append(found, name)
			}
		}
	}
	if len(found) == 0 {
		if h.Get(HeaderShopDomain) == "" {
			return "header " + HeaderShopDomain + " (the shop's domain) is missing"
		}
		return ""
	}
	slices.Sort(found)
	return "the request carries " + strings.Join(found, ", ") + ": this receiver reads the X-Commerce-* headers (" +
		strings.Join([]string{HeaderHMAC, HeaderTopic, HeaderShopDomain, HeaderWebhookID, HeaderTriggeredAt}, ", ") + ")"
}

// clipLog bounds a header value copied to the access log.
func clipLog(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}
