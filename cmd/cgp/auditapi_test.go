package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// auditFixture is a shop with three customers made by webhook deliveries
// and one tag change made with the admin API.
type auditFixture struct {
	s        *testServer
	v        *openapitest.Validator
	dir      string
	tn       tenant
	tokenID  string
	ids      []string // customer ids, in creation order
	position string   // the last write's position
}

func newAuditFixture(t *testing.T) *auditFixture {
	t.Helper()
	dir := t.TempDir()
	f := &auditFixture{s: startServer(t, dir), dir: dir, v: openapitest.NewValidator(t)}
	f.tn = newTenant(t, dir, "audit-api.example.com", "agency", "*")
	waitForToken(t, f.s, f.tn)
	for i := 1; i <= 3; i++ {
		r := f.s.webhook(t, f.tn, "customers/create", fmt.Sprintf("dlv-audit-%d", i),
			customerPayload(int64(7100+i), fmt.Sprintf("auditee%d@example.com", i), 0, "0.00", "2026-10-01T10:00:00Z"))
		if r.status != 200 {
			t.Fatalf("webhook: %d %s", r.status, r.body)
		}
		f.position = r.position(t)
	}
	list := f.s.get(t, "/api/v1/customers?sort=created_at&limit=100", f.tn.token, "X-Wait-For-Position", f.position).json(t)
	for _, c := range list["data"].([]any) {
		f.ids = append(f.ids, c.(map[string]any)["id"].(string))
	}
	if len(f.ids) != 3 {
		t.Fatalf("customers: %v", list)
	}
	r := do(t, "PATCH", f.s.base+"/api/v1/customers/"+f.ids[0], []byte(`{"data":{"attributes":{"tags":["vip"]}}}`),
		map[string]string{"Authorization": "Bearer " + f.tn.token, "Content-Type": "application/json"})
	if r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	f.position = r.position(t)
	return f
}

// page gets one page of the audit history.
func (f *auditFixture) page(t *testing.T, query string) (entries []map[string]any, next string) {
	t.Helper()
	r := f.s.get(t, "/api/v1/audit-events?"+query, f.tn.token, "X-Wait-For-Position", f.position)
	if r.status != 200 {
		t.Fatalf("GET audit-events?%s: %d %s", query, r.status, r.body)
	}
	f.v.ValidateResponse(t, r.req, r.resp, r.body)
	doc := r.json(t)
	for _, d := range doc["data"].([]any) {
		e := d.(map[string]any)
		if e["type"] != "audit_event" {
			t.Fatalf("entry type %v", e["type"])
		}
		entries = append(entries, e["attributes"].(map[string]any))
	}
	if c, ok := doc["pagination"].(map[string]any)["next_cursor"].(string); ok {
		next = c
	}
	return entries, next
}

// all walks every page of query with page size limit.
func (f *auditFixture) all(t *testing.T, query string, limit int) []map[string]any {
	t.Helper()
	var out []map[string]any
	q := query + "&limit=" + strconv.Itoa(limit)
	for range 1000 {
		entries, next := f.page(t, q)
		out = append(out, entries...)
		if next == "" {
			return out
		}
		q = query + "&limit=" + strconv.Itoa(limit) + "&cursor=" + url.QueryEscape(next)
	}
	t.Fatal("the cursor walk does not end")
	return nil
}

func positions(entries []map[string]any) []int64 {
	var out []int64
	for _, e := range entries {
		out = append(out, int64(e["position"].(float64)))
	}
	return out
}

