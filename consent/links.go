package consent

import (
	"errors"
	"net/url"
	"strings"

	"github.com/cgp-platform/cgp/internal/signedtoken"
)

// ErrInvalidToken is returned by Parse for a token that is malformed, of
// an unknown version or not signed with the key.
var ErrInvalidToken = errors.New("invalid unsubscribe token")

// tokenVersion is the first field of every token: a new layout gets a new
// version and Parse keeps reading the old ones (links must keep working).
const tokenVersion = "u1"

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

// Token returns the signed token of c (signedtoken, version "u1", the
// claims in their order). No expiry: an unsubscribe link keeps working.
func (l Links) Token(c Claims) string {
	return signedtoken.Sign(l.Key, tokenVersion, c.ShopID, c.CustomerID, c.Channel, c.MessageID)
}

// Parse checks a token's signature (in constant time) and returns its
// claims; ErrInvalidToken for anything else than a token URL or Token
// made with the same key.
func (l Links) Parse(token string) (Claims, error) {
	f, err := signedtoken.Open(l.Key, tokenVersion, token, 4)
	if err != nil || f[0] == "" || f[1] == "" || f[2] == "" {
		return Claims{}, ErrInvalidToken
	}
	return Claims{ShopID: f[0], CustomerID: f[1], Channel: f[2], MessageID: f[3]}, nil
}
