// Package signedtoken makes and reads the service's signed link tokens
// (unsubscribe links, review tokens): "<version>." then base64url (no
// padding) of the fields joined by NUL, a dot and base64url of the
// HMAC-SHA256 of "<version>." and that payload. The fields are opaque ids,
// never personal data: the token is readable by whoever holds it.
package signedtoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// ErrInvalid is returned by Open for a token that is malformed, of another
// version, not signed with the key or of another number of fields.
var ErrInvalid = errors.New("invalid token")

// Limits of Open: a token's length and one field's.
const (
	MaxToken = 2048
	MaxField = 256
)

// Sign returns the token of fields under version, signed with key.
func Sign(key []byte, version string, fields ...string) string {
	signed := version + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Join(fields, "\x00")))
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac(key, signed))
}

// Open checks a token's version and signature (in constant time) and
// returns its n fields; ErrInvalid for anything else than a token Sign
// made with the same key, version and number of fields, within the
// limits.
func Open(key []byte, version, token string, n int) ([]string, error) {
	if len(key) == 0 || len(token) > MaxToken {
		return nil, ErrInvalid
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != version {
		return nil, ErrInvalid
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac(key, parts[0]+"."+parts[1])) {
		return nil, ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, ErrInvalid
	}
	f := strings.Split(string(raw), "\x00")
	if len(f) != n {
		return nil, ErrInvalid
	}
	for _, v := range f {
		if len(v) > MaxField {
			return nil, ErrInvalid
		}
	}
	return f, nil
}

func mac(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}
