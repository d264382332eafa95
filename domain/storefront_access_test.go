package domain_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

var accessNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func shopWith(events ...domain.Event) *domain.Shop {
	s := &domain.Shop{}
	s.Apply(&domain.ShopCreated{ShopID: "shop_1", Domain: "shop.example.com", CORSAllowList: []string{"www.example.com"}})
	for _, e := range events {
		s.Apply(e)
	}
	return s
}

// TestAllowOrigin: given the shop's events, adding an origin decides a
// ShopOriginAllowed with its host, nothing for an origin already listed,
// and a refusal naming origin for one the public surface never admits.
func TestAllowOrigin(t *testing.T) {
	cases := []struct {
		name   string
		given  []domain.Event
		origin string
		want   string // host of the event; "" for none
		err    bool
	}{
		{"new origin", nil, "https://shop.brand.com", "shop.brand.com", false},
		{"default port, upper case", nil, "https://Shop.Brand.com:443", "shop.brand.com", false},
		{"listed at creation", nil, "https://www.example.com", "", false},
		{"listed by an event", []domain.Event{&domain.ShopOriginAllowed{ShopID: "shop_1", Host: "a.brand.com"}}, "https://a.brand.com", "", false},
		{"removed, added again", []domain.Event{&domain.ShopOriginRemoved{ShopID: "shop_1", Host: "www.example.com"}}, "https://www.example.com", "www.example.com", false},
		{"http", nil, "http://shop.brand.com", "", true},
		{"user information", nil, "https://x@shop.brand.com", "", true},
		{"path", nil, "https://shop.brand.com/", "", true},
		{"port", nil, "https://shop.brand.com:8443", "", true},
		{"bare host", nil, "shop.brand.com", "", true},
		{"ip", nil, "https://10.0.0.1", "", true},
		{"local name", nil, "https://printer.local", "", true},
	}
	for _, c := range cases {
		ev, err := shopWith(c.given...).AllowOrigin(c.origin, accessNow)
		if c.err {
			if domain.ErrorCode(err) != domain.CodeInvalid || !strings.Contains(err.Error(), "origin") {
				t.Errorf("%s: err %v, want invalid origin", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := ""; ev != nil {
			got = ev.Host
			if got != c.want || ev.ShopID != "shop_1" {
				t.Errorf("%s: %+v, want host %q", c.name, ev, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%s: no event, want host %q", c.name, c.want)
		}
	}
	full := shopWith()
	for i := 0; len(full.AllowedOrigins()) < domain.MaxAllowedOrigins; i++ {
		full.Apply(&domain.ShopOriginAllowed{ShopID: "shop_1", Host: "o" + strings.Repeat("x", i%50) + string(rune('a'+i%26)) + ".brand.com"})
	}
	if _, err := full.AllowOrigin("https://one-more.brand.com", accessNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("origin beyond the limit: %v", err)
	}
}

// TestRemoveOrigin: by origin or host; one not listed is not found.
func TestRemoveOrigin(t *testing.T) {
	for _, in := range []string{"https://www.example.com", "www.example.com", "WWW.example.com", "https://www.example.com:443"} {
		ev, err := shopWith().RemoveOrigin(in, accessNow)
		if err != nil || ev.Host != "www.example.com" {
			t.Errorf("remove %q: %+v %v", in, ev, err)
		}
	}
	for _, in := range []string{"https://other.example.com", "", "http://www.example.com"} {
		if _, err := shopWith().RemoveOrigin(in, accessNow); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Errorf("remove %q: %v, want not found", in, err)
		}
	}
	if _, err := (&domain.Shop{}).RemoveOrigin("www.example.com", accessNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("remove from no shop: %v", err)
	}
}

// TestPublicKeyLifecycle: a rotation changes the hash, a revocation is
// final (rotating it is a conflict, revoking again changes nothing).
func TestPublicKeyLifecycle(t *testing.T) {
	k := &domain.PublicKey{}
	if _, err := k.Rotate("pk_live_"+strings.Repeat("a", 32), accessNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("rotate a key that does not exist: %v", err)
	}
	k.Apply(&domain.PublicKeyIssued{KeyID: "pkk_1", ShopID: "shop_1", Environment: "live", Hash: "old", Last4: "aaaa", CreatedAt: accessNow})
	raw := "pk_live_" + strings.Repeat("b", 28) + "wxyz"
	ev, err := k.Rotate(raw, accessNow)
	if err != nil || ev.Hash != domain.HashToken(raw) || ev.Last4 != "wxyz" || ev.KeyID != "pkk_1" {
		t.Fatalf("rotate: %+v %v", ev, err)
	}
	if _, err := k.Rotate("copt_live_"+strings.Repeat("b", 32), accessNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("rotate to an admin token: %v", err)
	}
	k.Apply(ev)
	if k.Hash != ev.Hash || k.Last4 != "wxyz" || k.RotatedAt.IsZero() {
		t.Errorf("folded rotation: %+v", k)
	}
	rev, err := k.Revoke(accessNow)
	if err != nil || rev == nil {
		t.Fatalf("revoke: %v", err)
	}
	k.Apply(rev)
	if again, err := k.Revoke(accessNow); again != nil || err != nil {
		t.Errorf("revoke twice: %+v %v", again, err)
	}
	if _, err := k.Rotate(raw, accessNow); domain.ErrorCode(err) != domain.CodeConflict {
		t.Errorf("rotate a revoked key: %v", err)
	}
}

// FuzzParseAllowedOrigin: never panics; an origin it accepts is an https
// origin with no user information, path, query, fragment or port but
// 443, whose host is a valid shop domain.
func FuzzParseAllowedOrigin(f *testing.F) {
	for _, s := range []string{"https://www.example.com", "https://www.example.com:443", "http://www.example.com",
		"https://x@www.example.com", "https://www.example.com/p", "https://127.0.0.1", "https://localhost", " https://a.b.com ", "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		host, err := domain.ParseAllowedOrigin("origin", origin)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("%q: %v", origin, err)
			}
			return
		}
		u, perr := url.Parse(strings.TrimSpace(origin))
		if perr != nil || u.Scheme != "https" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
			strings.ToLower(u.Hostname()) != host || (u.Port() != "" && u.Port() != "443") || !domain.ValidDomain(host) {
			t.Fatalf("accepted %q as %q", origin, host)
		}
	})
}
