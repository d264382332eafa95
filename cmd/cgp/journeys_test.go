package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

const reviewSteps = `[{"type":"wait","hours":24},{"type":"send_message","channel":"whatsapp","template":"review_request"}]`

func journeyBody(name, trigger, extra string) string {
	return fmt.Sprintf(`{"data":{"attributes":{"name":%q,"trigger":%q,"steps":%s%s}}}`, name, trigger, reviewSteps, extra)
}

// TestJourneysEndToEnd creates journeys over HTTP, delivers signed
// orders/fulfilled webhooks and checks who the enrollment reactor
// enrolled.
func TestJourneysEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "journeys.example.com", "agency", "journeys:read,journeys:write")
	other := newTenant(t, dir, "other-journeys.example.com", "agency", "journeys:read,journeys:write")
	readOnly := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "journeys:read")
	noScope := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read")
	waitForToken(t, s, other)
	waitForToken(t, s, tenant{token: noScope["token"].(string), position: uint64(noScope["position"].(float64))})
	a := catalogClient{t: t, s: s, v: v, token: tn.token}
	b := catalogClient{t: t, s: s, v: v, token: other.token}
	ro := catalogClient{t: t, s: s, v: v, token: readOnly["token"].(string)}
	none := catalogClient{t: t, s: s, v: v, token: noScope["token"].(string)}

	// settle waits until the journeys projector handled the log up to pos
	// (so the reactor appended whatever it enrolls for it), then writes a
	// draft journey in the other shop: its position is after those
	// enrollments, and a read waiting for it sees them.
	settle := func(pos uint64) string {
		t.Helper()
		b.ok(200, http.MethodGet, "/api/v1/journeys?limit=1", "", "X-Wait-For-Position", fmt.Sprint(pos))
		return b.ok(201, http.MethodPost, "/api/v1/journeys", journeyBody("sentinel", "orders/paid", `,"status":"draft"`)).position(t)
	}
	order := func(id, delivery string) uint64 {
		body := withField(t, fixture(t, shopify.TopicOrdersFulfilled), "id", "5984321190041", id)
		return s.deliver(t, tn, shopify.TopicOrdersFulfilled, delivery, body)
	}
	customer := domain.CustomerIDFromExternal(tn.shopID, "7064055069303700841")

	// An order fulfilled before any journey exists.
	order("5984321190041", "dlv-jrn-a")

	// Journeys: default status active; draft; re-entry; another topic.
	ids := map[string]string{}
	for _, j := range []struct{ name, trigger, extra, status string }{
		{"Welcome", "customers/create", "", "active"},
		{"Reviews", "orders/fulfilled", "", "active"},
		{"Draft reviews", "orders/fulfilled", `,"status":"draft"`, "draft"},
		{"Every fulfilment", "orders/fulfilled", `,"allow_reentry":true,"status":"active"`, "active"},
		{"Paid", "orders/paid", "", "active"},
	} {
		r := a.ok(201, http.MethodPost, "/api/v1/journeys", journeyBody(j.name, j.trigger, j.extra))
		d := data(r, t)
		at := attrs(d)
		id := d["id"].(string)
		if !strings.HasPrefix(id, domain.PrefixJourney) || at["status"] != j.status || at["trigger"] != j.trigger ||
			len(at["steps"].([]any)) != 2 || at["enrollment_count"] != 0.0 {
			t.Fatalf("created %s: %s", j.name, r.body)
		}
		ids[j.name] = id
	}

	// Validation and scopes.
	for field, body := range map[string]string{
		"trigger":          journeyBody("x", "products/create", ""),
		"name":             journeyBody("", "orders/paid", ""),
		"status":           journeyBody("x", "orders/paid", `,"status":"paused"`),
		"steps":            `{"data":{"attributes":{"name":"x","trigger":"orders/paid","steps":[]}}}`,
		"steps[0].channel": `{"data":{"attributes":{"name":"x","trigger":"orders/paid","steps":[{"type":"send_message","channel":"fax","template":"t"}]}}}`,
		"steps[0].hours":   `{"data":{"attributes":{"name":"x","trigger":"orders/paid","steps":[{"type":"wait","hours":0}]}}}`,
	} {
		a.fails(422, "validation_failed", field, http.MethodPost, "/api/v1/journeys", body)
	}
	a.fails(400, "invalid_json", "", http.MethodPost, "/api/v1/journeys", `{"data":`)
	if d := ro.fails(403, "scope_required", "", http.MethodPost, "/api/v1/journeys", journeyBody("x", "orders/paid", "")); d["required_scope"] != "journeys:write" {
		t.Fatalf("read-only token: %v", d)
	}
	none.fails(403, "scope_required", "", http.MethodGet, "/api/v1/journeys", "")
	none.fails(403, "scope_required", "", http.MethodGet, "/api/v1/journeys/"+ids["Reviews"]+"/enrollments", "")

	enrollments := func(name, query, pos string) []map[string]any {
		t.Helper()
		return a.list("/api/v1/journeys/"+ids[name]+"/enrollments?limit=1"+query, pos)
	}

	// A fulfilment after the journeys: the active ones of the topic enroll
	// the order's customer; the earlier order enrolled nobody.
	pos := settle(order("5984321190042", "dlv-jrn-b"))
	for name, want := range map[string]int{"Reviews": 1, "Draft reviews": 0, "Every fulfilment": 1, "Paid": 0, "Welcome": 0} {
		got := enrollments(name, "", pos)
		if len(got) != want {
			t.Fatalf("%s: %d enrollments after one order, want %d", name, len(got), want)
		}
		for _, e := range got {
			if at := attrs(e); at["customer_id"] != customer || at["status"] != "active" || at["trigger_topic"] != "orders/fulfilled" ||
				at["journey_id"] != ids[name] || !strings.HasPrefix(e["id"].(string), domain.PrefixEnrollment) {
				t.Fatalf("%s: enrollment %v", name, e)
			}
		}
	}

	// A customer seen for the first time: the customers/create journey.
	pos = settle(s.deliver(t, tn, shopify.TopicCustomersCreate, "dlv-jrn-cus", fixture(t, shopify.TopicCustomersCreate)))
	if got := enrollments("Welcome", "", pos); len(got) != 1 || attrs(got[0])["customer_id"] != customer || attrs(got[0])["trigger_topic"] != "customers/create" {
		t.Fatalf("welcome enrollments: %v", got)
	}

	// A second order of the same customer: only the re-entry journey
	// enrolls again.
	pos = settle(order("5984321190043", "dlv-jrn-c"))
	for name, want := range map[string]int{"Reviews": 1, "Draft reviews": 0, "Every fulfilment": 2, "Paid": 0} {
		if got := enrollments(name, "", pos); len(got) != want {
			t.Fatalf("%s: %d enrollments after two orders, want %d", name, len(got), want)
		}
	}
	walk := enrollments("Every fulfilment", "&sort=enrolled_at", pos)
	if walk[0]["id"] == walk[1]["id"] {
		t.Fatalf("cursor walk repeats a row: %v", walk)
	}
	if n := len(enrollments("Every fulfilment", "&filter[status]=active", pos)); n != 2 {
		t.Fatalf("filter[status]=active: %d", n)
	}
	if n := len(enrollments("Every fulfilment", "&filter[status]=exited", pos)); n != 0 {
		t.Fatalf("filter[status]=exited: %d", n)
	}
	a.fails(400, "invalid_parameter", "filter[status]", http.MethodGet, "/api/v1/journeys/"+ids["Reviews"]+"/enrollments?filter[status]=gone", "")
	a.fails(400, "invalid_parameter", "filter[customer]", http.MethodGet, "/api/v1/journeys?filter[customer]=x", "")

	// Journey lists: cursors, filters, counts, shops apart.
	all := a.list("/api/v1/journeys?limit=1", pos)
	if len(all) != 5 || all[0]["id"] != ids["Paid"] || all[4]["id"] != ids["Welcome"] {
		t.Fatalf("journeys (newest first): %v", all)
	}
	for _, j := range all {
		if j["id"] == ids["Every fulfilment"] && attrs(j)["enrollment_count"] != 2.0 {
			t.Fatalf("enrollment_count: %v", j)
		}
	}
	if drafts := a.list("/api/v1/journeys?limit=2&sort=created_at&filter[status]=draft", pos); len(drafts) != 1 || drafts[0]["id"] != ids["Draft reviews"] {
		t.Fatalf("drafts: %v", drafts)
	}
	if n := len(b.list("/api/v1/journeys?limit=100&filter[status]=active", pos)); n != 0 {
		t.Fatalf("the other shop sees %d active journeys", n)
	}
	b.fails(404, "not_found", "", http.MethodGet, "/api/v1/journeys/"+ids["Reviews"]+"/enrollments", "")
}
