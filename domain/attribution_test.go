package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestParseLookback(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"14d", 14 * day, true}, {" 30d ", 30 * day, true}, {"365d", 365 * day, true}, {"36h", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true}, {"1h30m", 90 * time.Minute, true}, {"0d", 0, true},
		{"", 0, false}, {"d", 0, false}, {"14", 0, false}, {"-3d", 0, false}, {"+3d", 0, false}, {"1.5d", 0, false},
		{"-1h", 0, false}, {"14days", 0, false}, {"100001d", 0, false}, {strings.Repeat("1", 40) + "h", 0, false},
	} {
		got, err := domain.ParseLookback(c.in)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("ParseLookback(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		var de *domain.Error
		if !c.ok && (!errors.As(err, &de) || de.Field != "lookback") {
			t.Errorf("ParseLookback(%q) = %v, %v; want an error naming lookback", c.in, got, err)
		}
	}
	for d, want := range map[time.Duration]string{14 * day: "14d", 36 * time.Hour: "36h0m0s", time.Hour: "1h0m0s", 365 * day: "365d"} {
		if got := domain.FormatLookback(d); got != want {
			t.Errorf("FormatLookback(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestSetLookback: the bounds are inclusive, the default counts as the
// window in force, and the event carries whole seconds.
func TestSetLookback(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var s domain.AttributionSettings
	if ev, err := s.SetLookback("shop_a", domain.DefaultLookback, now); ev != nil || err != nil {
		t.Errorf("the default again: %v %v", ev, err)
	}
	for _, d := range []time.Duration{domain.MinLookback, domain.MaxLookback, 14 * 24 * time.Hour} {
		ev, err := s.SetLookback("shop_a", d, now)
		if err != nil || ev == nil || ev.Lookback() != d || ev.ShopID != "shop_a" || !ev.ChangedAt.Equal(now) {
			t.Errorf("SetLookback(%v) = %+v, %v", d, ev, err)
			continue
		}
		s.Apply(ev)
		if again, err := s.SetLookback("shop_a", d, now); again != nil || err != nil {
			t.Errorf("SetLookback(%v) twice: %+v %v", d, again, err)
		}
	}
	for _, d := range []time.Duration{0, -time.Hour, domain.MinLookback - time.Second, domain.MaxLookback + time.Second, time.Hour + time.Nanosecond} {
		if _, err := s.SetLookback("shop_a", d, now); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("SetLookback(%v): %v, want invalid", d, err)
		}
	}
}

// TestStorefrontIdentity: the pixel's customer id (digits or gid) becomes
// the customer id the webhooks derive; the cart gid with its key becomes
// the cart id of the bare cart token; the checkout token its
// CheckoutTokenID; the tokens themselves are not kept; malformed values
// are validation errors naming their field.
func TestStorefrontIdentity(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	base := domain.StorefrontEvent{Type: "page_view", URL: "https://shop.example/", AnonymousID: "visitor-1234"}
	ev := base
	ev.CustomerID, ev.CartToken, ev.CheckoutToken = "gid://shopify/Customer/42", "gid://shopify/Cart/c1-abc?key=k1", "tok-9"
	got, err := domain.RecordStorefrontEvent("shop_a", ev, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.CustomerID != domain.CustomerIDFromExternal("shop_a", "42") || got.CartID != domain.CartIDFromToken("shop_a", "c1-abc") ||
		got.CheckoutTokenID != domain.CheckoutTokenID("shop_a", "tok-9") {
		t.Errorf("identity: %+v", got)
	}
	ev.CustomerID, ev.CartToken = "42", "c1-abc"
	if again, err := domain.RecordStorefrontEvent("shop_a", ev, now); err != nil || again.CustomerID != got.CustomerID || again.CartID != got.CartID {
		t.Errorf("bare ids: %+v %v", again, err)
	}
	if plain, err := domain.RecordStorefrontEvent("shop_a", base, now); err != nil || plain.CustomerID != "" || plain.CartID != "" || plain.CheckoutTokenID != "" {
		t.Errorf("no identity: %+v %v", plain, err)
	}
	for _, c := range []struct {
		field string
		set   func(*domain.StorefrontEvent)
	}{
		{"customer_id", func(e *domain.StorefrontEvent) { e.CustomerID = "abc" }},
		{"customer_id", func(e *domain.StorefrontEvent) { e.CustomerID = "gid://shopify/Customer/" }},
		{"customer_id", func(e *domain.StorefrontEvent) { e.CustomerID = strings.Repeat("1", 21) }},
		{"cart_token", func(e *domain.StorefrontEvent) { e.CartToken = "a b" }},
		{"cart_token", func(e *domain.StorefrontEvent) { e.CartToken = "gid://shopify/Cart/?key=x" }},
		{"checkout_token", func(e *domain.StorefrontEvent) { e.CheckoutToken = strings.Repeat("t", 257) }},
		{"checkout_token", func(e *domain.StorefrontEvent) { e.CheckoutToken = "tok\x00" }},
	} {
		e := base
		c.set(&e)
		_, err := domain.RecordStorefrontEvent("shop_a", e, now)
		var de *domain.Error
		if !errors.As(err, &de) || de.Field != c.field {
			t.Errorf("%+v: %v, want an error naming %s", e, err, c.field)
		}
	}
}

func FuzzParseLookback(f *testing.F) {
	for _, s := range []string{"14d", "36h", "1h30m", "-3d", "", "9999999999999999999d", "1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := domain.ParseLookback(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseLookback(%q) = %v", s, d)
		}
		if back, err := domain.ParseLookback(domain.FormatLookback(d)); err != nil || back != d {
			t.Fatalf("round trip of %q: %v %v", s, back, err)
		}
	})
}

// FuzzStorefrontIdentity: any identity fields give an event or a
// validation error, never a panic, and never keep a raw token.
func FuzzStorefrontIdentity(f *testing.F) {
	f.Add("42", "c1-abc", "tok")
	f.Add("gid://shopify/Customer/7", "gid://shopify/Cart/c1?key=x", "gid://shopify/Checkout/t")
	f.Add("x", "a b", "\x00")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, customer, cart, checkout string) {
		ev, err := domain.RecordStorefrontEvent("shop_a", domain.StorefrontEvent{Type: "page_view", URL: "https://shop.example/",
			AnonymousID: "visitor-1234", CustomerID: customer, CartToken: cart, CheckoutToken: checkout}, now)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("not a validation error: %v", err)
			}
			return
		}
		for _, id := range []string{ev.CustomerID, ev.CartID, ev.CheckoutTokenID} {
			if id != "" && len(id) != 28 {
				t.Fatalf("identity id %q from %q %q %q", id, customer, cart, checkout)
			}
		}
		b, _ := json.Marshal(ev)
		for _, tok := range []string{cart, checkout} {
			if len(tok) >= 12 && strings.Contains(string(b), tok) {
				t.Fatalf("the event keeps the token %q: %s", tok, b)
			}
		}
	})
}