func TestAuditEventsInLogOrderWithHashLinks(t *testing.T) {
	f := newAuditFixture(t)
	all, _ := f.page(t, "limit=100")
	log := readLog(t, f.dir)
	var want []int64
	for _, e := range log {
		if e.ShopID == f.tn.shopID {
			want = append(want, int64(e.Position))
		}
	}
	if got := positions(all); !slices.Equal(got, want) {
		t.Fatalf("positions %v, want the shop's events in log order %v", got, want)
	}
	last := map[string]map[string]any{}
	var sawEmail, sawToken bool
	for _, e := range all {
		stream := e["stream"].(string)
		if prev, ok := last[stream]; ok {
			if e["prev_hash"] != prev["hash"] || e["revision"].(float64) != prev["revision"].(float64)+1 {
				t.Fatalf("%s: entry %v does not link to %v", stream, e, prev)
			}
		} else if e["prev_hash"] != nil && e["revision"].(float64) == 0 {
			t.Fatalf("first event of %s links to %v", stream, e["prev_hash"])
		}
		last[stream] = e
		if e["event_type"] == "CustomerCreated" {
			data := e["data"].(map[string]any)
			if strings.HasPrefix(fmt.Sprint(data["email"]), "auditee") {
				sawEmail = true
			}
			if e["source"] != "webhook" || !strings.HasPrefix(e["request_id"].(string), "") || len(e["redacted"].([]any)) != 0 {
				t.Fatalf("webhook entry: %v", e)
			}
		}
		if e["event_type"] == "CustomerTagsSet" {
			sawToken = strings.HasPrefix(e["actor"].(string), "tok_") && strings.HasPrefix(e["request_id"].(string), "req_")
			f.tokenID = e["actor"].(string)
		}
	}
	if !sawEmail || !sawToken {
		t.Fatalf("decrypted e-mail %v, token actor and request id %v: %v", sawEmail, sawToken, all)
	}

	// Newest first is the same list reversed.
	desc, _ := f.page(t, "limit=100&sort=-position")
	rev := positions(desc)
	slices.Reverse(rev)
	if !slices.Equal(rev, want) {
		t.Fatalf("sort=-position gave %v", positions(desc))
	}

	// Paging by 2 neither skips nor repeats, both ways.
	if got := positions(f.all(t, "sort=position", 2)); !slices.Equal(got, want) {
		t.Fatalf("paged by 2: %v, want %v", got, want)
	}
	if got := positions(f.all(t, "sort=-position", 3)); !slices.Equal(got, positions(desc)) {
		t.Fatalf("paged by 3 newest first: %v", got)
	}

	// Each filter.
	check := func(query string, keep func(map[string]any) bool) {
		t.Helper()
		var exp []int64
		for _, e := range all {
			if keep(e) {
				exp = append(exp, int64(e["position"].(float64)))
			}
		}
		if len(exp) == 0 {
			t.Fatalf("%s: the fixture has nothing to find", query)
		}
		if got := positions(f.all(t, query, 2)); !slices.Equal(got, exp) {
			t.Fatalf("%s: %v, want %v", query, got, exp)
		}
	}
	check("filter[stream]=customer-"+f.ids[0], func(e map[string]any) bool { return e["stream"] == "customer-"+f.ids[0] })
	check("filter[resource_id]="+f.ids[1], func(e map[string]any) bool { return e["resource_id"] == f.ids[1] })
	check("filter[type]=CustomerCreated", func(e map[string]any) bool { return e["event_type"] == "CustomerCreated" })
	check("filter[actor]="+f.tokenID, func(e map[string]any) bool { return e["actor"] == f.tokenID })
	check("filter[type]=CustomerCreated&filter[actor]="+url.QueryEscape(all[len(all)-2]["actor"].(string)), func(e map[string]any) bool {
		return e["event_type"] == "CustomerCreated" && e["actor"] == all[len(all)-2]["actor"]
	})
	from := all[len(all)-3]["recorded_at"].(string)
	fromT, _ := time.Parse(time.RFC3339Nano, from)
	check("filter[recorded_at][gte]="+url.QueryEscape(from), func(e map[string]any) bool {
		t, _ := time.Parse(time.RFC3339Nano, e["recorded_at"].(string))
		return !t.Before(fromT)
	})
	check("filter[recorded_at][gte]=2020-01-01&filter[recorded_at][lt]="+url.QueryEscape(from), func(e map[string]any) bool {
		t, _ := time.Parse(time.RFC3339Nano, e["recorded_at"].(string))
		return t.Before(fromT)
	})
	if got, _ := f.page(t, "filter[recorded_at][gte]=2999-01-01"); len(got) != 0 {
		t.Fatalf("future range: %v", got)
	}

	// Bad parameters are 400s naming them; a cursor of another query is refused.
	for query, field := range map[string]string{
		"filter[recorded_at][gte]=yesterday":                                     "filter[recorded_at][gte]",
		"filter[recorded_at][gte]=2026-10-02&filter[recorded_at][lt]=2026-10-01": "filter[recorded_at][lt]",
		"filter[colour]=red": "filter[colour]",
		"sort=type":          "sort",
		"limit=101":          "limit",
	} {
		r := f.s.get(t, "/api/v1/audit-events?"+query, f.tn.token)
		f.v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != 400 || r.errorCode(t) != "invalid_parameter" || !strings.Contains(string(r.body), field) {
			t.Errorf("%s: %d %s", query, r.status, r.body)
		}
	}
	_, next := f.page(t, "limit=1")
	if r := f.s.get(t, "/api/v1/audit-events?limit=1&filter[type]=CustomerCreated&cursor="+url.QueryEscape(next), f.tn.token); r.status != 400 {
		t.Errorf("cursor of another query: %d %s", r.status, r.body)
	}

	// A replay of the audit projector rebuilds the same index; the running
	// server moves to it.
	replayCLI(t, f.dir, "--projector", "audit")
	eventually(t, 20*time.Second, "the replayed index serves the same history", func() bool {
		got, _ := f.page(t, "limit=100&filter[actor]="+f.tokenID)
		byType, _ := f.page(t, "limit=100")
		return len(got) == 1 && slices.Equal(positions(byType), want)
	})
}

