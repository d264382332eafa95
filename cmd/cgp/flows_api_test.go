package main

import (
	"bytes"
	"net/http"
	"slices"
	"testing"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestFlowsAPISettings reads and edits the built-in flows' settings over
// HTTP against the OpenAPI document: defaults until configured, an edit
// seen by a GET waiting for its position, a switch to WhatsApp, 422s
// naming the attribute, 404 for a name that is no built-in flow, the
// write scope, and an Idempotency-Key replay.
func TestFlowsAPISettings(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "flows-api.example.com", "agency", "journeys:read,journeys:write")
	other := newTenant(t, dir, "other-flows-api.example.com", "agency", "journeys:read,journeys:write")
	readOnly := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "journeys:read")
	waitForToken(t, s, other)
	waitForToken(t, s, tenant{token: readOnly["token"].(string), position: uint64(readOnly["position"].(float64))})
	a := catalogClient{t: t, s: s, v: v, token: tn.token}
	b := catalogClient{t: t, s: s, v: v, token: other.token}
	ro := catalogClient{t: t, s: s, v: v, token: readOnly["token"].(string)}

	list := func(c catalogClient, pos string) map[string]map[string]any {
		t.Helper()
		doc := c.ok(200, http.MethodGet, "/api/v1/flows", "", "X-Wait-For-Position", pos).json(t)
		rows := doc["data"].([]any)
		if len(rows) != 2 || doc["pagination"].(map[string]any)["has_next"] != false {
			t.Fatalf("flow list: %v", doc)
		}
		out := map[string]map[string]any{}
		var order []string
		for _, r := range rows {
			res := r.(map[string]any)
			if res["type"] != "flow" || attrs(res)["name"] != res["id"] {
				t.Fatalf("flow resource: %v", res)
			}
			order = append(order, res["id"].(string))
			out[res["id"].(string)] = attrs(res)
		}
		if !slices.Equal(order, []string{"review_request", "cart_abandonment"}) {
			t.Fatalf("flow order: %v", order)
		}
		return out
	}
	patch := func(c catalogClient, flow, attributes string, headers ...string) response {
		t.Helper()
		return c.ok(200, http.MethodPatch, "/api/v1/flows/"+flow, `{"data":{"attributes":`+attributes+`}}`, headers...)
	}

	// Defaults, never configured.
	flows := list(a, "0")
	rr, ca := flows["review_request"], flows["cart_abandonment"]
	if rr["enabled"] != true || rr["delay_minutes"] != 10080.0 || rr["channel"] != "email" || rr["trigger"] != "orders/fulfilled" ||
		rr["intent"] != "transactional" || rr["configured_at"] != nil || rr["template"] != nil || rr["link_url"] != nil ||
		!bytes.Contains([]byte(rr["text"].(string)), []byte("{{review_link}}")) || len(rr["parameters"].([]any)) != 0 ||
		!slices.Contains(rr["merge_fields"].([]any), any("review_link")) || !slices.Contains(rr["merge_fields"].([]any), any("first_name")) {
		t.Fatalf("review request defaults: %v", rr)
	}
	if ca["enabled"] != true || ca["delay_minutes"] != 240.0 || ca["channel"] != "email" || ca["trigger"] != "checkouts/update" ||
		ca["intent"] != "marketing" || ca["configured_at"] != nil || !slices.Contains(ca["merge_fields"].([]any), any("recovery_link")) ||
		slices.Contains(ca["merge_fields"].([]any), any("review_link")) {
		t.Fatalf("cart abandonment defaults: %v", ca)
	}

	// Disabled: the answer comes from the event; a GET waiting for its
	// position shows it, the other flow and the other shop untouched.
	r := patch(a, "review_request", `{"enabled":false,"channel":null}`)
	if at := attrs(data(r, t)); at["enabled"] != false || at["delay_minutes"] != 10080.0 || at["configured_at"] == nil || at["subject"] != rr["subject"] {
		t.Fatalf("disabled: %s", r.body)
	}
	flows = list(a, r.position(t))
	if at := flows["review_request"]; at["enabled"] != false || at["configured_at"] == nil || at["text"] != rr["text"] {
		t.Fatalf("GET after disabling: %v", at)
	}
	if at := flows["cart_abandonment"]; at["enabled"] != true || at["configured_at"] != nil {
		t.Fatalf("cart abandonment after disabling the review request: %v", at)
	}
	if at := list(b, r.position(t))["review_request"]; at["enabled"] != true || at["configured_at"] != nil {
		t.Fatalf("another shop's review request: %v", at)
	}

	// WhatsApp with a template: the e-mail content is dropped.
	r = patch(a, "cart_abandonment", `{"channel":"whatsapp","template":"cart_reminder","parameters":["{{first_name}}","{{recovery_link}}"],"delay_minutes":90}`)
	at := attrs(data(r, t))
	if at["channel"] != "whatsapp" || at["template"] != "cart_reminder" || at["language"] != "en_US" || at["subject"] != nil ||
		at["text"] != nil || at["html"] != nil || at["delay_minutes"] != 90.0 || len(at["parameters"].([]any)) != 2 {
		t.Fatalf("switched to whatsapp: %s", r.body)
	}
	got := attrs(data(a.ok(200, http.MethodGet, "/api/v1/flows/cart_abandonment", "", "X-Wait-For-Position", r.position(t)), t))
	if got["channel"] != "whatsapp" || got["template"] != "cart_reminder" || got["configured_at"] != at["configured_at"] {
		t.Fatalf("GET after the switch: %v", got)
	}

	// Refusals name the attribute; nothing is recorded.
	for _, c := range []struct{ flow, field, attributes string }{
		{"cart_abandonment", "delay_minutes", `{"delay_minutes":10}`},
		{"review_request", "delay_minutes", `{"delay_minutes":200000}`},
		{"review_request", "delay_minutes", `{"delay_minutes":-1}`},
		{"review_request", "text", `{"text":"Tell us what you think!"}`},
		{"cart_abandonment", "text", `{"channel":"email","subject":"Your cart","text":"Come back soon"}`},
		{"review_request", "subject", `{"subject":"Hi {{coupon}}"}`},
		{"cart_abandonment", "parameters[0]", `{"parameters":["{{review_link}}"]}`},
		{"review_request", "nickname", `{"nickname":"x"}`},
		{"review_request", "link_url", `{"link_url":"http://shop.example.com/reviews"}`},
		{"cart_abandonment", "link_url", `{"link_url":"https://shop.example.com/reviews"}`},
		{"cart_abandonment", "template", `{"channel":"whatsapp","template":""}`},
		{"review_request", "enabled", `{"enabled":"no"}`},
		{"review_request", "data.attributes", `{}`},
	} {
		a.fails(422, "validation_failed", c.field, http.MethodPatch, "/api/v1/flows/"+c.flow, `{"data":{"attributes":`+c.attributes+`}}`)
	}
	a.fails(400, "invalid_json", "", http.MethodPatch, "/api/v1/flows/review_request", `{"data":{"attributes":{"enabled":false}`)
	a.fails(404, "not_found", "", http.MethodPatch, "/api/v1/flows/welcome", `{"data":{"attributes":{"enabled":false}}}`)
	a.fails(404, "not_found", "", http.MethodGet, "/api/v1/flows/welcome", "")
	if d := ro.fails(403, "scope_required", "", http.MethodPatch, "/api/v1/flows/review_request", `{"data":{"attributes":{"enabled":true}}}`); d["required_scope"] != "journeys:write" {
		t.Fatalf("PATCH without journeys:write: %v", d)
	}
	if at := list(ro, r.position(t))["review_request"]; at["enabled"] != false || at["delay_minutes"] != 10080.0 {
		t.Fatalf("after the refusals: %v", at)
	}

	// The same Idempotency-Key replays the first answer.
	body := `{"enabled":true,"delay_minutes":4320,"link_url":"https://flows-api.example.com/pages/write-a-review"}`
	first := patch(a, "review_request", body, "Idempotency-Key", "flow-edit-1")
	again := patch(a, "review_request", body, "Idempotency-Key", "flow-edit-1")
	if !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" ||
		again.position(t) != first.position(t) {
		t.Fatalf("replay: %s / %s", first.body, again.body)
	}
	at = attrs(data(first, t))
	if at["enabled"] != true || at["delay_minutes"] != 4320.0 || at["link_url"] != "https://flows-api.example.com/pages/write-a-review" {
		t.Fatalf("re-enabled: %s", first.body)
	}
	if r := a.call(http.MethodPatch, "/api/v1/flows/review_request", `{"data":{"attributes":{"enabled":false}}}`, "Idempotency-Key", "flow-edit-1"); r.status != 409 ||
		r.errorCode(t) != "idempotency_key_reused" {
		t.Fatalf("same key, another body: %d %s", r.status, r.body)
	}
}
