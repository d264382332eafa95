package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// imgWriteWarning is the mint form's images:write warning element, with
// its hidden attribute when it is hidden.
var imgWriteWarning = regexp.MustCompile(`<p id="imgwrite-warning" class="warning"[^>]*>`)

// warningHidden reports whether the page's images:write warning is hidden
// (it fails the test when the page has none).
func warningHidden(t *testing.T, what string, r response) bool {
	t.Helper()
	m := imgWriteWarning.Find(r.body)
	if m == nil {
		t.Fatalf("%s: no images:write warning in\n%s", what, r.body)
	}
	return strings.Contains(string(m), " hidden")
}

// TestAdminImageKeys: issue 22's image-API keys page over real HTTP (rule
// 6 of the image-API scopes): the mint form defaults to the read-only
// scopes, warns on images:write and offers no "*"; a key minted through
// it is shown once and works on the image API; the list shows stored
// scopes, and "no scopes recorded: unrestricted" for a legacy key; a
// read-only user's post is refused and mints nothing; the API's own
// /api/v1/image-keys agrees.
func TestAdminImageKeys(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "admin-imagekeys.example.com", "agency", "*")
	owner := signInAs(t, s, dir, tn.accountID, "owner@admin-imagekeys.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-imagekeys.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID

	empty := owner.get(t, base+"/image-keys")
	pageHas(t, "image keys page", empty, "No image-API key yet.", `action="`+base+`/image-keys"`,
		`name="scopes" value="usage:read" checked>`, `name="scopes" value="images:read" checked>`,
		`name="scopes" value="images:write" data-warn="imgwrite-warning">`)
	checkAdminHeaders(t, "image keys page", empty)
	if strings.Contains(string(empty.body), `value="*"`) {
		t.Fatal("the mint form offers *")
	}
	if !warningHidden(t, "fresh form", empty) {
		t.Fatal("the images:write warning shows before images:write is ticked")
	}

	// The default scopes: the key is shown once and reads the usage.
	made := owner.post(t, base+"/image-keys", url.Values{"scopes": {"usage:read", "images:read"}, "form_key": {"ui_" + strings.Repeat("b", 32)}})
	key := secretOf(made)
	if made.status != 201 || !strings.HasPrefix(key, "cik_live_") || strings.Contains(string(made.body), "key-warning") {
		t.Fatalf("mint: %d %s", made.status, made.body)
	}
	pageHas(t, "after mint", made, "usage:read, images:read")
	// The same form posted again (same key) mints once.
	again := owner.post(t, base+"/image-keys", url.Values{"scopes": {"usage:read", "images:read"}, "form_key": {"ui_" + strings.Repeat("b", 32)}})
	if strings.Count(string(again.body), `<tr data-key="`) != 1 {
		t.Fatalf("the form sent twice minted two keys: %s", again.body)
	}
	if r := s.get(t, "/api/v1/usage", "", "X-API-Key", key); r.status != 200 {
		t.Fatalf("the new key on the image API: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodPost, s.base+"/api/v1/images/upscales", []byte(`{}`), map[string]string{"X-API-Key": key, "Content-Type": "application/json"}); r.status != 403 {
		t.Fatalf("the read-only key ran an image operation: %d %s", r.status, r.body)
	}
	reload := owner.get(t, base+"/image-keys")
	if secretOf(reload) != "" || strings.Contains(string(reload.body), key) {
		t.Fatal("the key is shown again on reload")
	}
	pageHas(t, "list after mint", reload, "usage:read, images:read")

	// images:write: the warning shows beside the key, and on a kept form.
	w := owner.post(t, base+"/image-keys", url.Values{"scopes": {"usage:read", "images:write"}})
	if w.status != 201 || secretOf(w) == "" {
		t.Fatalf("mint with images:write: %d %s", w.status, w.body)
	}
	pageHas(t, "the writer key's warning", w, `<p class="warning key-warning" role="alert">`, "spend the shop&#39;s AI credits")
	kept := owner.post(t, base+"/image-keys", url.Values{"scopes": {"images:write", "*"}})
	if kept.status != 422 || secretOf(kept) != "" || warningHidden(t, "kept form with images:write", kept) {
		t.Fatalf("* through the form: %d %s", kept.status, kept.body)
	}
	if r := owner.post(t, base+"/image-keys", url.Values{}); r.status != 422 || secretOf(r) != "" {
		t.Fatalf("no scope: %d %s", r.status, r.body)
	}

	// A key from before scopes: no scopes recorded, unrestricted.
	sum := sha256.Sum256([]byte("legacy-admin-image-key-0001"))
	imported := cli(t, dir, "image-keys", "import", "--shop", tn.shopID, "--sha256", hex.EncodeToString(sum[:]))
	var legacy response
	eventually(t, 30*time.Second, "the imported key listed", func() bool {
		legacy = owner.get(t, base+"/image-keys")
		return strings.Contains(string(legacy.body), imported["id"].(string))
	})
	pageHas(t, "legacy key", legacy, "<strong>no scopes recorded: unrestricted</strong>", "imported from before scopes")

	// Revoke the first key through the page: it stops at once; a
	// read-only user cannot revoke.
	firstID := strings.TrimSpace(between(string(reload.body), `<tr data-key="`, `"`))
	if r := reader.post(t, base+"/image-keys/"+firstID+"/revoke", url.Values{}); r.status != 403 {
		t.Fatalf("read-only revoke: %d", r.status)
	}
	rev := owner.post(t, base+"/image-keys/"+firstID+"/revoke", url.Values{})
	if rev.status != 303 || !strings.HasPrefix(rev.header.Get("Location"), base+"/image-keys?notice=") {
		t.Fatalf("revoke: %d %v", rev.status, rev.header)
	}
	if r := s.get(t, "/api/v1/usage", "", "X-API-Key", key); r.status != 401 {
		t.Fatalf("the revoked key: %d", r.status)
	}
	pageHas(t, "after revoke", owner.get(t, base+"/image-keys"), "revoked ")

	// The read-only user: no form, a post refused, nothing minted.
	ro := reader.get(t, base+"/image-keys")
	if ro.status != 200 || strings.Contains(string(ro.body), `name="scopes"`) || !strings.Contains(string(ro.body), "Your role (read-only) cannot see") {
		t.Fatalf("read-only image keys page: %d %s", ro.status, ro.body)
	}
	if r := reader.post(t, base+"/image-keys", url.Values{"scopes": {"usage:read"}}); r.status != 403 || secretOf(r) != "" {
		t.Fatalf("read-only mint: %d %s", r.status, r.body)
	}

	// The API's list agrees: three keys, never a secret; the minted ones
	// by the user in the audit history.
	r := s.get(t, "/api/v1/image-keys", tn.token)
	if r.status != 200 || strings.Contains(string(r.body), key) || strings.Contains(string(r.body), `"token"`) ||
		strings.Contains(string(r.body), hex.EncodeToString(sum[:])) {
		t.Fatalf("GET /api/v1/image-keys: %d %s", r.status, r.body)
	}
	if n := len(r.json(t)["data"].([]any)); n != 3 {
		t.Fatalf("the API lists %d keys, want 3 (the read-only user minted nothing): %s", n, r.body)
	}
	id := regexp.MustCompile(`"id":"(cik_id_[^"]+)"`).FindAllStringSubmatch(string(r.body), -1)
	audit := s.get(t, "/api/v1/audit-events?filter[stream]=imagekey-"+id[len(id)-1][1], tn.token)
	if audit.status != 200 || !strings.Contains(string(audit.body), `"user:usr_`) {
		t.Fatalf("audit of the first key: %d %s", audit.status, audit.body)
	}
}

// TestAdminImageKeysAPI: GET and POST /api/v1/image-keys over real HTTP,
// validated against the OpenAPI document.
func TestAdminImageKeysAPI(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "api-imagekeys.example.com", "agency", "*")
	narrow := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read")["token"].(string)
	v := openapitest.NewValidator(t)
	send := func(method, path, token, body string, extra ...string) response {
		t.Helper()
		h := map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}
		for i := 0; i+1 < len(extra); i += 2 {
			h[extra[i]] = extra[i+1]
		}
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		r := do(t, method, s.base+path, b, h)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}

	def := send(http.MethodPost, "/api/v1/image-keys", tn.token, `{"data":{"attributes":{}}}`, "Idempotency-Key", "mint-default-1")
	if def.status != 201 {
		t.Fatalf("mint default: %d %s", def.status, def.body)
	}
	a := def.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	if fmt.Sprint(a["scopes"]) != "[usage:read images:read]" || a["warning"] != nil || !strings.HasPrefix(a["token"].(string), "cik_live_") {
		t.Fatalf("the default mint: %s", def.body)
	}
	if again := send(http.MethodPost, "/api/v1/image-keys", tn.token, `{"data":{"attributes":{}}}`, "Idempotency-Key", "mint-default-1"); string(again.body) != string(def.body) {
		t.Fatalf("the same Idempotency-Key minted again: %s", again.body)
	}
	wr := send(http.MethodPost, "/api/v1/image-keys", tn.token, `{"data":{"attributes":{"scopes":["images:write"]}}}`)
	wa := wr.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	if wr.status != 201 || fmt.Sprint(wa["scopes"]) != "[images:read images:write]" || wa["warning"] == nil {
		t.Fatalf("mint images:write: %d %s", wr.status, wr.body)
	}
	if r := send(http.MethodPost, "/api/v1/image-keys", tn.token, `{"data":{"attributes":{"scopes":["images:delete"]}}}`); r.status != 422 || !strings.Contains(string(r.body), "scopes") {
		t.Fatalf("unknown scope: %d %s", r.status, r.body)
	}
	if r := send(http.MethodPost, "/api/v1/image-keys", narrow, `{"data":{"attributes":{}}}`); r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Fatalf("mint without *: %d %s", r.status, r.body)
	}
	if r := send(http.MethodGet, "/api/v1/image-keys", narrow, ""); r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Fatalf("list without *: %d %s", r.status, r.body)
	}
	list := send(http.MethodGet, "/api/v1/image-keys", tn.token, "")
	if list.status != 200 || strings.Contains(string(list.body), a["token"].(string)) || strings.Contains(string(list.body), `"token"`) {
		t.Fatalf("list: %d %s", list.status, list.body)
	}
	keys := list.json(t)["data"].([]any)
	if len(keys) != 2 || keys[0].(map[string]any)["id"] != wr.json(t)["data"].(map[string]any)["id"] {
		t.Fatalf("the list, newest first: %s", list.body)
	}

	// Revoke: 204, the key refused at once, 204 again, another shop's or
	// an unknown key 404, a token without * 403; the list says revoked.
	id := def.json(t)["data"].(map[string]any)["id"].(string)
	if r := send(http.MethodDelete, "/api/v1/image-keys/"+id, narrow, ""); r.status != 403 {
		t.Fatalf("revoke without *: %d", r.status)
	}
	if r := send(http.MethodDelete, "/api/v1/image-keys/"+id, tn.token, ""); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/api/v1/usage", "", "X-API-Key", a["token"].(string)); r.status != 401 {
		t.Fatalf("the revoked key: %d", r.status)
	}
	if r := send(http.MethodDelete, "/api/v1/image-keys/"+id, tn.token, ""); r.status != 204 {
		t.Fatalf("revoke again: %d", r.status)
	}
	other := newTenant(t, dir, "imagekeys-api-other.example.com", "agency", "*")
	for _, tc := range []struct{ token, id string }{{other.token, id}, {tn.token, "cik_id_doesnotexist"}} {
		if r := send(http.MethodDelete, "/api/v1/image-keys/"+tc.id, tc.token, ""); r.status != 404 {
			t.Fatalf("revoke %s: %d %s", tc.id, r.status, r.body)
		}
	}
	// The CLI revokes the writer key.
	wid := wr.json(t)["data"].(map[string]any)["id"].(string)
	out := cli(t, dir, "image-keys", "revoke", "--shop", tn.shopID, "--key-id", wid)
	after := send(http.MethodGet, "/api/v1/image-keys", tn.token, "", "X-Wait-For-Position", fmt.Sprint(out["position"]))
	for _, k := range after.json(t)["data"].([]any) {
		if k.(map[string]any)["attributes"].(map[string]any)["revoked_at"] == nil {
			t.Fatalf("a key not revoked in the list: %s", after.body)
		}
	}
	if r := s.get(t, "/api/v1/usage", "", "X-API-Key", wa["token"].(string)); r.status != 401 {
		t.Fatalf("the key revoked by the CLI: %d", r.status)
	}
}

