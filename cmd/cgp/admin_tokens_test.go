package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestAdminTokensPage: issue 22's API tokens page over real HTTP: a token
// made with two scopes is shown once, works on the API, and the list then
// shows its last use and address; `*` needs its confirmation; rotate shows
// the new secret once and stops the old; revoke stops it; a read-only user
// sees no form and is refused a post; the actions are the user's in the
// audit history; the API's own token list and revoke agree.
func TestAdminTokensPage(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "admin-tokens.example.com", "agency", "*")
	owner := signInAs(t, s, dir, tn.accountID, "owner@admin-tokens.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-tokens.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID

	empty := owner.get(t, base+"/tokens")
	pageHas(t, "tokens page", empty, `name="scopes" value="customers:read"`, `name="confirm_all"`, `action="`+base+`/tokens"`)
	checkAdminHeaders(t, "tokens page", empty)

	made := owner.post(t, base+"/tokens", url.Values{"name": {"Warehouse sync"}, "environment": {"live"},
		"scopes": {"customers:read", "orders:read"}, "form_key": {"ui_" + strings.Repeat("a", 32)}})
	token := secretOf(made)
	if made.status != 201 || !strings.HasPrefix(token, "copt_live_") {
		t.Fatalf("create: %d %s", made.status, made.body)
	}
	// The same form posted again (same key) acts once.
	again := owner.post(t, base+"/tokens", url.Values{"name": {"Warehouse sync"}, "environment": {"live"},
		"scopes": {"customers:read", "orders:read"}, "form_key": {"ui_" + strings.Repeat("a", 32)}})
	if strings.Count(string(again.body), "Warehouse sync</td>")+strings.Count(string(again.body), "Warehouse sync<br>") != 1 {
		t.Fatalf("the form sent twice made two tokens: %s", again.body)
	}
	if r := s.get(t, "/api/v1/customers", token); r.status != 200 {
		t.Fatalf("the new token on the API: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/api/v1/campaigns", token); r.status != 403 {
		t.Fatalf("the new token beyond its scopes: %d", r.status)
	}
	list := owner.get(t, base+"/tokens")
	pageHas(t, "the list after a use", list, "Warehouse sync", "customers:read, orders:read", `from <span class="ip">127.0.0.1</span>`)
	if strings.Contains(string(list.body), token) {
		t.Fatal("the token is shown again in the list")
	}

	// "*" without its confirmation: refused, nothing made.
	star := owner.post(t, base+"/tokens", url.Values{"name": {"Everything"}, "scopes": {"*"}})
	if star.status != 422 || secretOf(star) != "" || !strings.Contains(string(star.body), "confirmation") {
		t.Fatalf("* unconfirmed: %d %s", star.status, star.body)
	}
	// An unknown scope: the API's validation, shown on the page, form kept.
	bad := owner.post(t, base+"/tokens", url.Values{"name": {"Kept name"}, "scopes": {"customers:read", "nonsense:read"}})
	if bad.status != 422 || secretOf(bad) != "" || !strings.Contains(string(bad.body), `value="Kept name"`) ||
		!strings.Contains(string(bad.body), "scopes") {
		t.Fatalf("empty name: %d %s", bad.status, bad.body)
	}

	api := cli(t, dir, "tokens", "list", "--shop", tn.shopID)
	id := ""
	for _, x := range api["tokens"].([]any) {
		if m := x.(map[string]any); m["name"] == "Warehouse sync" {
			id = m["id"].(string)
		}
	}
	if id == "" {
		t.Fatalf("cgp tokens list: %v", api)
	}
	rot := owner.post(t, base+"/tokens/"+id+"/rotate", url.Values{})
	rotated := secretOf(rot)
	if rot.status != 200 || rotated == "" || rotated == token {
		t.Fatalf("rotate: %d %s", rot.status, rot.body)
	}
	if r := s.get(t, "/api/v1/customers", token); r.status != 401 {
		t.Fatalf("the old secret after rotation: %d", r.status)
	}
	if r := s.get(t, "/api/v1/customers", rotated); r.status != 200 {
		t.Fatalf("the rotated secret: %d", r.status)
	}

	// The read-only user: no forms, a post refused, nothing revoked.
	ro := reader.get(t, base+"/tokens")
	if ro.status != 403 && ro.status != 200 || strings.Contains(string(ro.body), `name="confirm_all"`) || strings.Contains(string(ro.body), "/revoke") {
		t.Fatalf("read-only tokens page: %d %s", ro.status, ro.body)
	}
	if r := reader.post(t, base+"/tokens", url.Values{"name": {"Sneaky"}, "scopes": {"customers:read"}}); r.status != 403 || secretOf(r) != "" {
		t.Fatalf("read-only create: %d %s", r.status, r.body)
	}
	if r := reader.post(t, base+"/tokens/"+id+"/revoke", url.Values{}); r.status != 403 {
		t.Fatalf("read-only revoke: %d", r.status)
	}

	rev := owner.post(t, base+"/tokens/"+id+"/revoke", url.Values{})
	if rev.status != 303 || !strings.HasPrefix(rev.header.Get("Location"), base+"/tokens?notice=") {
		t.Fatalf("revoke: %d %v", rev.status, rev.header)
	}
	if r := s.get(t, "/api/v1/customers", rotated); r.status != 401 {
		t.Fatalf("the revoked token: %d", r.status)
	}
	pageHas(t, "after revoke", owner.get(t, base+"/tokens"), "revoked ")

	// The API's list agrees, with the last use; never a secret.
	r := s.get(t, "/api/v1/api-keys", tn.token)
	if r.status != 200 || strings.Contains(string(r.body), rotated) || strings.Contains(string(r.body), `"token"`) {
		t.Fatalf("GET /api/v1/api-keys: %d %s", r.status, r.body)
	}
	var seen bool
	for _, x := range r.json(t)["data"].([]any) {
		a := x.(map[string]any)["attributes"].(map[string]any)
		if x.(map[string]any)["id"] == id {
			seen = a["revoked_at"] != nil && a["rotated_at"] != nil && a["last_used_ip"] == "127.0.0.1"
		}
	}
	if !seen {
		t.Fatalf("the API's list: %s", r.body)
	}
	// Every action is the user's in the audit history.
	audit := s.get(t, "/api/v1/audit-events?filter[stream]=token-"+id, tn.token)
	if audit.status != 200 || strings.Count(string(audit.body), `"user:usr_`) < 3 {
		t.Fatalf("audit of the token: %d %s", audit.status, audit.body)
	}
	_ = http.MethodGet
}
