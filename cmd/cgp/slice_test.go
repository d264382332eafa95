package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// waitForToken waits until the tenancy read model reached the position the
// CLI reported, so the server knows the token (the server sees another
// process's appends by its poll). It polls nothing with an unknown token:
// that would count as failed authentications.
func waitForToken(t *testing.T, s *testServer, tn tenant) {
	t.Helper()
	r := s.get(t, "/api/v1/usage", tn.token, "X-Wait-For-Position", fmt.Sprint(tn.position))
	if r.status == http.StatusUnauthorized || r.status >= 500 {
		t.Fatalf("token not known at position %d: %d %s", tn.position, r.status, r.body)
	}
}

func TestCustomersSliceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "slice.example.com", "agency", "customers:read,customers:write")
	start := time.Now()
	waitForToken(t, s, tn)
	t.Logf("token created by the CLI usable after %v", time.Since(start))

	created := s.webhook(t, tn, "customers/create", "dlv-create-1", customerPayload(7001, "ada@example.com", 1, "120.50", "2026-10-01T10:00:00Z"))
	if created.status != http.StatusOK {
		t.Fatalf("customers/create: %d %s", created.status, created.body)
	}
	v.ValidateResponse(t, created.req, created.resp, created.body)
	id := domain.CustomerIDFromExternal(tn.shopID, "7001")

	got := s.get(t, "/api/v1/customers/"+id, tn.token, "X-Wait-For-Position", created.position(t))
	if got.status != http.StatusOK {
		t.Fatalf("GET customer: %d %s", got.status, got.body)
	}
	v.ValidateResponse(t, got.req, got.resp, got.body)
	if got.header.Get("X-Service-Stability") != "stable" {
		t.Errorf("X-Service-Stability = %q", got.header.Get("X-Service-Stability"))
	}
	data := got.json(t)["data"].(map[string]any)
	attrs := data["attributes"].(map[string]any)
	if data["id"] != id || data["type"] != "customer" || attrs["email"] != "ada@example.com" ||
		attrs["lifecycle_stage"] != "new" || attrs["total_spent"] != 120.5 || attrs["orders_count"] != 1.0 {
		t.Fatalf("customer = %s", got.body)
	}
	if tags := fmt.Sprint(attrs["tags"]); tags != "[imported newsletter]" {
		t.Errorf("tags = %s", tags)
	}
	related := data["relationships"].(map[string]any)["orders"].(map[string]any)["links"].(map[string]any)["related"]
	if related != "/api/v1/customers/"+id+"/orders" {
		t.Errorf("orders link = %v", related)
	}

	updated := s.webhook(t, tn, "customers/update", "dlv-update-1", customerPayload(7001, "ada@lovelace.example", 4, "480.00", "2026-10-02T10:00:00Z"))
	if updated.status != http.StatusOK {
		t.Fatalf("customers/update: %d %s", updated.status, updated.body)
	}
	got = s.get(t, "/api/v1/customers/"+id, tn.token, "X-Wait-For-Position", updated.position(t))
	attrs = got.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	if attrs["email"] != "ada@lovelace.example" || attrs["lifecycle_stage"] != "loyal" || attrs["total_spent"] != 480.0 {
		t.Fatalf("after update: %s", got.body)
	}

	patch := do(t, http.MethodPatch, s.base+"/api/v1/customers/"+id, []byte(`{"data":{"attributes":{"tags":["vip"," vip ","wholesale"]}}}`),
		map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
	if patch.status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", patch.status, patch.body)
	}
	v.ValidateResponse(t, patch.req, patch.resp, patch.body)
	if tags := fmt.Sprint(patch.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["tags"]); tags != "[vip wholesale]" {
		t.Fatalf("PATCH answered tags %s", tags)
	}
	got = s.get(t, "/api/v1/customers/"+id, tn.token, "X-Wait-For-Position", patch.position(t))
	if tags := fmt.Sprint(got.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["tags"]); tags != "[vip wholesale]" {
		t.Fatalf("GET after PATCH tags %s", tags)
	}
	// A later platform update keeps the merchant's tags.
	again := s.webhook(t, tn, "customers/update", "dlv-update-2", customerPayload(7001, "ada@lovelace.example", 4, "480.00", "2026-10-03T10:00:00Z"))
	got = s.get(t, "/api/v1/customers/"+id, tn.token, "X-Wait-For-Position", again.position(t))
	if tags := fmt.Sprint(got.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["tags"]); tags != "[vip wholesale]" {
		t.Fatalf("platform update replaced merchant tags: %s", tags)
	}

	for _, bad := range []struct {
		body string
		code string
		want int
	}{
		{`{"data":{"attributes":{"tags":"vip"}}}`, "validation_failed", 422},
		{`{"data":{"attributes":{}}}`, "validation_failed", 422},
		{`{"data":{"attributes":{"tags":[""]}}}`, "validation_failed", 422},
		{`{"data":`, "invalid_json", 400},
	} {
		r := do(t, http.MethodPatch, s.base+"/api/v1/customers/"+id, []byte(bad.body),
			map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
		if r.status != bad.want || r.errorCode(t) != bad.code {
			t.Errorf("PATCH %s: %d %s", bad.body, r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
	if r := do(t, http.MethodPatch, s.base+"/api/v1/customers/cus_doesnotexist", []byte(`{"data":{"attributes":{"tags":["a"]}}}`),
		map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"}); r.status != 404 || r.errorCode(t) != "not_found" {
		t.Errorf("PATCH unknown customer: %d %s", r.status, r.body)
	}
}

func TestAdminAuthenticationAndScopes(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	reader := newTenant(t, dir, "reader.example.com", "enterprise", "customers:read")
	other := newTenant(t, dir, "other.example.com", "agency", "*")
	waitForToken(t, s, reader)
	waitForToken(t, s, other)
	w := s.webhook(t, other, "customers/create", "dlv-other-1", customerPayload(1, "o@example.com", 0, "0.00", "2026-10-01T10:00:00Z"))
	otherID := domain.CustomerIDFromExternal(other.shopID, "1")

	cases := []struct {
		name, auth string
		status     int
		code       string
	}{
		{"no token", "", 401, "authentication_required"},
		{"not bearer", "Basic abc", 401, "invalid_token"},
		{"malformed", "Bearer copt_live_short", 401, "invalid_token"},
		{"unknown", "Bearer copt_live_" + strings.Repeat("A", 32), 401, "invalid_token"},
		{"public key", "Bearer pk_live_" + strings.Repeat("A", 32), 401, "invalid_token"},
	}
	for _, c := range cases {
		h := map[string]string{}
		if c.auth != "" {
			h["Authorization"] = c.auth
		}
		r := do(t, http.MethodGet, s.base+"/api/v1/customers", nil, h)
		if r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
	r := do(t, http.MethodPatch, s.base+"/api/v1/customers/"+otherID, []byte(`{"data":{"attributes":{"tags":["x"]}}}`),
		map[string]string{"Authorization": "Bearer " + reader.token, "Content-Type": "application/json"})
	if r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Fatalf("write with a read token: %d %s", r.status, r.body)
	}
	if req := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["required_scope"]; req != "customers:write" {
		t.Errorf("required_scope = %v", req)
	}
	// A token of one shop never sees another shop's customer.
	if r := s.get(t, "/api/v1/customers/"+otherID, reader.token, "X-Wait-For-Position", w.position(t)); r.status != 404 || r.errorCode(t) != "not_found" {
		t.Errorf("cross-shop read: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/api/v1/customers", reader.token); len(r.json(t)["data"].([]any)) != 0 {
		t.Errorf("cross-shop list: %s", r.body)
	}
	if r := s.get(t, "/api/v1/customers/"+otherID, other.token); r.status != 200 {
		t.Errorf("own read: %d %s", r.status, r.body)
	}
}

func TestWebhookReceiverRejectsBadDeliveries(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "hooks.example.com", "agency", "*")
	waitForToken(t, s, tn)
	body := customerPayload(42, "x@example.com", 0, "0", "2026-10-01T10:00:00Z")

	post := func(h map[string]string, b []byte) response {
		r := do(t, http.MethodPost, s.base+"/webhooks/events", b, h)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	h := webhookHeaders(tn, "customers/create", "dlv-bad", body)
	delete(h, "X-Commerce-Hmac-Sha256")
	if r := post(h, body); r.status != 400 || r.errorCode(t) != "signature_required" {
		t.Errorf("no signature: %d %s", r.status, r.body)
	}
	if r := post(nil, nil); r.status != 400 {
		t.Errorf("bare POST: %d %s (a 301 or 404 would mean delivery is broken)", r.status, r.body)
	}
	for name, mod := range map[string]func(map[string]string){
		"wrong signature": func(h map[string]string) { h["X-Commerce-Hmac-Sha256"] = "dGhpcyBpcyBub3QgaXQ=" },
		"not base64":      func(h map[string]string) { h["X-Commerce-Hmac-Sha256"] = "%%%" },
		"unknown shop":    func(h map[string]string) { h["X-Commerce-Shop-Domain"] = "nobody.example.com" },
		"other secret": func(h map[string]string) {
			h["X-Commerce-Hmac-Sha256"] = webhookHeaders(tenant{secret: "another-secret-0123456789"}, "", "", body)["X-Commerce-Hmac-Sha256"]
		},
	} {
		h := webhookHeaders(tn, "customers/create", "dlv-bad", body)
		mod(h)
		if r := post(h, body); r.status != 401 || r.errorCode(t) != "invalid_signature" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	// A body signed and then altered is refused.
	h = webhookHeaders(tn, "customers/create", "dlv-bad", body)
	if r := post(h, append([]byte(nil), append(body[:len(body)-1], ' ', '}')...)); r.status != 401 {
		t.Errorf("altered body: %d", r.status)
	}
	h = webhookHeaders(tn, "customers/create", "", body)
	if r := post(h, body); r.status != 400 || r.errorCode(t) != "invalid_parameter" {
		t.Errorf("no delivery id: %d %s", r.status, r.body)
	}
	big := make([]byte, 2<<20)
	if r := post(webhookHeaders(tn, "customers/create", "dlv-big", big), big); r.status != 413 {
		t.Errorf("2 MiB body: %d %s", r.status, r.body)
	}
	// Nothing above reached the log: only the tenancy events are there.
	// A verified but unusable delivery is acknowledged and recorded.
	for topic, b := range map[string][]byte{"customers/create": []byte(`{"id": not json`), "carts/create": []byte(`{"id":1}`), "future/topic": []byte(`{}`)} {
		r := post(webhookHeaders(tn, topic, "dlv-kept-"+topic, b), b)
		if r.status != 200 {
			t.Errorf("%s: %d %s", topic, r.status, r.body)
		}
	}
	events := readLog(t, dir)
	var recorded, customers int
	for _, e := range events {
		switch e.Type {
		case "WebhookDeliveryRecorded":
			recorded++
		case "CustomerCreated", "CustomerUpdated":
			customers++
		}
	}
	if recorded != 3 || customers != 0 {
		t.Fatalf("log holds %d recorded deliveries and %d customer events, want 3 and 0", recorded, customers)
	}
}

// readLog reads the whole embedded log of a data directory.
func readLog(t *testing.T, dir string) []eventlog.Event {
	t.Helper()
	l, err := logsqlite.Open(logsqlite.Config{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return readAll(t, l)
}

// readAll reads every event of a log.
func readAll(t *testing.T, l eventlog.Log) []eventlog.Event {
	t.Helper()
	var all []eventlog.Event
	var after eventlog.Position
	for {
		evs, err := l.ReadAll(context.Background(), after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
		if len(evs) < 1000 {
			return all
		}
		after = evs[len(evs)-1].Position
	}
}

func countEvent(events []eventlog.Event, id string) int {
	n := 0
	for _, e := range events {
		if e.ID.String() == id {
			n++
		}
	}
	return n
}

func TestWebhookDeduplication(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "dedup.example.com", "agency", "*")
	waitForToken(t, s, tn)
	body := customerPayload(99, "dup@example.com", 2, "10.00", "2026-10-01T10:00:00Z")
	id := eventlog.DeterministicID("commerce", tn.shopID, "dlv-dup").String()

	// Sequential repeats.
	for i := 0; i < 3; i++ {
		if r := s.webhook(t, tn, "customers/create", "dlv-dup", body); r.status != 200 {
			t.Fatalf("delivery %d: %d %s", i, r.status, r.body)
		}
	}
	// Concurrent repeats of another delivery.
	concID := eventlog.DeterministicID("commerce", tn.shopID, "dlv-conc").String()
	postConcurrently(t, 24, s.base+"/webhooks/events", webhookHeaders(tn, "customers/update", "dlv-conc", body), body)
	// Across a restart.
	s.stop()
	s = startServer(t, dir)
	if r := s.webhook(t, tn, "customers/create", "dlv-dup", body); r.status != 200 {
		t.Fatalf("after restart: %d %s", r.status, r.body)
	}
	events := readLog(t, dir)
	if n := countEvent(events, id); n != 1 {
		t.Errorf("sequential duplicates: event recorded %d times", n)
	}
	if n := countEvent(events, concID); n != 1 {
		t.Errorf("concurrent duplicates: event recorded %d times", n)
	}
	var customerEvents int
	for _, e := range events {
		if strings.HasPrefix(e.StreamID, "customer-") {
			customerEvents++
		}
	}
	if customerEvents != 2 {
		t.Errorf("customer stream has %d events, want 2 (one per distinct delivery)", customerEvents)
	}
}

func TestCustomerListCursorsFiltersAndSorts(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "list.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	const n = 57
	var last response
	for i := 1; i <= n; i++ {
		orders := i % 3 // 0: prospect, 1: new, 2: active
		last = s.webhook(t, tn, "customers/create", fmt.Sprintf("dlv-list-%d", i),
			customerPayload(int64(1000+i), fmt.Sprintf("c%d@example.com", i), orders, fmt.Sprintf("%d.00", i*10), "2026-10-01T10:00:00Z"))
		if last.status != 200 {
			t.Fatalf("webhook %d: %d", i, last.status)
		}
	}
	pos := last.position(t)

	walk := func(query string) []map[string]any {
		var out []map[string]any
		next := "/api/v1/customers?" + query
		for pages := 0; next != ""; pages++ {
			if pages > n {
				t.Fatalf("walk of %q does not end", query)
			}
			r := s.get(t, next, tn.token, "X-Wait-For-Position", pos)
			if r.status != 200 {
				t.Fatalf("GET %s: %d %s", next, r.status, r.body)
			}
			v.ValidateResponse(t, r.req, r.resp, r.body)
			doc := r.json(t)
			for _, d := range doc["data"].([]any) {
				out = append(out, d.(map[string]any))
			}
			pg := doc["pagination"].(map[string]any)
			next = ""
			if pg["has_next"] == true {
				next = "/api/v1/customers?" + query + "&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
				l, _ := doc["links"].(map[string]any)["next"].(string)
				if u, err := url.Parse(l); err != nil || u.Query().Get("cursor") != pg["next_cursor"] || u.Path != "/api/v1/customers" {
					t.Fatalf("links.next %q does not match the cursor", l)
				}
			}
		}
		return out
	}
	all := walk("limit=10")
	seen := map[string]bool{}
	for _, c := range all {
		seen[c["id"].(string)] = true
	}
	if len(all) != n || len(seen) != n {
		t.Fatalf("walk returned %d rows, %d distinct; want %d", len(all), len(seen), n)
	}
	bySpent := walk("limit=7&sort=-total_spent")
	for i := 1; i < len(bySpent); i++ {
		a := bySpent[i-1]["attributes"].(map[string]any)["total_spent"].(float64)
		b := bySpent[i]["attributes"].(map[string]any)["total_spent"].(float64)
		if a < b {
			t.Fatalf("sort=-total_spent out of order at %d: %v then %v", i, a, b)
		}
	}
	newOnes := walk("limit=4&filter[lifecycle_stage]=new&sort=-last_order_at")
	if len(newOnes) != 19 {
		t.Fatalf("filter new: %d rows, want 19", len(newOnes))
	}
	for _, c := range newOnes {
		if st := c["attributes"].(map[string]any)["lifecycle_stage"]; st != "new" {
			t.Fatalf("filter new returned %v", st)
		}
	}

	first := s.get(t, "/api/v1/customers?limit=5", tn.token).json(t)
	cursor := first["pagination"].(map[string]any)["next_cursor"].(string)
	if r := s.get(t, "/api/v1/customers", tn.token, "X-Wait-For-Position", "soon"); r.status != 400 || r.errorCode(t) != "invalid_parameter" {
		t.Errorf("malformed X-Wait-For-Position: %d %s", r.status, r.body)
	}
	for _, c := range []struct {
		query, code, field string
	}{
		{"limit=101", "invalid_parameter", "limit"},
		{"limit=0", "invalid_parameter", "limit"},
		{"limit=ten", "invalid_parameter", "limit"},
		{"filter[email]=x", "invalid_parameter", "filter[email]"},
		{"filter[lifecycle_stage]=vip", "invalid_parameter", "filter[lifecycle_stage]"},
		{"sort=email", "invalid_parameter", "sort"},
		{"foo=bar", "invalid_parameter", "foo"},
		{"cursor=garbage", "invalid_cursor", ""},
		{"cursor=" + url.QueryEscape(cursor[:len(cursor)-2]+"xy"), "invalid_cursor", ""},
		{"sort=-total_spent&cursor=" + url.QueryEscape(cursor), "invalid_cursor", ""},
	} {
		r := s.get(t, "/api/v1/customers?"+c.query, tn.token)
		if r.status != 400 || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s", c.query, r.status, r.body)
			continue
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if c.field != "" {
			if f := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"]; f != c.field {
				t.Errorf("%s: details.field = %v", c.query, f)
			}
		}
	}
}

func TestEveryRouteIsDocumented(t *testing.T) {
	dir := t.TempDir()
	core, err := OpenCore(context.Background(), testConfig(dir), newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	app, err := OpenApp(context.Background(), testConfig(dir), core)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	openapitest.CheckRoutes(t, app.Router)
}

func TestLogsHoldNoSecretsOrPersonalData(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "logs.example.com", "agency", "*")
	waitForToken(t, s, tn)
	body := customerPayload(5150, "private.person@example.com", 1, "10.00", "2026-10-01T10:00:00Z")
	r := s.webhook(t, tn, "customers/create", "dlv-logs", body)
	sig := webhookHeaders(tn, "customers/create", "dlv-logs", body)["X-Commerce-Hmac-Sha256"]
	id := domain.CustomerIDFromExternal(tn.shopID, "5150")
	s.get(t, "/api/v1/customers/"+id+"?x=private.person@example.com", tn.token, "X-Wait-For-Position", r.position(t))
	do(t, http.MethodPatch, s.base+"/api/v1/customers/"+id, []byte(`{"data":{"attributes":{"tags":["secret-tag"]}}}`),
		map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
	s.get(t, "/api/v1/customers", "copt_live_"+strings.Repeat("Z", 32))
	s.stop()
	logs := s.logs.String()
	if !strings.Contains(logs, `"request_id":"req_`) {
		t.Fatalf("no request logs captured:\n%s", logs)
	}
	for _, secret := range []string{tn.token, tn.secret, sig, "private.person", "First5150", "Ottawa", "+15550005150", strings.Repeat("Z", 32), "secret-tag"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
	// And the log lines are JSON with the fixed field names.
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
	}
}
