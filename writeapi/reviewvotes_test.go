package writeapi_test

import (
	"net/netip"
	"testing"

	"github.com/cgp-platform/cgp/writeapi"
)

// TestVoterHash: one voter per address (an IPv6 address by its /64), per
// review and per key; the hash shows no address.
func TestVoterHash(t *testing.T) {
	key, other := []byte("key one"), []byte("key two")
	h := func(key []byte, review, addr string) string {
		return writeapi.VoterHash(key, "shop_1", review, netip.MustParseAddr(addr))
	}
	base := h(key, "rev_1", "203.0.113.7")
	if len(base) != 32 || base != h(key, "rev_1", "203.0.113.7") {
		t.Fatalf("not a stable 128-bit hex hash: %q", base)
	}
	for name, got := range map[string]string{
		"another address": h(key, "rev_1", "203.0.113.8"),
		"another review":  h(key, "rev_2", "203.0.113.7"),
		"another key":     h(other, "rev_1", "203.0.113.7"),
		"another /64":     h(key, "rev_1", "2001:db8:0:2::1"),
	} {
		if got == base || got == h(key, "rev_1", "2001:db8:0:1::1") {
			t.Errorf("%s gives the same voter", name)
		}
	}
	if h(key, "rev_1", "2001:db8:0:1::1") != h(key, "rev_1", "2001:db8:0:1:ffff::9") {
		t.Error("two addresses of one /64 are two voters")
	}
}
