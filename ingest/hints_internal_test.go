package ingest

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSignatureHint: any signature header and header name give a hint
// without panicking, and the hint never repeats the signature sent.
func FuzzSignatureHint(f *testing.F) {
	for _, seed := range []struct{ sig, header string }{
		{"3q2+7w==", "X-Commerce-Shop-Domain"},
		{"sha256=" + strings.Repeat("ab", 32), "X-Shopify-Hmac-Sha256"},
		{strings.Repeat("0f", 32), "X-Shopify-Shop-Domain"},
		{"K2xvbmcgYmFzZTY0IGRpZ2VzdCBvZiAzMiBieXRlcyEhIQ", "X-Wc-Webhook-Signature"},
		{"", ""},
	} {
		f.Add(seed.sig, seed.header)
	}
	f.Fuzz(func(t *testing.T, sig, header string) {
		h := http.Header{}
		if header != "" {
			h[http.CanonicalHeaderKey(header)] = []string{"x"}
		}
		e := invalidSignature(h, sig)
		if e.Code != "invalid_signature" || !utf8.ValidString(e.Message) && utf8.ValidString(header) {
			t.Fatalf("%q %q: %+v", sig, header, e)
		}
		if len(sig) >= 8 && strings.Contains(e.Message, sig) && !strings.Contains(hintVocabulary, sig) && !strings.Contains(http.CanonicalHeaderKey(header), sig) {
			t.Fatalf("hint repeats the signature %q: %s", sig, e.Message)
		}
		_ = signatureRequired(h)
	})
}

// hintVocabulary is every fixed text a hint may contain.
var hintVocabulary = strings.Join([]string{HeaderHMAC, HeaderTopic, HeaderShopDomain, HeaderWebhookID, HeaderTriggeredAt,
	"the signature does not match", "base64", "HMAC-SHA256", "openssl dgst -sha256 -hmac SECRET -binary | base64"}, " ")
