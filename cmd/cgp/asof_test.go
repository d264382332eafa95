package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

func TestCustomerAsOf(t *testing.T) {
	f := newAuditFixture(t) // three customers; the first one's tags set to vip
	id := f.ids[0]
	r := f.s.webhook(t, f.tn, "customers/update", "dlv-asof-upd",
		customerPayload(7101, "renamed@example.com", 0, "0.00", "2026-10-02T10:00:00Z"))
	if r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	f.position = r.position(t)
	history, _ := f.page(t, "filter[stream]=customer-"+id)
	if len(history) != 3 {
		t.Fatalf("history: %v", history)
	}
	at := func(i int) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, history[i]["recorded_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	if !at(0).Before(at(1)) || !at(1).Before(at(2)) {
		t.Fatalf("the three events of the customer were not recorded at increasing instants (nanoseconds): %v", history)
	}
	v := openapitest.NewValidator(t)
	get := func(asOf string) response {
		t.Helper()
		r := f.s.get(t, "/api/v1/customers/"+id+"?as_of="+url.QueryEscape(asOf), f.tn.token, "X-Wait-For-Position", f.position)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	attrs := func(asOf time.Time) map[string]any {
		t.Helper()
		r := get(asOf.Format(time.RFC3339Nano))
		if r.status != 200 {
			t.Fatalf("as_of %v: %d %s", asOf, r.status, r.body)
		}
		return r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	}
	// Just created: the first e-mail, the platform's tags.
	a := attrs(at(0))
	if a["email"] != "auditee1@example.com" || strings.Contains(toJSON(t, a["tags"]), "vip") {
		t.Fatalf("as created: %v", a)
	}
	// After the tag change, before the rename.
	a = attrs(at(1).Add(time.Microsecond))
	if a["email"] != "auditee1@example.com" || !strings.Contains(toJSON(t, a["tags"]), "vip") {
		t.Fatalf("after the tag change: %v", a)
	}
	// Now: the same as the live read.
	now := attrs(time.Now())
	live := f.s.get(t, "/api/v1/customers/"+id, f.tn.token, "X-Wait-For-Position", f.position).json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	if now["email"] != "renamed@example.com" || toJSON(t, now["tags"]) != toJSON(t, live["tags"]) || now["created_at"] != live["created_at"] {
		t.Fatalf("as of now %v, live %v", now, live)
	}
	// Before it existed: 404.
	if r := get(at(0).Add(-time.Microsecond).Format(time.RFC3339Nano)); r.status != 404 || r.errorCode(t) != "not_found" {
		t.Fatalf("before creation: %d %s", r.status, r.body)
	}
	if r := get("2020-01-01"); r.status != 404 {
		t.Fatalf("2020: %d %s", r.status, r.body)
	}
	// Bad and future instants: 400 naming as_of.
	for _, bad := range []string{"yesterday", "2026-13-01", time.Now().Add(time.Hour).Format(time.RFC3339)} {
		if r := get(bad); r.status != 400 || r.errorCode(t) != "invalid_parameter" || !strings.Contains(string(r.body), "as_of") {
			t.Fatalf("as_of=%s: %d %s", bad, r.status, r.body)
		}
	}
	// Another shop's customer is not found at any instant.
	other := newTenant(t, f.dir, "asof-other.example.com", "agency", "customers:read")
	waitForToken(t, f.s, other)
	if r := f.s.get(t, "/api/v1/customers/"+id+"?as_of="+url.QueryEscape(time.Now().Format(time.RFC3339)), other.token); r.status != 404 {
		t.Fatalf("another shop: %d %s", r.status, r.body)
	}

	// After the customer's key is shredded its personal fields are null
	// at every instant.
	f.s.stop()
	cfg := testConfig(f.dir)
	core, err := OpenCore(context.Background(), cfg, newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := core.Vault.Shred(context.Background(), f.tn.shopID, id); err != nil {
		t.Fatal(err)
	}
	if err := core.Close(); err != nil {
		t.Fatal(err)
	}
	f.s = startServer(t, f.dir)
	a = attrs(at(0))
	if a["email"] != nil || a["first_name"] != nil || a["redacted"] != true {
		t.Fatalf("shredded, as created: %v", a)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
