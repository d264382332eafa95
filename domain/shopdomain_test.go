package domain_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// TestValidDomain (point 13 of issue 14): a shop domain is a lowercase
// public DNS name without port; the domains the test suites use stay
// valid.
func TestValidDomain(t *testing.T) {
	for _, d := range []string{"shop.example.com", "example.myshopify.com", "a-b.example.co.uk", "gone.example", "x1.example.com",
		"xn--bcher-kva.example", "demo-shop.example.com"} {
		if !domain.ValidDomain(d) {
			t.Errorf("%q refused", d)
		}
	}
	for _, d := range []string{"localhost", "shop.example.com:443", "shop.example.com:8080", "127.0.0.1", "10.0.0.1", "[::1]", "::1",
		"api.localhost", "printer.local", "db.internal", "host.localdomain", "router.lan", "1.0.0.127.in-addr.arpa", "a.invalid",
		"com", "Shop.Example.com", "shop..example.com", "-shop.example.com", "shop-.example.com", "shop.example.com.",
		"shop_1.example.com", "shop example.com", "0x7f.1", "2130706433", "", strings.Repeat("a", 64) + ".com",
		strings.Repeat("abcdefgh.", 32) + "com", "user@shop.example.com"} {
		if domain.ValidDomain(d) {
			t.Errorf("%q accepted", d)
		}
	}
	acc := &domain.Account{ID: "acc_1", Exists: true}
	for _, d := range []string{"localhost", "shop.example.com:443", "https://shop.example.com:443/"} {
		in := domain.NewShop{ID: "shop_1", Domain: d, Plan: "agency", WebhookSecret: strings.Repeat("s", 16)}
		if _, err := domain.CreateShop(acc, in, time.Now()); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("CreateShop %q: %v", d, err)
		}
	}
}

// FuzzValidDomain: ValidDomain never panics, and a name it accepts has
// no port, no IP address, no upper case, and labels of RFC 1123.
func FuzzValidDomain(f *testing.F) {
	for _, s := range []string{"shop.example.com", "localhost", "shop.example.com:443", "127.0.0.1", "a.local", "x.myshopify.com", "[::1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		if !domain.ValidDomain(d) {
			return
		}
		if strings.ContainsAny(d, ":/@[] _") || d != strings.ToLower(d) || !strings.Contains(d, ".") || len(d) > 253 {
			t.Fatalf("accepted %q", d)
		}
		if _, err := netip.ParseAddr(d); err == nil {
			t.Fatalf("accepted the address %q", d)
		}
		for _, l := range strings.Split(d, ".") {
			if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
				t.Fatalf("accepted label %q of %q", l, d)
			}
		}
		if d == "localhost" || strings.HasSuffix(d, ".localhost") || strings.HasSuffix(d, ".local") {
			t.Fatalf("accepted local %q", d)
		}
	})
}
