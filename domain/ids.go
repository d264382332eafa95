package domain

import (
	"crypto/rand"
	"strings"
)

// Resource id prefixes. Ids are a prefix and 24 base62 characters from
// crypto/rand, or a deterministic derivation (see DeterministicID); they never
// carry personal data, so they may appear in stream ids and logs.
const (
	PrefixAccount  = "acc_"
	PrefixShop     = "shop_"
	PrefixCustomer = "cus_"
	PrefixOrder    = "ord_"
	PrefixToken    = "tok_"
	PrefixCampaign = "cam_"
	PrefixJourney  = "jrn_"
	PrefixRequest  = "req_"
	PrefixEvent    = "evt_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// RandomBase62 returns n characters drawn uniformly from the base62 alphabet
// using crypto/rand (rejection sampling, no modulo bias).
func RandomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/2+8)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			panic("crypto/rand failed: " + err.Error()) // the OS RNG never fails on supported platforms
		}
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62: reject to keep the distribution uniform
				continue
			}
			out = append(out, base62[b%62])
			if len(out) == n {
				break
			}
		}
	}
	return string(out)
}

// NewID returns a new random id with the given prefix.
func NewID(prefix string) string { return prefix + RandomBase62(24) }

// HasPrefixID reports whether id has the prefix and a non-empty base62 body of
// at most 64 characters. It is the cheap syntactic check done before any lookup.
func HasPrefixID(id, prefix string) bool {
	if !strings.HasPrefix(id, prefix) {
		return false
	}
	body := id[len(prefix):]
	if body == "" || len(body) > 64 {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}
