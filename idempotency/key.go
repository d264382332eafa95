package idempotency

import (
	"errors"
	"net/http"
	"unicode"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/httpapi"
)

// Header names of the contract.
const (
	// HeaderKey is the request header carrying the client's key.
	HeaderKey = "Idempotency-Key"
	// HeaderReplayed is set to "true" on a replayed response.
	HeaderReplayed = "Idempotent-Replayed"
)

// MaxKeyLength is the longest key accepted, in characters (Unicode code
// points; a UUID has 36).
const MaxKeyLength = 255

// ValidateKey checks a key: 1 to MaxKeyLength characters of valid UTF-8,
// none of them a control character (C0, DEL or C1). The error never quotes
// the key.
func ValidateKey(key string) error {
	if key == "" {
		return errors.New("the key is empty")
	}
	n := 0
	for i, r := range key {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(key[i:]); size <= 1 {
				return errors.New("the key is not valid UTF-8")
			}
		}
		if unicode.IsControl(r) {
			return errors.New("the key contains a control character")
		}
		n++
		if n > MaxKeyLength {
			return errors.New("the key is longer than 255 characters")
		}
	}
	return nil
}

// ParseKey reads the Idempotency-Key header of h. present is false when the
// header is absent. A header that is present but empty, sent more than
// once, longer than MaxKeyLength characters, not UTF-8 or holding a control
// character is an *httpapi.Error: 400 invalid_parameter with
// details.field "Idempotency-Key". The key is taken verbatim (net/http has
// already trimmed surrounding spaces); quotes are part of it.
func ParseKey(h http.Header) (key string, present bool, err error) {
	values := h.Values(HeaderKey)
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, httpapi.InvalidParameter(HeaderKey, "send the Idempotency-Key header once")
	}
	if err := ValidateKey(values[0]); err != nil {
		return "", true, httpapi.InvalidParameter(HeaderKey,
			"Idempotency-Key must have 1 to 255 characters and no control characters: "+err.Error())
	}
	return values[0], true, nil
}
