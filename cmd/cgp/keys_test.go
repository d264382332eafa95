package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// Every admin operation of the OpenAPI document is called with a token of
// each scope (and *): it is allowed exactly when the scope grants the
// operation's x-required-scope, and denied with 403 scope_required naming
// that scope otherwise. No route is reachable without its scope.
func TestRouteScopeWalk(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	base := newTenant(t, dir, "walk.example.com", "agency", "*")
	waitForToken(t, s, base)
	w := s.webhook(t, base, "customers/create", "dlv-walk", customerPayload(1, "w@example.com", 1, "1.00", "2026-10-01T10:00:00Z"))
	customerID := domain.CustomerIDFromExternal(base.shopID, "1")
	tokens := map[domain.Scope]string{domain.ScopeAll: base.token}
	var last tenant
	for _, sc := range domain.AdminScopes() {
		tok := cli(t, dir, "tokens", "create", "--shop", base.shopID, "--scopes", string(sc))
		tokens[sc] = tok["token"].(string)
		last = tenant{token: tokens[sc], position: uint64(tok["position"].(float64))}
	}
	waitForToken(t, s, last)
	bodies := map[string]string{
		"PATCH /api/v1/customers/{customer_id}": `{"data":{"attributes":{"tags":["walk"]}}}`,
		"POST /api/v1/api-keys":                 `{"data":{"attributes":{"shop_id":"` + base.shopID + `","scopes":["customers:read"]}}}`,
		"POST /api/v1/webhook-subscriptions":    `{"data":{"attributes":{"url":"https://hooks.walk.example.com/","event_types":["*"]}}}`,
		// The order actions judge the order (404 here) before the
		// platform session: orders:write reaches them, nothing else does.
		"POST /api/v1/orders/{id}/cancel":  `{"data":{"attributes":{"reason":"OTHER"}}}`,
		"POST /api/v1/orders/{id}/refunds": `{"data":{"attributes":{"amount":"1.00"}}}`,
	}
	doc := openapitest.Document(t)
	walked := 0
	var ordersWrite []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			required, _ := op.Extensions["x-required-scope"].(string)
			if required == "" || op.Security == nil || len(*op.Security) == 0 {
				continue
			}
			if _, bearer := (*op.Security)[0]["bearerToken"]; !bearer {
				continue // image-API key operations: TestImageCreditsAndAccess walks their scopes
			}
			walked++
			if required == string(domain.ScopeOrdersWrite) {
				ordersWrite = append(ordersWrite, method+" "+path)
			}
			url := s.base + strings.NewReplacer("{customer_id}", customerID, "{id}", "tok_doesnotexist").Replace(path)
			for granted, tok := range tokens {
				h := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json", "X-Wait-For-Position": w.position(t)}
				if method == http.MethodGet {
					delete(h, "Content-Type")
				}
				r := do(t, method, url, []byte(bodies[method+" "+path]), h)
				allowed := required == "any" || (required != "master" && domain.Grants([]domain.Scope{granted}, domain.Scope(required)))
				switch {
				case allowed && (r.status == 401 || r.status == 403):
					t.Errorf("%s %s with %s: %d %s", method, path, granted, r.status, r.body)
				case !allowed && (r.status != 403 || r.errorCode(t) != "scope_required"):
					t.Errorf("%s %s with %s: %d %s, want 403 scope_required", method, path, granted, r.status, r.body)
				case allowed && strings.HasPrefix(path, "/api/v1/orders/{id}/") && r.status != http.StatusNotFound:
					t.Errorf("%s %s with %s: %d %s, want 404 for an unknown order", method, path, granted, r.status, r.body)
				case !allowed && required != "master":
					if got := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["required_scope"]; got != required {
						t.Errorf("%s %s: required_scope %v, want %s", method, path, got, required)
					}
				}
			}
		}
	}
	if walked < 6 {
		t.Fatalf("walked only %d admin operations", walked)
	}
	// orders:write gates exactly the order actions.
	slices.Sort(ordersWrite)
	if want := []string{"POST /api/v1/orders/{id}/cancel", "POST /api/v1/orders/{id}/refunds"}; !slices.Equal(ordersWrite, want) {
		t.Errorf("operations requiring orders:write: %v, want %v", ordersWrite, want)
	}
}

