package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

func TestStorefrontPixelCORSAndPublicKeys(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	acc := cli(t, dir, "accounts", "create", "--name", "Pixel Co", "--plan", "agency")
	shop := cli(t, dir, "shops", "create", "--account", acc["id"].(string), "--domain", "pixel.example.com", "--plan", "growth",
		"--webhook-secret", "pixel-secret-0123456789", "--cors-allow-list", "www.pixel-brand.com,shop.pixel-brand.com")
	pk := cli(t, dir, "public-keys", "create", "--shop", shop["id"].(string))
	shopID := shop["id"].(string)
	key := pk["token"].(string)
	pos := fmtAny(pk["position"])
	body := `{"data":{"attributes":{"type":"page_view","url":"https://www.pixel-brand.com/p/mug?utm_source=google&utm_medium=cpc&gclid=G1&email=jane@example.com","referrer":"https://www.google.com/search?q=mug","anonymous_id":"anon-12345678"}}}`
	post := func(h map[string]string) response {
		h["Content-Type"] = "application/json"
		h["X-Wait-For-Position"] = pos
		r := do(t, http.MethodPost, s.base+"/api/public/events", []byte(body), h)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	// The shop's own domain and its allow-list are admitted, with CORS
	// headers for the origin.
	for _, origin := range []string{"https://www.pixel-brand.com", "https://pixel.example.com"} {
		r := post(map[string]string{"Origin": origin, "X-Shop-Domain": "pixel.example.com"})
		if r.status != 202 || r.header.Get("Access-Control-Allow-Origin") != origin {
			t.Fatalf("origin %s: %d %v %s", origin, r.status, r.header, r.body)
		}
	}
	// Another origin, no origin, or an unknown shop: refused.
	for name, h := range map[string]map[string]string{
		"foreign origin": {"Origin": "https://evil.example.net", "X-Shop-Domain": "pixel.example.com"},
		"no origin":      {"X-Shop-Domain": "pixel.example.com"},
		"unknown shop":   {"Origin": "https://www.pixel-brand.com", "X-Shop-Domain": "nobody.example.com"},
	} {
		if r := post(h); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: %d %v", name, r.status, r.header)
		}
	}
	if r := post(map[string]string{"Origin": "https://www.pixel-brand.com"}); r.status != 400 {
		t.Errorf("no X-Shop-Domain and no key: %d", r.status)
	}
	// A public key admits a headless storefront from anywhere; a wrong one
	// is 401.
	if r := post(map[string]string{"X-Public-Key": key}); r.status != 202 {
		t.Fatalf("public key: %d %s", r.status, r.body)
	}
	if r := post(map[string]string{"X-Public-Key": "pk_live_" + strings.Repeat("Q", 32)}); r.status != 401 || r.errorCode(t) != "invalid_token" {
		t.Errorf("unknown public key: %d %s", r.status, r.body)
	}
	// An admin token is not a public key.
	if r := post(map[string]string{"X-Public-Key": "copt_live_" + strings.Repeat("Q", 32)}); r.status != 401 {
		t.Errorf("admin token as public key: %d", r.status)
	}
	// Preflight per origin.
	pre := func(origin string) response {
		r := do(t, http.MethodOptions, s.base+"/api/public/events", nil, map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	if r := pre("https://shop.pixel-brand.com"); r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://shop.pixel-brand.com" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "X-Shop-Domain") {
		t.Errorf("preflight allowed origin: %d %v", r.status, r.header)
	}
	if r := pre("https://evil.example.net"); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight foreign origin: %d %v", r.status, r.header)
	}
	// Only attribution data is kept: no e-mail from the query string.
	var recorded int
	for _, e := range readLog(t, dir) {
		if e.Type == "StorefrontEventRecorded" {
			recorded++
			if !strings.HasPrefix(e.StreamID, "visitor-") || e.ShopID != shopID {
				t.Errorf("stored as %s for %s", e.StreamID, e.ShopID)
			}
		}
	}
	if recorded != 3 {
		t.Fatalf("%d storefront events recorded, want 3", recorded)
	}
	ev, err := domain.RecordStorefrontEvent(shopID, domain.StorefrontEvent{Type: "page_view", AnonymousID: "anon-12345678",
		URL: "https://www.pixel-brand.com/p/mug?utm_source=google&gclid=G1&email=jane@example.com"}, timeNow())
	if err != nil || ev.Params["email"] != "" || ev.Params["gclid"] != "G1" || ev.Params["utm_source"] != "google" {
		t.Fatalf("kept params %v, %v", ev.Params, err)
	}
}
