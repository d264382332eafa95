package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// storefrontClient drives the public surface and the admin API of one
// test server, validating every answer against the OpenAPI document.
type storefrontClient struct {
	t *testing.T
	s *testServer
	v *openapitest.Validator
}

func (c storefrontClient) admin(token, method, path, body string) response {
	c.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token}
	var b []byte
	if body != "" {
		h["Content-Type"], b = "application/json", []byte(body)
	}
	r := do(c.t, method, c.s.base+path, b, h)
	c.v.ValidateResponse(c.t, r.req, r.resp, r.body)
	return r
}

// pixel posts a page view with headers h.
func (c storefrontClient) pixel(h map[string]string) response {
	c.t.Helper()
	h["Content-Type"] = "application/json"
	body := []byte(`{"data":{"attributes":{"type":"page_view","url":"https://www.allow-brand.com/p/mug","anonymous_id":"anon-12345678"}}}`)
	r := do(c.t, http.MethodPost, c.s.base+"/api/public/events", body, h)
	c.v.ValidateResponse(c.t, r.req, r.resp, r.body)
	return r
}

func (c storefrontClient) fromOrigin(origin, shopDomain string) response {
	c.t.Helper()
	return c.pixel(map[string]string{"Origin": origin, "X-Shop-Domain": shopDomain})
}

