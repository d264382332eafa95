package consent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
)

// ErrInvalidToken is returned by Parse for a token that is malformed, of
// an unknown version or not signed with the key.
var ErrInvalidToken = errors.New("invalid unsubscribe token")

// tokenVersion is the first field of every token: a new layout gets a new
// version and Parse keeps reading the old ones (links must keep working).
const tokenVersion = "u1"

// maxToken bounds a token Parse reads.
const maxToken = 2048

// maxField bounds one claim.
const maxField = 256

// Links makes and reads unsubscribe links.
type Links struct {
	// Key signs the tokens (32 bytes, derived from the server's key
	// material for this purpose only).
	Key []byte
	// BaseURL is the service's public base URL, without a final slash.
	BaseURL string
}

// Claims are what an unsubscribe token names: opaque ids only.
type Claims struct {
	ShopID, CustomerID, Channel, MessageID string
}

// URL returns the unsubscribe link of c:
// {BaseURL}/api/public/unsubscribe?token=….
func (l Links) URL(c Claims) string {
	return strings.TrimRight(l.BaseURL, "/") + "/api/public/unsubscribe?token=" + url.QueryEscape(l.Token(c))
}

// Token returns the signed token of c: "u1." then base64url (no padding)
// of the claims joined by NUL, a dot and base64url of the HMAC-SHA256 of
// "u1." and that payload. No expiry: an unsubscribe link keeps working.
func (l Links) Token(c Claims) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(strings.Join([]string{c.ShopID, c.CustomerID, c.Channel, c.MessageID}, "\x00")))
	signed := tokenVersion + "." + payload
	return signed + "." + base64.RawURLEncoding.EncodeToString(l.sign(signed))
}

func (l Links) sign(s string) []byte {
	mac := hmac.New(sha256.New, l.Key)
	mac.Write([]byte(s))
	return mac.Sum(nil)
}

// Parse checks a token's signature (in constant time) and returns its
// claims; ErrInvalidToken for anything else than a token URL or Token
// made with the same key.
func (l Links) Parse(token string) (Claims, error) {
	if len(l.Key) == 0 || len(token) > maxToken {
		return Claims{}, ErrInvalidToken
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != tokenVersion {
		return Claims{}, ErrInvalidToken
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, l.sign(parts[0]+"."+parts[1])) {
		return Claims{}, ErrInvalidToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return Claims{}, ErrInvalidToken
	}
	f := strings.Split(string(raw), "\x00")
	if len(f) != 4 || f[0] == "" || f[1] == "" || f[2] == "" {
		return Claims{}, ErrInvalidToken
	}
	for _, v := range f {
		if len(v) > maxField {
			return Claims{}, ErrInvalidToken
		}
	}
	return Claims{ShopID: f[0], CustomerID: f[1], Channel: f[2], MessageID: f[3]}, nil
}
