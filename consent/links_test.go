package consent_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/consent"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func TestLinksRoundTrip(t *testing.T) {
	l := consent.Links{Key: key, BaseURL: "https://cgp.example.com/"}
	c := consent.Claims{ShopID: "shop_1", CustomerID: "cus_AbC", Channel: "email", MessageID: "msg_9"}
	u, err := url.Parse(l.URL(c))
	if err != nil || u.Scheme != "https" || u.Host != "cgp.example.com" || u.Path != "/api/public/unsubscribe" {
		t.Fatalf("URL %v %v", u, err)
	}
	got, err := l.Parse(u.Query().Get("token"))
	if err != nil || got != c {
		t.Fatalf("Parse: %+v %v", got, err)
	}
	// Without a message id.
	c.MessageID = ""
	if got, err := l.Parse(l.Token(c)); err != nil || got != c {
		t.Fatalf("no message: %+v %v", got, err)
	}
}

func TestLinksRejectForgeries(t *testing.T) {
	l := consent.Links{Key: key, BaseURL: "https://cgp.example.com"}
	good := l.Token(consent.Claims{ShopID: "shop_1", CustomerID: "cus_1", Channel: "email", MessageID: "m"})
	other := consent.Links{Key: []byte("another key of thirty-two bytes!")}.Token(consent.Claims{ShopID: "shop_1", CustomerID: "cus_1", Channel: "email"})
	parts := strings.Split(good, ".")
	forgedPayload := consent.Links{Key: key}.Token(consent.Claims{ShopID: "shop_1", CustomerID: "cus_2", Channel: "email"})
	swapped := parts[0] + "." + strings.Split(forgedPayload, ".")[1] + "." + parts[2]
	for name, tok := range map[string]string{
		"empty": "", "garbage": "not a token", "other key": other, "swapped payload": swapped,
		"unknown version": "u2." + parts[1] + "." + parts[2], "no signature": parts[0] + "." + parts[1],
		"bad base64 signature": parts[0] + "." + parts[1] + ".!!!", "truncated signature": good[:len(good)-2],
		"long": strings.Repeat("a", 5000),
	} {
		if _, err := l.Parse(tok); !errors.Is(err, consent.ErrInvalidToken) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := (consent.Links{}).Parse(good); err == nil {
		t.Error("a keyless Links accepted a token")
	}
}

// The token names ids only: nothing of the customer's in clear but them.
func TestTokenCarriesIDsOnly(t *testing.T) {
	l := consent.Links{Key: key}
	tok := l.Token(consent.Claims{ShopID: "shop_1", CustomerID: "cus_1", Channel: "sms", MessageID: "m1"})
	if !strings.HasPrefix(tok, "u1.") {
		t.Fatalf("unversioned token %q", tok)
	}
}

func FuzzParse(f *testing.F) {
	l := consent.Links{Key: key}
	f.Add(l.Token(consent.Claims{ShopID: "shop_1", CustomerID: "cus_1", Channel: "email", MessageID: "m"}))
	f.Add("u1..")
	f.Add("u1.AA.AA")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := l.Parse(tok)
		if err != nil {
			return
		}
		// Whatever parses was signed with the key: its claims make a
		// token that parses to the same claims.
		again, err := l.Parse(l.Token(c))
		if err != nil || again != c {
			t.Fatalf("%q: %+v then %+v %v", tok, c, again, err)
		}
	})
}

func ExampleLinks() {
	l := consent.Links{Key: key, BaseURL: "https://cgp.example.com"}
	link := l.URL(consent.Claims{ShopID: "shop_1", CustomerID: "cus_1", Channel: "email", MessageID: "msg_1"})
	u, _ := url.Parse(link)
	c, err := l.Parse(u.Query().Get("token"))
	fmt.Println(u.Path, c.CustomerID, c.Channel, err)
	// Output: /api/public/unsubscribe cus_1 email <nil>
}
