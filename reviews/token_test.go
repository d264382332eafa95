package reviews_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/reviews"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func TestTokenRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tok := reviews.Tokens{Key: key}
	c := reviews.Claims{ShopID: "shop_1", CustomerID: "cus_1", OrderID: "ord_1", Expires: now.Add(reviews.TokenLifetime)}
	s := tok.Token(c)
	got, err := tok.Parse(s, now)
	if err != nil || got != c {
		t.Fatalf("parse: %+v %v, want %+v", got, err, c)
	}
	if _, err := tok.Parse(s, c.Expires); err != reviews.ErrInvalidToken {
		t.Errorf("expired token: %v", err)
	}
	if _, err := (reviews.Tokens{Key: []byte("another key of thirty-two bytes!")}).Parse(s, now); err != reviews.ErrInvalidToken {
		t.Errorf("foreign key: %v", err)
	}
	parts := strings.Split(s, ".")
	for name, bad := range map[string]string{
		"empty":            "",
		"version":          "r2." + parts[1] + "." + parts[2],
		"payload changed":  parts[0] + "." + parts[1] + "A." + parts[2],
		"signature":        parts[0] + "." + parts[1] + ".AAAA",
		"two parts":        parts[0] + "." + parts[1],
		"too long":         s + strings.Repeat("A", 2048),
		"unsigned payload": tok.Token(reviews.Claims{ShopID: "shop_1", OrderID: "ord_1", Expires: c.Expires}),
	} {
		if _, err := tok.Parse(bad, now); err != reviews.ErrInvalidToken {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tok := reviews.Tokens{Key: key}
	f.Add(tok.Token(reviews.Claims{ShopID: "shop_1", CustomerID: "cus_1", OrderID: "ord_1", Expires: now.Add(time.Hour)}))
	f.Add("r1..")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := tok.Parse(s, now)
		if err != nil {
			return
		}
		if c.ShopID == "" || c.CustomerID == "" || c.OrderID == "" || !now.Before(c.Expires) {
			t.Fatalf("accepted %q with claims %+v", s, c)
		}
		if again := tok.Token(c); again != s {
			if _, err := tok.Parse(again, now); err != nil {
				t.Fatalf("re-signed claims of %q do not parse: %v", s, err)
			}
		}
	})
}