// between returns the text of s after the first start, up to end.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}

// TestAdminUsagePage: issue 22's usage and AI credits page renders GET
// /api/v1/usage for any role: plan, period, requests against the rate
// limit, the AI credits and the image operations per kind.
func TestAdminUsagePage(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "admin-usage.example.com", "agency", "*")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-usage.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID
	if r := s.get(t, "/api/v1/customers", tn.token); r.status != 200 {
		t.Fatalf("a request to count: %d", r.status)
	}
	api := s.get(t, "/api/v1/usage", tn.token).json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	credits := api["ai_credits"].(map[string]any)

	p := reader.get(t, base+"/usage")
	checkAdminHeaders(t, "usage page", p)
	pageHas(t, "usage page", p, `<dd class="plan-name">agency</dd>`, api["period"].(string),
		fmt.Sprintf(`<td class="quota">%v</td>`, credits["quota"]), fmt.Sprintf(`<td class="remaining">%v</td>`, credits["remaining"]),
		`<td class="used">0</td>`, `<td class="reserved">0</td>`, "requests a minute per token", "Background removals",
		`<td class="total">0</td>`, "<caption>Admin API requests per token</caption>")
	byToken := api["api_requests"].(map[string]any)["by_token"].([]any)
	if len(byToken) == 0 {
		t.Fatalf("the API counts no request: %v", api)
	}
	pageHas(t, "per-token requests", p, "<code>"+byToken[0].(map[string]any)["token_id"].(string)+"</code>")
	// The operator's budget for the shop shows as soon as it is projected,
	// a large one as a whole number.
	cli(t, dir, "shops", "credits", "--shop", tn.shopID, "--monthly", "1000000")
	eventually(t, 30*time.Second, "the new budget on the page", func() bool {
		return strings.Contains(string(reader.get(t, base+"/usage").body), `<td class="quota">1000000</td>`)
	})
	past := reader.get(t, base+"/usage?period=2001-02")
	pageHas(t, "a past period", past, "2001-02")
	bad := reader.get(t, base+"/usage?period=tomorrow")
	if bad.status != 400 || !strings.Contains(string(bad.body), `role="alert"`) {
		t.Fatalf("a bad period: %d %s", bad.status, bad.body)
	}
}