func TestPlansAndCredentialKinds(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "plans.example.com", "growth", "customers:read")
	waitForToken(t, s, tn)
	if r := s.get(t, "/api/v1/customers", tn.token); r.status != 403 || r.errorCode(t) != "plan_required" {
		t.Fatalf("growth plan: %d %s", r.status, r.body)
	}
	cli(t, dir, "shops", "set-plan", "--shop", tn.shopID, "--plan", "enterprise")
	eventually(t, 5*time.Second, "plan change applied", func() bool {
		return s.get(t, "/api/v1/customers", tn.token).status == 200
	})
	r := s.get(t, "/api/v1/customers", tn.token)
	if r.header.Get("X-RateLimit-Limit") == "" || r.header.Get("X-RateLimit-Remaining") == "" || r.header.Get("X-RateLimit-Reset") == "" {
		t.Errorf("rate-limit headers missing: %v", r.header)
	}
	cli(t, dir, "shops", "set-plan", "--shop", tn.shopID, "--plan", "pro_plus")
	eventually(t, 5*time.Second, "downgrade applied", func() bool {
		return s.get(t, "/api/v1/customers", tn.token).status == 403
	})

	// A public key never opens the admin API.
	pk := cli(t, dir, "public-keys", "create", "--shop", tn.shopID)["token"].(string)
	if !strings.HasPrefix(pk, "pk_live_") {
		t.Fatalf("public key %q", pk)
	}
	if r := s.get(t, "/api/v1/customers", pk); r.status != 401 || r.errorCode(t) != "invalid_token" {
		t.Errorf("pk_ on the admin API: %d %s", r.status, r.body)
	}
}

