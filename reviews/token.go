package reviews

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidToken is returned by Parse for a token that is malformed, of
// an unknown version, not signed with the key or expired.
var ErrInvalidToken = errors.New("invalid review token")

// tokenVersion is the first field of every token; a new layout gets a new
// version and Parse keeps reading the old ones while they are valid.
const tokenVersion = "r1"

// TokenLifetime is how long a review token stays valid: 180 days after
// the review request is sent.
const TokenLifetime = 180 * 24 * time.Hour

// maxToken bounds a token Parse reads; maxField one claim.
const (
	maxToken = 2048
	maxField = 256
)

// Claims are what a review token proves: that the customer bought the
// order of the shop (opaque ids only), until Expires.
type Claims struct {
	ShopID, CustomerID, OrderID string
	Expires                     time.Time
}

// Tokens makes and reads review tokens.
type Tokens struct {
	// Key signs the tokens (32 bytes, derived from the server's key
	// material for this purpose only).
	Key []byte
}

// Token returns the signed token of c: "r1." then base64url (no padding)
// of the claims joined by NUL (the expiry in Unix seconds), a dot and
// base64url of the HMAC-SHA256 of "r1." and that payload.
func (t Tokens) Token(c Claims) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(strings.Join([]string{c.ShopID, c.CustomerID, c.OrderID,
		strconv.FormatInt(c.Expires.Unix(), 10)}, "\x00")))
	signed := tokenVersion + "." + payload
	return signed + "." + base64.RawURLEncoding.EncodeToString(t.sign(signed))
}

func (t Tokens) sign(s string) []byte {
	mac := hmac.New(sha256.New, t.Key)
	mac.Write([]byte(s))
	return mac.Sum(nil)
}

// Parse checks a token's signature (in constant time) and expiry at now
// and returns its claims; ErrInvalidToken for anything else than a
// token Token made with the same key and not expired.
func (t Tokens) Parse(token string, now time.Time) (Claims, error) {
	if len(t.Key) == 0 || len(token) > maxToken {
		return Claims{}, ErrInvalidToken
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != tokenVersion {
		return Claims{}, ErrInvalidToken
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, t.sign(parts[0]+"."+parts[1])) {
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
	exp, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return Claims{}, ErrInvalidToken
	}
	return Claims{ShopID: f[0], CustomerID: f[1], OrderID: f[2], Expires: time.Unix(exp, 0).UTC()}, nil
}
