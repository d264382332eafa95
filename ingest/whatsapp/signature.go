package whatsapp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// HeaderSignature carries the platform's signature of the raw body:
// "sha256=" and the hex HMAC-SHA256 keyed with the app secret.
const HeaderSignature = "X-Hub-Signature-256"

const signaturePrefix = "sha256="

// Verify reports whether header is "sha256=<hex>" with the HMAC-SHA256 of
// body keyed with secret, compared in constant time. The hex digits may be
// in either case.
func Verify(secret, body []byte, header string) bool {
	hexSig, ok := strings.CutPrefix(header, signaturePrefix)
	if !ok || len(hexSig) != 2*sha256.Size {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got)
}

// Sign returns the header value the platform sends for body.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}