func TestMasterTokensAndRotation(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	ent := newTenant(t, dir, "ent.example.com", "enterprise", "customers:read")
	other := newTenant(t, dir, "other-ent.example.com", "enterprise", "*")
	if code, _, stderr := runCLI("tokens", "create-master", "--account", newTenant(t, dir, "agency.example.com", "agency", "*").accountID, "--data-dir", dir); code == 0 || !strings.Contains(stderr, "enterprise") {
		t.Fatalf("master token for an agency account: exit %d %s", code, stderr)
	}
	mt := cli(t, dir, "tokens", "create-master", "--account", ent.accountID)
	master := mt["token"].(string)
	waitForToken(t, s, tenant{token: master, position: uint64(mt["position"].(float64))})
	post := func(token, path, body string) response {
		r := do(t, http.MethodPost, s.base+path, []byte(body), map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	created := post(master, "/api/v1/api-keys", `{"data":{"attributes":{"shop_id":"`+ent.shopID+`","name":"sync","scopes":["customers:read","orders:read"],"environment":"test"}}}`)
	if created.status != 201 {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	attrs := created.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	minted := attrs["token"].(string)
	if !strings.HasPrefix(minted, "copt_test_") || attrs["shop_id"] != ent.shopID {
		t.Fatalf("created %s", created.body)
	}
	waitForToken(t, s, tenant{token: minted, position: uint64(mustUint(t, created.position(t)))})
	for name, c := range map[string]struct {
		token, body, code string
		status            int
	}{
		"other account's shop": {master, `{"data":{"attributes":{"shop_id":"` + other.shopID + `","scopes":["*"]}}}`, "validation_failed", 422},
		"unknown scope":        {master, `{"data":{"attributes":{"shop_id":"` + ent.shopID + `","scopes":["customers:delete"]}}}`, "validation_failed", 422},
		"no scopes":            {master, `{"data":{"attributes":{"shop_id":"` + ent.shopID + `"}}}`, "validation_failed", 422},
		"shop token":           {other.token, `{"data":{"attributes":{"shop_id":"` + other.shopID + `","scopes":["*"]}}}`, "scope_required", 403},
	} {
		if r := post(c.token, "/api/v1/api-keys", c.body); r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	// A master token reads no shop's data.
	if r := s.get(t, "/api/v1/customers", master); r.status != 403 {
		t.Errorf("master token on customers: %d %s", r.status, r.body)
	}

	// Rotation: the old secret fails at once, the new one works.
	id := created.json(t)["data"].(map[string]any)["id"].(string)
	rotated := post(minted, "/api/v1/api-keys/"+id+"/rotate", "")
	if rotated.status != 200 {
		t.Fatalf("rotate: %d %s", rotated.status, rotated.body)
	}
	fresh := rotated.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["token"].(string)
	if fresh == minted || rotated.json(t)["data"].(map[string]any)["id"] != id {
		t.Fatalf("rotation answered %s", rotated.body)
	}
	if r := s.get(t, "/api/v1/customers", minted); r.status != 401 {
		t.Fatalf("old token after rotation: %d", r.status)
	}
	// A token is known once the credentials read model reached the
	// rotation: the client says so with X-Wait-For-Position.
	if r := s.get(t, "/api/v1/customers", fresh, "X-Wait-For-Position", rotated.position(t)); r.status != 200 {
		t.Fatalf("new token after rotation: %d %s", r.status, r.body)
	}
	// Rotating a token of another shop is not found; of the same shop
	// without * is refused; the master token may rotate any of its shops'.
	if r := post(other.token, "/api/v1/api-keys/"+id+"/rotate", ""); r.status != 404 {
		t.Errorf("rotate another shop's token: %d %s", r.status, r.body)
	}
	if r := post(ent.token, "/api/v1/api-keys/"+id+"/rotate", ""); r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Errorf("rotate a sibling without *: %d %s", r.status, r.body)
	}
	if r := post(master, "/api/v1/api-keys/"+id+"/rotate", ""); r.status != 200 {
		t.Errorf("master rotates: %d %s", r.status, r.body)
	}

	// Revocation through the CLI reaches the running server.
	cli(t, dir, "tokens", "revoke", "--token-id", strings.TrimSpace(tokenID(t, dir, ent.shopID, "")))
	eventually(t, 5*time.Second, "revoked token refused", func() bool {
		return s.get(t, "/api/v1/customers", ent.token).status == 401
	})
	s.stop()
	list := cli(t, dir, "tokens", "list", "--shop", ent.shopID)
	toks := list["tokens"].([]any)
	if len(toks) != 2 {
		t.Fatalf("tokens list: %v", list)
	}
	for _, raw := range toks {
		tk := raw.(map[string]any)
		if _, leaked := tk["token"]; leaked {
			t.Fatal("tokens list shows a token")
		}
		if tk["last_used_at"] == nil || tk["last_used_ip"] != "127.0.0.1" {
			t.Errorf("last use not recorded: %v", tk)
		}
	}
}

// tokenID returns the id of the shop's first token named name.
func tokenID(t *testing.T, dir, shop, name string) string {
	t.Helper()
	for _, raw := range cli(t, dir, "tokens", "list", "--shop", shop)["tokens"].([]any) {
		if tk := raw.(map[string]any); tk["name"] == name {
			return tk["id"].(string)
		}
	}
	t.Fatalf("no token named %q", name)
	return ""
}

func TestImageKeysAndUsage(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "img.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	mint := func(args ...string) (string, []any) {
		out := cli(t, dir, append([]string{"image-keys", "mint", "--shop", tn.shopID}, args...)...)
		scopes, _ := out["scopes"].([]any)
		return out["token"].(string), scopes
	}
	readOnly, scopes := mint()
	if len(scopes) != 2 || scopes[0] != "usage:read" || scopes[1] != "images:read" {
		t.Fatalf("default scopes %v", scopes)
	}
	writer, scopes := mint("--scopes", "images:write")
	if len(scopes) != 2 || scopes[0] != "images:read" || scopes[1] != "images:write" {
		t.Fatalf("images:write expanded to %v", scopes)
	}
	inert, scopes := mint("--scopes", "")
	if len(scopes) != 0 {
		t.Fatalf("inert key scopes %v", scopes)
	}
	code, _, stderr := runCLI("image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write", "--data-dir", dir)
	if code != 0 || !strings.Contains(stderr, "warning") {
		t.Errorf("mutating scope: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCLI("image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:delete", "--data-dir", dir); code != 2 {
		t.Errorf("unknown scope at mint: exit %d", code)
	}
	legacy := "legacy-key-from-before-scopes-0001"
	sum := sha256.Sum256([]byte(legacy))
	imported := cli(t, dir, "image-keys", "import", "--shop", tn.shopID, "--sha256", hex.EncodeToString(sum[:]))

	usage := func(key string) response {
		r := s.get(t, "/api/v1/usage", "", "X-API-Key", key, "X-Wait-For-Position", fmt.Sprint(imported["position"]))
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	if r := usage(legacy); r.status != 200 {
		t.Fatalf("legacy key without recorded scopes: %d %s", r.status, r.body)
	}
	if r := usage(readOnly); r.status != 200 || r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["ai_credits"].(map[string]any)["quota"] != 5000.0 {
		t.Errorf("read-only key: %d %s", r.status, r.body)
	}
	for name, key := range map[string]string{"images:write only (no implication at request time)": writer, "inert": inert} {
		r := usage(key)
		if r.status != 403 || r.errorCode(t) != "scope_required" || !strings.Contains(string(r.body), "usage:read") {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
		if got := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["required_scope"]; got != "usage:read" {
			t.Errorf("%s: required_scope %v", name, got)
		}
	}
	if r := usage("cik_live_" + strings.Repeat("x", 32)); r.status != 401 {
		t.Errorf("unknown key: %d", r.status)
	}
	if r := s.get(t, "/api/v1/usage", tn.token); r.status != 200 {
		t.Errorf("bearer token of any scope: %d %s", r.status, r.body)
	}
}

func TestIdempotencyKeysOnWrites(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "idem.example.com", "agency", "*")
	waitForToken(t, s, tn)
	w := s.webhook(t, tn, "customers/create", "dlv-idem", customerPayload(3, "i@example.com", 1, "1.00", "2026-10-01T10:00:00Z"))
	id := domain.CustomerIDFromExternal(tn.shopID, "3")
	patch := func(key, body string) response {
		return do(t, http.MethodPatch, s.base+"/api/v1/customers/"+id, []byte(body), map[string]string{
			"Authorization": "Bearer " + tn.token, "Content-Type": "application/json",
			"Idempotency-Key": key, "X-Wait-For-Position": w.position(t)})
	}
	first := patch("key-1", `{"data":{"attributes":{"tags":["a"]}}}`)
	if first.status != 200 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v", first.status, first.header)
	}
	again := patch("key-1", `{"data":{"attributes":{"tags":["a"]}}}`)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("replay: %d %v %s", again.status, again.header, again.body)
	}
	if r := patch("key-1", `{"data":{"attributes":{"tags":["b"]}}}`); r.status != 409 || r.errorCode(t) != "idempotency_key_reused" {
		t.Fatalf("other body: %d %s", r.status, r.body)
	}
	if r := patch("key-2", `{"data":{"attributes":{"tags":""}}}`); r.status != 422 {
		t.Fatalf("invalid body: %d", r.status)
	}
	if r := patch("key-2", `{"data":{"attributes":{"tags":["c"]}}}`); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a key whose first use failed validation was kept: %d %v", r.status, r.header)
	}
	var n int
	for _, e := range readLog(t, dir) {
		if e.Type == "CustomerTagsSet" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d tag events, want 2 (key-1 once, key-2 once)", n)
	}
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	var n uint64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