func (c storefrontClient) preflight(origin string) response {
	c.t.Helper()
	r := do(c.t, http.MethodOptions, c.s.base+"/api/public/events", nil, map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST"})
	c.v.ValidateResponse(c.t, r.req, r.resp, r.body)
	return r
}

func originBody(origin string) string {
	b, _ := json.Marshal(map[string]any{"data": map[string]any{"attributes": map[string]any{"origin": origin}}})
	return string(b)
}

// TestAllowListThroughTheAdminAPI (issue 20, point 4): an origin added
// through the admin API admits the pixel and its preflight from the next
// request on, with the CORS headers; removed, it is refused with 403 and
// no CORS header. Origins the public surface would never admit (http,
// user information, a path, another port, an IP, a local name, a public
// suffix) are refused at the addition with 422 naming origin, and at
// request time with 403. The allow-list is one shop's: another shop's
// X-Shop-Domain with the origin is refused. The CLI twins list, add and
// remove the same list.
func TestAllowListThroughTheAdminAPI(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	c := storefrontClient{t: t, s: s, v: openapitest.NewValidator(t)}
	tn := newTenant(t, dir, "allow.example.com", "agency", "*")
	other := newTenant(t, dir, "allow-other.example.com", "agency", "*")
	const origin = "https://www.allow-brand.com"

	if r := c.admin(tn.token, http.MethodGet, "/api/v1/shop/allowed-origins", ""); r.status != 200 || len(r.json(t)["data"].([]any)) != 0 {
		t.Fatalf("empty allow-list: %d %s", r.status, r.body)
	}
	if r := c.fromOrigin(origin, tn.domain); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("origin not yet allowed: %d %v", r.status, r.header)
	}

	r := c.admin(tn.token, http.MethodPost, "/api/v1/shop/allowed-origins", originBody(origin))
	if r.status != 201 || r.header.Get("X-Event-Position") == "" {
		t.Fatalf("add origin: %d %s", r.status, r.body)
	}
	if a := r.json(t)["data"].(map[string]any); a["id"] != "www.allow-brand.com" || a["attributes"].(map[string]any)["origin"] != origin {
		t.Errorf("added origin: %s", r.body)
	}
	// Admitted from the very next request, with the CORS headers.
	if r := c.fromOrigin(origin, tn.domain); r.status != 202 || r.header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("pixel from the added origin: %d %v %s", r.status, r.header, r.body)
	}
	if r := c.preflight(origin); r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "X-Shop-Domain") ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "X-Public-Key") {
		t.Errorf("preflight from the added origin: %d %v", r.status, r.header)
	}
	// The same origin again (written with :443) changes nothing.
	if r := c.admin(tn.token, http.MethodPost, "/api/v1/shop/allowed-origins", originBody(origin+":443")); r.status != 200 {
		t.Errorf("add the origin again: %d %s", r.status, r.body)
	}
	list := c.admin(tn.token, http.MethodGet, "/api/v1/shop/allowed-origins", "").json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["attributes"].(map[string]any)["host"] != "www.allow-brand.com" {
		t.Errorf("allow-list: %v", list)
	}
	// The allow-list is this shop's only.
	if r := c.fromOrigin(origin, other.domain); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("origin with another shop's domain: %d %v", r.status, r.header)
	}
	if r := c.admin(other.token, http.MethodGet, "/api/v1/shop/allowed-origins", ""); len(r.json(t)["data"].([]any)) != 0 {
		t.Errorf("another shop's allow-list: %s", r.body)
	}

	// Origins the public surface never admits: refused at the addition
	// (422 naming origin) and at request time (403, no CORS header).
	for _, bad := range []string{"http://www.allow-brand.com", "https://x@www.allow-brand.com", "https://x:y@www.allow-brand.com",
		"https://www.allow-brand.com/path", "https://www.allow-brand.com:8443", "https://www.allow-brand.com?q=1",
		"https://127.0.0.1", "https://localhost", "https://shop.local", "https://co.uk", "www.allow-brand.com", "null"} {
		r := c.admin(tn.token, http.MethodPost, "/api/v1/shop/allowed-origins", originBody(bad))
		if r.status != 422 || r.errorCode(t) != "validation_failed" {
			t.Errorf("add %q: %d %s", bad, r.status, r.body)
			continue
		}
		if f := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"]; f != "origin" {
			t.Errorf("add %q: field %v", bad, f)
		}
	}
	for _, bad := range []string{"http://www.allow-brand.com", "https://x@www.allow-brand.com", "https://www.allow-brand.com/p",
		"https://www.allow-brand.com:8443", "https://evil.example.net", "https://evil.www.allow-brand.com"} {
		if r := c.fromOrigin(bad, tn.domain); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("pixel from %s: %d %v", bad, r.status, r.header)
		}
		if r := c.preflight(bad); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s: %d %v", bad, r.status, r.header)
		}
	}
	if r := c.admin(tn.token, http.MethodPost, "/api/v1/shop/allowed-origins", `{"data":{"attributes":{}}}`); r.status != 422 {
		t.Errorf("no origin: %d %s", r.status, r.body)
	}

	// Removal: 204, then the origin is refused without CORS headers.
	if r := c.admin(tn.token, http.MethodDelete, "/api/v1/shop/allowed-origins/www.allow-brand.com", ""); r.status != 204 {
		t.Fatalf("remove origin: %d %s", r.status, r.body)
	}
	// A read by the same token waits for its write (read-your-writes), so
	// the tenancy read model reflects the removal from here on.
	if r := c.admin(tn.token, http.MethodGet, "/api/v1/shop/allowed-origins", ""); len(r.json(t)["data"].([]any)) != 0 {
		t.Fatalf("allow-list after removal: %s", r.body)
	}
	if r := c.fromOrigin(origin, tn.domain); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("pixel from the removed origin: %d %v", r.status, r.header)
	}
	if r := c.preflight(origin); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from the removed origin: %d %v", r.status, r.header)
	}
	if r := c.admin(tn.token, http.MethodDelete, "/api/v1/shop/allowed-origins/www.allow-brand.com", ""); r.status != 404 {
		t.Errorf("remove again: %d %s", r.status, r.body)
	}
	// The shop's own domain stays admitted.
	if r := c.fromOrigin("https://"+tn.domain, tn.domain); r.status != 202 {
		t.Errorf("the shop's own domain: %d %s", r.status, r.body)
	}

	// A token without the settings' scope reads and changes nothing.
	weak := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read")["token"].(string)
	if r := c.admin(weak, http.MethodGet, "/api/v1/shop/allowed-origins", ""); r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Errorf("read without *: %d %s", r.status, r.body)
	}
	if r := c.admin(weak, http.MethodPost, "/api/v1/shop/allowed-origins", originBody(origin)); r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Errorf("add without *: %d %s", r.status, r.body)
	}

	// The CLI twins change the same list.
	add := cli(t, dir, "shops", "origins", "add", "--shop", tn.shopID, "--origin", "https://shop.allow-brand.com")
	if add["host"] != "shop.allow-brand.com" || add["changed"] != true {
		t.Errorf("cli add: %v", add)
	}
	if r := c.fromOrigin("https://shop.allow-brand.com", tn.domain); r.status != 202 ||
		r.header.Get("Access-Control-Allow-Origin") != "https://shop.allow-brand.com" {
		t.Errorf("pixel from the origin the CLI added: %d %v", r.status, r.header)
	}
	got := cli(t, dir, "shops", "origins", "list", "--shop", tn.shopID)["allowed_origins"].([]any)
	if len(got) != 1 || got[0].(map[string]any)["origin"] != "https://shop.allow-brand.com" {
		t.Errorf("cli list: %v", got)
	}
	cli(t, dir, "shops", "origins", "remove", "--shop", tn.shopID, "--origin", "https://shop.allow-brand.com")
	eventually(t, 30*time.Second, "the origin the CLI removed is refused", func() bool {
		return c.fromOrigin("https://shop.allow-brand.com", tn.domain).status == 403
	})
	for _, args := range [][]string{
		{"shops", "origins", "add", "--shop", tn.shopID},
		{"shops", "origins", "add", "--shop", tn.shopID, "--origin", "http://shop.allow-brand.com"},
		{"shops", "origins", "add", "--shop", tn.shopID, "--origin", "https://x@shop.allow-brand.com"},
		{"shops", "origins", "list"},
		{"shops", "origins", "--shop", tn.shopID},
	} {
		if code, stdout, _ := runCLI(append(args, "--data-dir", dir)...); code != 2 || stdout != "" {
			t.Errorf("cgp %s: exit %d %q, want 2", strings.Join(args, " "), code, stdout)
		}
	}
	if code, _, _ := runCLI("shops", "origins", "remove", "--shop", tn.shopID, "--origin", "https://nowhere.allow-brand.com", "--data-dir", dir); code != 1 {
		t.Errorf("cli remove of an origin not on the list: exit %d, want 1", code)
	}
}

