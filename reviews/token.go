package reviews

import (
	"errors"
	"strconv"
	"time"

	"github.com/cgp-platform/cgp/internal/signedtoken"
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

// Token returns the signed token of c (signedtoken, version "r1", the
// claims in their order, the expiry in Unix seconds).
func (t Tokens) Token(c Claims) string {
	return signedtoken.Sign(t.Key, tokenVersion, c.ShopID, c.CustomerID, c.OrderID, strconv.FormatInt(c.Expires.Unix(), 10))
}

// Parse checks a token's signature (in constant time) and expiry at now
// and returns its claims; ErrInvalidToken for anything else than a
// token Token made with the same key and not expired.
func (t Tokens) Parse(token string, now time.Time) (Claims, error) {
	f, err := signedtoken.Open(t.Key, tokenVersion, token, 4)
	if err != nil || f[0] == "" || f[1] == "" || f[2] == "" {
		return Claims{}, ErrInvalidToken
	}
	exp, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return Claims{}, ErrInvalidToken
	}
	return Claims{ShopID: f[0], CustomerID: f[1], OrderID: f[2], Expires: time.Unix(exp, 0).UTC()}, nil
}
