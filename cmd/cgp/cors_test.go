package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestPublicCORSOriginRule (point 12 of issue 14): for a shop whose
// allow-list names shop.cors-brand.com, only https origins whose host is
// exactly an allowed domain pass, on the pixel endpoint and its
// preflight: plain http, user information, another port, a path or a
// look-alike host are refused with 403 and no CORS header. An explicit
// :443 is the same origin as none and passes.
func TestPublicCORSOriginRule(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	acc := cli(t, dir, "accounts", "create", "--name", "Cors Co", "--plan", "agency")
	cli(t, dir, "shops", "create", "--account", acc["id"].(string), "--domain", "cors.example.com", "--plan", "growth",
		"--webhook-secret", "cors-secret-0123456789", "--cors-allow-list", "shop.cors-brand.com")
	body := []byte(`{"data":{"attributes":{"type":"page_view","url":"https://shop.cors-brand.com/p/mug","anonymous_id":"anon-12345678"}}}`)
	post := func(origin string) response {
		r := do(t, http.MethodPost, s.base+"/api/public/events", body,
			map[string]string{"Content-Type": "application/json", "Origin": origin, "X-Shop-Domain": "cors.example.com"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	pre := func(origin string) response {
		r := do(t, http.MethodOptions, s.base+"/api/public/events", nil, map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	eventually(t, 30*time.Second, "the shop's allow-list is projected", func() bool { return post("https://shop.cors-brand.com").status == 202 })
	for _, origin := range []string{"https://shop.cors-brand.com", "https://shop.cors-brand.com:443", "https://SHOP.cors-brand.com", "https://cors.example.com"} {
		if r := post(origin); r.status != 202 || r.header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("POST from %s: %d %v %s", origin, r.status, r.header, r.body)
		}
		if r := pre(origin); r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("preflight from %s: %d %v", origin, r.status, r.header)
		}
	}
	for _, origin := range []string{"http://shop.cors-brand.com", "https://x@shop.cors-brand.com", "https://x:y@shop.cors-brand.com",
		"https://shop.cors-brand.com:8443", "https://shop.cors-brand.com/", "https://shop.cors-brand.com.", "https://evil.shop.cors-brand.com",
		"https://shop.cors-brand.com.evil.net", "http://cors.example.com", "null"} {
		if r := post(origin); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("POST from %s: %d %v, want 403 without CORS headers", origin, r.status, r.header)
		}
		if r := pre(origin); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s: %d %v, want 403", origin, r.status, r.header)
		}
	}
}
