package platformapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/platformapi"
)

const secret = "shpss_0123456789abcdef0123456789abcdef"

func client(t *testing.T, base string, now time.Time) *platformapi.Client {
	t.Helper()
	c, err := platformapi.New(platformapi.Config{BaseURL: base, ClientID: "client-1", ClientSecret: secret,
		ShopSuffix: platformapi.DefaultShopSuffix, HTTP: &http.Client{}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestVerifyRedirect(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := client(t, "https://{shop}", now)
	signed := func(mod func(url.Values)) url.Values {
		q := url.Values{"shop": {"atelier.myshopify.com"}, "code": {"abc"}, "state": {"s&t=a%te"}, "timestamp": {fmt.Sprint(now.Unix())}}
		if mod != nil {
			mod(q)
		}
		c.SignRedirect(q)
		return q
	}
	if shop, err := c.VerifyRedirect(signed(nil)); err != nil || shop != "atelier.myshopify.com" {
		t.Fatalf("a signed redirect: %q %v", shop, err)
	}
	cases := []struct {
		name string
		q    url.Values
		want error
	}{
		{"no hmac", func() url.Values { q := signed(nil); q.Del("hmac"); return q }(), platformapi.ErrBadSignature},
		{"changed code", func() url.Values { q := signed(nil); q.Set("code", "abd"); return q }(), platformapi.ErrBadSignature},
		{"added parameter", func() url.Values { q := signed(nil); q.Set("extra", "1"); return q }(), platformapi.ErrBadSignature},
		{"repeated parameter", func() url.Values { q := signed(nil); q.Add("code", "abc"); return q }(), platformapi.ErrBadSignature},
		{"not hex", func() url.Values { q := signed(nil); q.Set("hmac", "zz"); return q }(), platformapi.ErrBadSignature},
		{"old", signed(func(q url.Values) { q.Set("timestamp", fmt.Sprint(now.Add(-25*time.Hour).Unix())) }), platformapi.ErrStale},
		{"future", signed(func(q url.Values) { q.Set("timestamp", fmt.Sprint(now.Add(25*time.Hour).Unix())) }), platformapi.ErrStale},
		{"no timestamp", signed(func(q url.Values) { q.Del("timestamp") }), platformapi.ErrStale},
		{"foreign domain", signed(func(q url.Values) { q.Set("shop", "evil.example.com") }), platformapi.ErrBadShop},
		{"nested label", signed(func(q url.Values) { q.Set("shop", "a.b.myshopify.com") }), platformapi.ErrBadShop},
		{"upper case", signed(func(q url.Values) { q.Set("shop", "Atelier.myshopify.com") }), platformapi.ErrBadShop},
		{"suffix only", signed(func(q url.Values) { q.Set("shop", "myshopify.com") }), platformapi.ErrBadShop},
		{"with port", signed(func(q url.Values) { q.Set("shop", "atelier.myshopify.com:443") }), platformapi.ErrBadShop},
	}
	for _, tc := range cases {
		if _, err := c.VerifyRedirect(tc.q); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Signed under another secret.
	other, _ := platformapi.New(platformapi.Config{ClientID: "client-1", ClientSecret: "another-secret-of-the-right-length", HTTP: &http.Client{}})
	q := url.Values{"shop": {"atelier.myshopify.com"}, "timestamp": {fmt.Sprint(now.Unix())}}
	other.SignRedirect(q)
	if _, err := c.VerifyRedirect(q); !errors.Is(err, platformapi.ErrBadSignature) {
		t.Fatalf("another app's signature: %v", err)
	}
}

// platform serves the token endpoint and the GraphQL endpoint of one shop.
func platform(t *testing.T, handle func(w http.ResponseWriter, path string, body map[string]any, h http.Header)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s with %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("body %q: %v", b, err)
		}
		handle(w, r.URL.Path, body, r.Header)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTokenExchangeAndRefresh(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	var seen []map[string]any
	srv := platform(t, func(w http.ResponseWriter, path string, body map[string]any, _ http.Header) {
		if path != "/atelier.myshopify.com/admin/oauth/access_token" {
			t.Errorf("path %s", path)
		}
		seen = append(seen, body)
		if body["code"] == "used" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_request","error_description":"The authorization code was not found or was already used"}`)
			return
		}
		fmt.Fprint(w, `{"access_token":"shpat_1","scope":"write_orders,read_customers","expires_in":3600,"refresh_token":"shprt_1","refresh_token_expires_in":7776000}`)
	})
	c := client(t, srv.URL+"/{shop}", now)
	tok, err := c.ExchangeCode(context.Background(), "atelier.myshopify.com", "code-1")
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken != "shpat_1" || tok.RefreshToken != "shprt_1" || !tok.ExpiresAt.Equal(now.Add(time.Hour)) ||
		strings.Join(tok.Scopes, ",") != "write_orders,read_customers" || !tok.RefreshExpiresAt.Equal(now.Add(90*24*time.Hour)) {
		t.Fatalf("token %+v", tok)
	}
	if seen[0]["client_id"] != "client-1" || seen[0]["client_secret"] != secret || seen[0]["code"] != "code-1" || seen[0]["expiring"] != float64(1) {
		t.Fatalf("exchange body %v", seen[0])
	}
	if _, err := c.Refresh(context.Background(), "atelier.myshopify.com", "shprt_1"); err != nil {
		t.Fatal(err)
	}
	if seen[1]["grant_type"] != "refresh_token" || seen[1]["refresh_token"] != "shprt_1" {
		t.Fatalf("refresh body %v", seen[1])
	}
	_, err = c.ExchangeCode(context.Background(), "atelier.myshopify.com", "used")
	var pe *platformapi.Error
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Code != "invalid_request" || pe.Retryable || strings.Contains(err.Error(), secret) {
		t.Fatalf("refused code: %v", err)
	}
	if _, err := c.ExchangeCode(context.Background(), "evil.example.com", "c"); err == nil {
		t.Fatal("a foreign shop reached the network")
	}
}

func TestGraphQLAndWebhookRegistration(t *testing.T) {
	calls := 0
	srv := platform(t, func(w http.ResponseWriter, path string, body map[string]any, h http.Header) {
		calls++
		if path != "/atelier.myshopify.com/admin/api/"+platformapi.DefaultAPIVersion+"/graphql.json" || h.Get("X-Shopify-Access-Token") != "shpat_1" {
			t.Errorf("path %s token %q", path, h.Get("X-Shopify-Access-Token"))
		}
		vars, _ := body["variables"].(map[string]any)
		switch calls {
		case 1:
			sub := vars["webhookSubscription"].(map[string]any)
			if vars["topic"] != "ORDERS_CREATE" || sub["uri"] != "https://cgp.example.com/webhooks/events" || sub["format"] != "JSON" {
				t.Errorf("variables %v", vars)
			}
			fmt.Fprint(w, `{"data":{"webhookSubscriptionCreate":{"webhookSubscription":{"id":"gid://shopify/WebhookSubscription/1"},"userErrors":[]}}}`)
		case 2:
			fmt.Fprint(w, `{"data":{"webhookSubscriptionCreate":{"webhookSubscription":null,"userErrors":[{"field":["webhookSubscription","callbackUrl"],"message":"Address for this topic has already been taken"}]}}}`)
		case 3:
			fmt.Fprint(w, `{"data":{"webhookSubscriptionCreate":{"webhookSubscription":null,"userErrors":[{"field":["topic"],"message":"Topic is not allowed"}]}}}`)
		case 4:
			fmt.Fprint(w, `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}`)
		case 5:
			w.Header().Set("Retry-After", "2.0")
			w.WriteHeader(http.StatusTooManyRequests)
		case 6:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":"[API] Invalid API key or access token"}`)
		default:
			fmt.Fprint(w, `not json`)
		}
	})
	c := client(t, srv.URL+"/{shop}", time.Now())
	ctx := context.Background()
	reg := func() (string, error) {
		return c.RegisterWebhook(ctx, "atelier.myshopify.com", "shpat_1", "orders/create", "https://cgp.example.com/webhooks/events")
	}
	if id, err := reg(); err != nil || id != "gid://shopify/WebhookSubscription/1" {
		t.Fatalf("create: %q %v", id, err)
	}
	if id, err := reg(); err != nil || id != "" {
		t.Fatalf("already registered: %q %v", id, err)
	}
	var pe *platformapi.Error
	if _, err := reg(); !errors.As(err, &pe) || len(pe.UserErrors) != 1 || pe.UserErrors[0].Message != "Topic is not allowed" {
		t.Fatalf("userErrors: %v", err)
	}
	if _, err := reg(); !errors.As(err, &pe) || pe.Code != "THROTTLED" || !pe.Retryable {
		t.Fatalf("throttled: %v", err)
	}
	if _, err := reg(); !errors.As(err, &pe) || pe.Status != 429 || !pe.Retryable || pe.RetryAfter != 2*time.Second {
		t.Fatalf("429: %v", err)
	}
	if _, err := reg(); !errors.Is(err, platformapi.ErrUnauthorized) {
		t.Fatalf("401: %v", err)
	}
	if _, err := reg(); !errors.As(err, &pe) || pe.Code != "bad_response" {
		t.Fatalf("not json: %v", err)
	}
}

func TestAuthorizeURL(t *testing.T) {
	c := client(t, "https://{shop}", time.Now())
	u, err := c.AuthorizeURL("atelier.myshopify.com", []string{"read_orders", "write_products"}, "https://cgp.example.com/auth/callback", "st")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := url.Parse(u)
	q := p.Query()
	if p.Host != "atelier.myshopify.com" || p.Path != "/admin/oauth/authorize" || q.Get("client_id") != "client-1" ||
		q.Get("scope") != "read_orders,write_products" || q.Get("redirect_uri") != "https://cgp.example.com/auth/callback" || q.Get("state") != "st" {
		t.Fatalf("authorize URL %s", u)
	}
	if _, err := c.AuthorizeURL("127.0.0.1", nil, "x", "y"); err == nil {
		t.Fatal("an address as shop")
	}
}

// FuzzVerifyRedirect: any query string gives an answer, never a panic,
// and only a query signed with the secret verifies.
func FuzzVerifyRedirect(f *testing.F) {
	c, err := platformapi.New(platformapi.Config{ClientID: "c", ClientSecret: secret, ShopSuffix: platformapi.DefaultShopSuffix,
		HTTP: &http.Client{}, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("shop=a.myshopify.com&timestamp=1800000000&hmac=00")
	f.Add("hmac=&hmac=x&shop=%00")
	f.Add("code=a%26b&shop=a.myshopify.com&state=x%3Dy&timestamp=1800000000&hmac=abcdef")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		shop, err := c.VerifyRedirect(q)
		if err == nil {
			// It verified: it must be signed as SignRedirect signs it.
			again := url.Values{}
			for k, v := range q {
				again[k] = v
			}
			c.SignRedirect(again)
			if again.Get("hmac") != q.Get("hmac") || !c.ValidShop(shop) {
				t.Fatalf("%q verified without the signature", raw)
			}
		}
	})
}