func TestAuditEventsNeedTheAuditScope(t *testing.T) {
	f := newAuditFixture(t)
	tok := cli(t, f.dir, "tokens", "create", "--shop", f.tn.shopID, "--scopes", "customers:read")
	for _, path := range []string{"/api/v1/audit-events", "/api/v1/audit-events/verify"} {
		r := f.s.get(t, path, tok["token"].(string), "X-Wait-For-Position", fmtAny(tok["position"]))
		f.v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != 403 || r.errorCode(t) != "scope_required" {
			t.Errorf("%s without audit:read: %d %s", path, r.status, r.body)
		}
	}
	// Another shop's token sees none of this shop's history.
	other := newTenant(t, f.dir, "audit-other.example.com", "agency", "audit:read")
	r := f.s.get(t, "/api/v1/audit-events?limit=100", other.token, "X-Wait-For-Position", fmtAny(other.position))
	for _, d := range r.json(t)["data"].([]any) {
		if strings.Contains(fmt.Sprint(d), f.tn.shopID) || strings.Contains(fmt.Sprint(d), "auditee") {
			t.Fatalf("another shop's token sees %v", d)
		}
	}
}

func TestAuditEventsRedactedAfterShred(t *testing.T) {
	f := newAuditFixture(t)
	f.s.stop()
	cfg := testConfig(f.dir)
	core, err := OpenCore(context.Background(), cfg, newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := core.Vault.Shred(context.Background(), f.tn.shopID, f.ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := core.Close(); err != nil {
		t.Fatal(err)
	}
	f.s = startServer(t, f.dir)
	entries, _ := f.page(t, "filter[type]=CustomerCreated")
	if len(entries) != 3 {
		t.Fatalf("entries: %v", entries)
	}
	for _, e := range entries {
		data := e["data"].(map[string]any)
		redacted := fmt.Sprint(e["redacted"])
		if e["resource_id"] == f.ids[1] {
			if data["email"] != nil || data["first_name"] != nil || !strings.Contains(redacted, "email") {
				t.Fatalf("shredded customer: %v", e)
			}
			continue
		}
		if !strings.HasPrefix(fmt.Sprint(data["email"]), "auditee") || redacted != "[]" {
			t.Fatalf("customer not erased: %v", e)
		}
	}
}

func TestAuditVerifyEndpoint(t *testing.T) {
	f := newAuditFixture(t)
	verify := func() map[string]any {
		t.Helper()
		r := f.s.get(t, "/api/v1/audit-events/verify", f.tn.token, "X-Wait-For-Position", f.position)
		if r.status != 200 {
			t.Fatalf("verify: %d %s", r.status, r.body)
		}
		f.v.ValidateResponse(t, r.req, r.resp, r.body)
		return r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	}
	all, _ := f.page(t, "limit=100")
	eventually(t, 10*time.Second, "the audit index catches up", func() bool {
		rep := verify()
		return rep["intact"] == true && int(rep["events_checked"].(float64)) == len(all)
	})
	if rep := verify(); fmt.Sprint(rep["verified_through_position"]) != fmt.Sprint(all[len(all)-1]["position"]) {
		t.Fatalf("verified through %v, the last event is at %v", rep["verified_through_position"], all[len(all)-1]["position"])
	}
	if r := f.s.get(t, "/api/v1/audit-events/verify?deep=1", f.tn.token); r.status != 400 {
		t.Fatalf("unknown parameter: %d %s", r.status, r.body)
	}
	// The CLI agrees, through the same index.
	if rep := cli(t, f.dir, "audit", "verify", "--shop", f.tn.shopID); rep["intact"] != true || int(rep["events_checked"].(float64)) != len(all) {
		t.Fatalf("cli: %v", rep)
	}

	// The last customer event is altered; later the first one is removed
	// (before it in the log, so verify stops at the removal).
	isCustomer := func(e map[string]any) bool { return strings.HasPrefix(e["stream"].(string), "customer-") }
	var target string
	for _, e := range all {
		if isCustomer(e) && e["event_type"] != "CustomerTagsSet" {
			target = fmt.Sprint(e["position"]) // the last CustomerCreated
		}
	}
	var id string
	for _, e := range readLog(t, f.dir) {
		if fmt.Sprint(e.Position) == target {
			id = e.ID.String()
		}
	}
	f.s.stop()
	tamper(t, f.dir, `UPDATE events SET data = CAST(data || x'00' AS BLOB) WHERE position = `+target)
	f.s = startServer(t, f.dir)
	rep := verify()
	if rep["intact"] != false || rep["first_bad_event"] != id || fmt.Sprint(rep["first_bad_position"]) != target ||
		rep["verified_through_position"].(float64) >= rep["first_bad_position"].(float64) {
		t.Fatalf("altered event %s at %s: %v", id, target, rep)
	}
	code, crep := auditVerify(t, f.dir, f.tn.shopID)
	if code == 0 || crep["first_bad_event"] != id {
		t.Fatalf("cli after tampering: exit %d %v", code, crep)
	}

	// An event removed behind the log's back is named by its position.
	f.s.stop()
	first := fmt.Sprint(all[slices.IndexFunc(all, isCustomer)]["position"])
	db, err := sql.Open("sqlite3", filepath.Join(f.dir, "events.db")) // its triggers are gone already
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM events WHERE position = ` + first); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f.s = startServer(t, f.dir)
	if rep := verify(); rep["intact"] != false || fmt.Sprint(rep["first_bad_position"]) != first || !strings.Contains(rep["problem"].(string), "missing") {
		t.Fatalf("deleted event: %v", rep)
	}
}
