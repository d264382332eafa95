package main

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestJourneyEditsAndManualEnrollment edits journeys over HTTP (versions,
// status moves, 409s, 422s naming the field) and enrolls a customer by
// hand (201, 409 twice, 422 unknown customer, scopes), against the
// OpenAPI document.
func TestJourneyEditsAndManualEnrollment(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "journey-edits.example.com", "agency", "journeys:read,journeys:write,customers:write")
	other := newTenant(t, dir, "other-edits.example.com", "agency", "journeys:read,journeys:write,customers:write")
	journeysOnly := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "journeys:read,journeys:write")
	customersOnly := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:write")
	waitForToken(t, s, other)
	waitForToken(t, s, tenant{token: customersOnly["token"].(string), position: uint64(customersOnly["position"].(float64))})
	a := catalogClient{t: t, s: s, v: v, token: tn.token}
	b := catalogClient{t: t, s: s, v: v, token: other.token}
	jw := catalogClient{t: t, s: s, v: v, token: journeysOnly["token"].(string)}
	cw := catalogClient{t: t, s: s, v: v, token: customersOnly["token"].(string)}

	cusPos := s.deliver(t, tn, shopify.TopicCustomersCreate, "dlv-edit-cus", fixture(t, shopify.TopicCustomersCreate))
	customer := domain.CustomerIDFromExternal(tn.shopID, "7064055069303700841")
	create := func(c catalogClient, name, extra string) string {
		t.Helper()
		return data(c.ok(201, http.MethodPost, "/api/v1/journeys", journeyBody(name, "orders/paid", extra)), t)["id"].(string)
	}
	get := func(id, pos string) map[string]any {
		t.Helper()
		return attrs(data(a.ok(200, http.MethodGet, "/api/v1/journeys/"+id, "", "X-Wait-For-Position", pos), t))
	}
	patch := func(id, attributes string) response {
		t.Helper()
		return a.ok(200, http.MethodPatch, "/api/v1/journeys/"+id, `{"data":{"attributes":`+attributes+`}}`)
	}
	enroll := func(c catalogClient, id, cus string) response {
		t.Helper()
		return c.call(http.MethodPost, "/api/v1/journeys/"+id+"/enrollments", fmt.Sprintf(`{"data":{"attributes":{"customer_id":%q}}}`, cus))
	}

	id := create(a, "Thanks", "")
	if at := get(id, "0"); at["version"] != 1.0 || len(at["steps"].([]any)) != 2 {
		t.Fatalf("created journey: %v", at)
	}

	// An edit of the steps: version 2, the content shown as sent.
	steps := `[{"type":"wait","hours":48},{"type":"condition","condition":"not_ordered_since_enrollment","otherwise":"exit"},
		{"type":"condition","condition":"has_tag","tag":"vip","otherwise":"skip_next"},
		{"type":"send_message","channel":"email","subject":"Thank you, {{first_name}}","text":"Hello from {{ shop_name }}","html":"<p>{{first_name}}</p>"},
		{"type":"send_message","channel":"whatsapp","template":"thanks","parameters":["{{first_name}}"]},{"type":"exit"}]`
	r := patch(id, `{"steps":`+steps+`,"name":"Thanks v2"}`)
	at := attrs(data(r, t))
	got := at["steps"].([]any)
	if at["version"] != 2.0 || at["name"] != "Thanks v2" || len(got) != 6 || got[3].(map[string]any)["subject"] != "Thank you, {{first_name}}" ||
		got[4].(map[string]any)["language"] != "en_US" || got[1].(map[string]any)["condition"] != "not_ordered_since_enrollment" {
		t.Fatalf("edited journey: %s", r.body)
	}
	if at := get(id, r.position(t)); at["version"] != 2.0 || len(at["steps"].([]any)) != 6 {
		t.Fatalf("GET after the edit: %v", at)
	}
	// An edit that changes nothing records nothing.
	if at := attrs(data(patch(id, `{"name":"Thanks v2","status":"active"}`), t)); at["version"] != 2.0 {
		t.Fatalf("no-op edit: %v", at)
	}

	// Refusals name the field.
	for field, attributes := range map[string]string{
		"steps[1].subject":       `{"steps":[{"type":"wait","hours":1},{"type":"send_message","channel":"email","subject":"Hi {{email}}","text":"x"}]}`,
		"steps[0].parameters[0]": `{"steps":[{"type":"send_message","channel":"whatsapp","template":"t","parameters":["{{coupon}}"]}]}`,
		"steps[1].otherwise":     `{"steps":[{"type":"send_message","channel":"sms","text":"x"},{"type":"condition","condition":"has_tag","tag":"x","otherwise":"skip_next"}]}`,
		"steps[0].condition":     `{"steps":[{"type":"condition","condition":"rich"},{"type":"send_message","channel":"sms","text":"x"}]}`,
		"steps[0].html":          `{"steps":[{"type":"send_message","channel":"sms","text":"x","html":"<b>"}]}`,
		"steps":                  `{"steps":[]}`,
		"status":                 `{"status":"paused"}`,
		"name":                   `{"name":""}`,
		"trigger":                `{"trigger":"orders/create"}`,
		"data.attributes":        `{}`,
	} {
		a.fails(422, "validation_failed", field, http.MethodPatch, "/api/v1/journeys/"+id, `{"data":{"attributes":`+attributes+`}}`)
	}
	a.fails(409, "conflict", "", http.MethodPatch, "/api/v1/journeys/"+id, `{"data":{"attributes":{"status":"draft"}}}`)
	b.fails(404, "not_found", "", http.MethodPatch, "/api/v1/journeys/"+id, `{"data":{"attributes":{"name":"x"}}}`)
	b.fails(404, "not_found", "", http.MethodGet, "/api/v1/journeys/"+id, "")
	if d := cw.fails(403, "scope_required", "", http.MethodPatch, "/api/v1/journeys/"+id, `{"data":{"attributes":{"name":"x"}}}`); d["required_scope"] != "journeys:write" {
		t.Fatalf("PATCH without journeys:write: %v", d)
	}

	// Manual enrollment: 201 with the current steps version, then 409.
	a.ok(200, http.MethodGet, "/api/v1/journeys/"+id, "", "X-Wait-For-Position", fmt.Sprint(cusPos))
	r = enroll(a, id, customer)
	if r.status != 201 {
		t.Fatalf("enroll: %d %s", r.status, r.body)
	}
	e := data(r, t)
	if at := attrs(e); at["status"] != "active" || at["steps_version"] != 2.0 || at["trigger_topic"] != "manual" ||
		at["customer_id"] != customer || at["journey_id"] != id || at["enrolled_at"] == nil {
		t.Fatalf("enrollment: %s", r.body)
	}
	for range 2 {
		if r := enroll(a, id, customer); r.status != 409 || r.errorCode(t) != "conflict" {
			t.Fatalf("enroll again: %d %s", r.status, r.body)
		}
	}
	a.fails(422, "validation_failed", "customer_id", http.MethodPost, "/api/v1/journeys/"+id+"/enrollments", `{"data":{"attributes":{"customer_id":"cus_nobody"}}}`)
	a.fails(422, "validation_failed", "customer_id", http.MethodPost, "/api/v1/journeys/"+id+"/enrollments", `{"data":{"attributes":{}}}`)
	a.fails(422, "validation_failed", "customer_id", http.MethodPost, "/api/v1/journeys/"+id+"/enrollments", `{"data":{"attributes":{"customer_id":"ord_1"}}}`)
	a.fails(422, "validation_failed", "note", http.MethodPost, "/api/v1/journeys/"+id+"/enrollments", `{"data":{"attributes":{"customer_id":"x","note":"y"}}}`)
	b.fails(404, "not_found", "", http.MethodPost, "/api/v1/journeys/"+id+"/enrollments", fmt.Sprintf(`{"data":{"attributes":{"customer_id":%q}}}`, customer))
	if d := jw.fails(403, "scope_required", "", http.MethodPost, "/api/v1/journeys/"+id+"/enrollments", `{"data":{"attributes":{"customer_id":"x"}}}`); d["required_scope"] != "customers:write" {
		t.Fatalf("enroll without customers:write: %v", d)
	}
	// Another shop's customer is unknown here.
	bid := create(b, "Theirs", "")
	b.fails(422, "validation_failed", "customer_id", http.MethodPost, "/api/v1/journeys/"+bid+"/enrollments", fmt.Sprintf(`{"data":{"attributes":{"customer_id":%q}}}`, customer))

	// A journey with re-entry: the same Idempotency-Key replays the first
	// answer; without one, a second enrollment while the first is active
	// is a 409.
	re := create(a, "Again", `,"allow_reentry":true`)
	body := fmt.Sprintf(`{"data":{"attributes":{"customer_id":%q}}}`, customer)
	first := a.ok(201, http.MethodPost, "/api/v1/journeys/"+re+"/enrollments", body, "Idempotency-Key", "enrol-1")
	again := a.ok(201, http.MethodPost, "/api/v1/journeys/"+re+"/enrollments", body, "Idempotency-Key", "enrol-1")
	if data(first, t)["id"] != data(again, t)["id"] || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s / %s", first.body, again.body)
	}
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/journeys/"+re+"/enrollments", body)

	// The enrollment list shows the version and the manual topic.
	rows := a.list("/api/v1/journeys/"+id+"/enrollments?limit=10", first.position(t))
	if len(rows) != 1 || attrs(rows[0])["steps_version"] != 2.0 || attrs(rows[0])["trigger_topic"] != "manual" || rows[0]["id"] != e["id"] {
		t.Fatalf("enrollments: %v", rows)
	}

	// Draft: enrolls nobody until made active; paused: 409 until resumed.
	draft := create(a, "Later", `,"status":"draft"`)
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/journeys/"+draft+"/enrollments", body)
	if at := attrs(data(patch(draft, `{"status":"active"}`), t)); at["status"] != "active" || at["version"] != 2.0 {
		t.Fatalf("draft made active: %v", at)
	}
	if r := enroll(a, draft, customer); r.status != 201 {
		t.Fatalf("enroll in the activated journey: %d %s", r.status, r.body)
	}
	a.ok(200, http.MethodPost, "/api/v1/journeys/"+re+"/pause", "")
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/journeys/"+re+"/enrollments", body)
	a.fails(409, "conflict", "", http.MethodPatch, "/api/v1/journeys/"+re, `{"data":{"attributes":{"status":"active"}}}`)
	if at := attrs(data(patch(re, `{"allow_reentry":false}`), t)); at["status"] != "paused" || at["allow_reentry"] != false || at["paused_reason"] != "manual" {
		t.Fatalf("paused journey edited: %v", at)
	}

	// Archived: enrolls nobody, edits are 409, pause is 409.
	r = patch(re, `{"status":"archived"}`)
	if at := attrs(data(r, t)); at["status"] != "archived" || at["version"] != 3.0 || at["paused_reason"] != nil {
		t.Fatalf("archived: %s", r.body)
	}
	a.fails(409, "conflict", "", http.MethodPatch, "/api/v1/journeys/"+re, `{"data":{"attributes":{"name":"x"}}}`)
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/journeys/"+re+"/enrollments", body)
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/journeys/"+re+"/resume", "")
	if at := get(re, r.position(t)); at["status"] != "archived" || at["version"] != 3.0 {
		t.Fatalf("GET archived: %v", at)
	}
}