// TestPublicKeysThroughTheAdminAPI (issue 20, point 4): a public key
// created through the admin API admits the pixel without an origin, for
// its own shop only; it is listed without its secret; rotated, the new
// secret works and the old one is refused at once (no overlap); revoked,
// it is 401. A public key never reaches the admin API. The CLI twins list,
// rotate and revoke the same keys.
func TestPublicKeysThroughTheAdminAPI(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	c := storefrontClient{t: t, s: s, v: openapitest.NewValidator(t)}
	tn := newTenant(t, dir, "keys.example.com", "agency", "*")
	other := newTenant(t, dir, "keys-other.example.com", "agency", "*")

	r := c.admin(tn.token, http.MethodPost, "/api/v1/public-keys", `{"data":{"attributes":{"environment":"live"}}}`)
	if r.status != 201 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create key: %d %s", r.status, r.body)
	}
	created := r.json(t)["data"].(map[string]any)
	id, key := created["id"].(string), created["attributes"].(map[string]any)["token"].(string)
	if !strings.HasPrefix(id, "pkk_") || !strings.HasPrefix(key, "pk_live_") {
		t.Fatalf("created key: %s", r.body)
	}
	// It works from the very next request, without an origin, for its
	// own shop: the event is recorded for the key's shop even when
	// X-Shop-Domain names another.
	if r := c.pixel(map[string]string{"X-Public-Key": key}); r.status != 202 {
		t.Fatalf("pixel with the new key: %d %s", r.status, r.body)
	}
	if r := c.pixel(map[string]string{"X-Public-Key": key, "X-Shop-Domain": other.domain}); r.status != 202 {
		t.Fatalf("pixel with the key and another shop's domain: %d %s", r.status, r.body)
	}
	for _, e := range readLog(t, dir) {
		if e.Type == "StorefrontEventRecorded" && e.ShopID != tn.shopID {
			t.Errorf("a storefront event admitted by %s's key was recorded for %s", tn.shopID, e.ShopID)
		}
	}

	// Listed without the key.
	r = c.admin(tn.token, http.MethodGet, "/api/v1/public-keys", "")
	keys := r.json(t)["data"].([]any)
	if len(keys) != 1 || strings.Contains(string(r.body), key) {
		t.Fatalf("key list: %s", r.body)
	}
	if a := keys[0].(map[string]any)["attributes"].(map[string]any); a["status"] != "active" || a["last4"] != key[len(key)-4:] || a["rotated_at"] != nil {
		t.Errorf("listed key: %v", a)
	}
	if r := c.admin(other.token, http.MethodGet, "/api/v1/public-keys", ""); len(r.json(t)["data"].([]any)) != 0 {
		t.Errorf("another shop's key list: %s", r.body)
	}

	// Rotation: the new key works, the old one is refused at once.
	r = c.admin(tn.token, http.MethodPost, "/api/v1/public-keys/"+id+"/rotate", "")
	if r.status != 200 {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	rotated := r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	newKey, _ := rotated["token"].(string)
	if !strings.HasPrefix(newKey, "pk_live_") || newKey == key || rotated["rotated_at"] == nil {
		t.Fatalf("rotated key: %s", r.body)
	}
	if r := c.pixel(map[string]string{"X-Public-Key": newKey}); r.status != 202 {
		t.Errorf("pixel with the rotated key: %d %s", r.status, r.body)
	}
	if r := c.pixel(map[string]string{"X-Public-Key": key}); r.status != 401 || r.errorCode(t) != "invalid_token" {
		t.Errorf("pixel with the old key after rotation: %d %s", r.status, r.body)
	}
	// Another shop's token cannot rotate or revoke it.
	for _, m := range []struct{ method, path string }{{http.MethodPost, "/api/v1/public-keys/" + id + "/rotate"}, {http.MethodDelete, "/api/v1/public-keys/" + id}} {
		if r := c.admin(other.token, m.method, m.path, ""); r.status != 404 {
			t.Errorf("%s %s by another shop: %d %s", m.method, m.path, r.status, r.body)
		}
	}

	// A public key never reaches the admin API.
	for _, h := range []map[string]string{{"X-Public-Key": newKey}, {"Authorization": "Bearer " + newKey}} {
		r := do(t, http.MethodGet, s.base+"/api/v1/public-keys", nil, h)
		c.v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != 401 {
			t.Errorf("admin API with a public key %v: %d %s", h, r.status, r.body)
		}
	}

	// Revocation: 401 from then on; the key stays listed, revoked.
	r = c.admin(tn.token, http.MethodDelete, "/api/v1/public-keys/"+id, "")
	if r.status != 200 || r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["status"] != "revoked" {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if r := c.pixel(map[string]string{"X-Public-Key": newKey}); r.status != 401 || r.errorCode(t) != "invalid_token" {
		t.Errorf("pixel with the revoked key: %d %s", r.status, r.body)
	}
	if r := c.admin(tn.token, http.MethodPost, "/api/v1/public-keys/"+id+"/rotate", ""); r.status != 409 {
		t.Errorf("rotate a revoked key: %d %s", r.status, r.body)
	}
	if r := c.admin(tn.token, http.MethodDelete, "/api/v1/public-keys/"+id, ""); r.status != 200 {
		t.Errorf("revoke twice: %d %s", r.status, r.body)
	}
	if r := c.admin(tn.token, http.MethodDelete, "/api/v1/public-keys/pkk_nothing", ""); r.status != 404 {
		t.Errorf("revoke an unknown key: %d %s", r.status, r.body)
	}
	r = c.admin(tn.token, http.MethodGet, "/api/v1/public-keys", "")
	if a := r.json(t)["data"].([]any)[0].(map[string]any)["attributes"].(map[string]any); a["status"] != "revoked" || a["revoked_at"] == nil {
		t.Errorf("listed revoked key: %v", a)
	}
	if r := c.admin(tn.token, http.MethodPost, "/api/v1/public-keys", `{"data":{"attributes":{"environment":"prod"}}}`); r.status != 422 {
		t.Errorf("bad environment: %d %s", r.status, r.body)
	}
	weak := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read")["token"].(string)
	if r := c.admin(weak, http.MethodPost, "/api/v1/public-keys", `{"data":{"attributes":{}}}`); r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Errorf("create without *: %d %s", r.status, r.body)
	}

	// The CLI twins: create, list (no secret), rotate (secret under
	// token), revoke.
	pk := cli(t, dir, "public-keys", "create", "--shop", tn.shopID, "--env", "test")
	cliID, cliKey := pk["id"].(string), pk["token"].(string)
	if r := c.pixel(map[string]string{"X-Public-Key": cliKey}); r.status != 202 {
		t.Errorf("pixel with the CLI's key: %d %s", r.status, r.body)
	}
	listed := cli(t, dir, "public-keys", "list", "--shop", tn.shopID)
	if b, _ := json.Marshal(listed); strings.Contains(string(b), cliKey) || strings.Contains(string(b), newKey) || len(listed["public_keys"].([]any)) != 2 {
		t.Errorf("cli list: %s", b)
	}
	rot := cli(t, dir, "public-keys", "rotate", "--shop", tn.shopID, "--id", cliID)
	cliNew, _ := rot["token"].(string)
	if !strings.HasPrefix(cliNew, "pk_test_") || cliNew == cliKey {
		t.Fatalf("cli rotate: %v", rot)
	}
	eventually(t, 30*time.Second, "the key the CLI rotated away is refused", func() bool {
		return c.pixel(map[string]string{"X-Public-Key": cliKey}).status == 401
	})
	if r := c.pixel(map[string]string{"X-Public-Key": cliNew}); r.status != 202 {
		t.Errorf("pixel with the CLI's rotated key: %d %s", r.status, r.body)
	}
	cli(t, dir, "public-keys", "revoke", "--shop", tn.shopID, "--id", cliID)
	eventually(t, 30*time.Second, "the key the CLI revoked is refused", func() bool {
		return c.pixel(map[string]string{"X-Public-Key": cliNew}).status == 401
	})
	if code, _, _ := runCLI("public-keys", "rotate", "--shop", other.shopID, "--id", cliID, "--data-dir", dir); code != 1 {
		t.Errorf("cli rotate of another shop's key: exit %d, want 1", code)
	}
	for _, args := range [][]string{
		{"public-keys", "rotate", "--shop", tn.shopID},
		{"public-keys", "revoke", "--shop", tn.shopID},
		{"public-keys", "list"},
	} {
		if code, stdout, _ := runCLI(append(args, "--data-dir", dir)...); code != 2 || stdout != "" {
			t.Errorf("cgp %s: exit %d %q, want 2", strings.Join(args, " "), code, stdout)
		}
	}
}
