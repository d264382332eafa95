package main

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestAttributionOverHTTP: a signed checkouts/create landing from a Meta
// ad (utm parameters and an fbclid) and, a day later, an orders/create of
// the same customer landing from the newsletter give an attribution record
// with both touchpoints: last touch 100% to the order's landing, first
// touch 100% to the checkout, linear 50/50, each model's credited revenue
// summing to the order's; include=touchpoints embeds both with their
// fields; date and channel filters select; bad dates are 400s naming the
// field; a token without attribution:read is a 403. Every answer is
// validated against the OpenAPI document.
func TestAttributionOverHTTP(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "attr-a.example.com", "agency", "attribution:read")
	tok := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "orders:read")
	noScope := tenant{shopID: tn.shopID, token: tok["token"].(string), position: uint64(tok["position"].(float64))}
	waitForToken(t, s, tn)
	waitForToken(t, s, noScope)

	// The fixtures' customer 7064055069303700841; the checkout at
	// 2026-03-09T09:52Z, the order a day later.
	pos := s.deliver(t, tn, shopify.TopicCheckoutsCreate, "dlv-attr-co", fixture(t, shopify.TopicCheckoutsCreate))
	pos = max(pos, s.deliverOrder(t, tn, testOrder{ext: 7001, customer: "7064055069303700841", created: "2026-03-10T12:00:00Z",
		total: "114.30", financial: "paid"}))
	wait := strconv.FormatUint(pos, 10)
	orderID := domain.OrderIDFromExternal(tn.shopID, "7001")
	checkoutID := domain.CheckoutIDFromExternal(tn.shopID, "33012345678901")

	get := func(path, token string) response {
		t.Helper()
		r := s.get(t, path, token, "X-Wait-For-Position", wait)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	r := get("/api/v1/attribution?filter[date_from]=2026-03-10&filter[date_to]=2026-03-10&include=touchpoints", tn.token)
	if r.status != http.StatusOK || r.header.Get("X-Service-Stability") != "stable" {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	doc := r.json(t)
	rows := toMaps(doc["data"])
	if len(rows) != 1 || rows[0]["id"] != orderID || rows[0]["type"] != "attribution" {
		t.Fatalf("records: %s", r.body)
	}
	a := attrs(rows[0])
	if a["revenue"] != 114.3 || a["currency"] == "" || a["customer_id"] != domain.CustomerIDFromExternal(tn.shopID, "7064055069303700841") {
		t.Errorf("record: %v", a)
	}
	models := a["models"].(map[string]any)
	credit := func(model string) []map[string]any { return toMaps(models[model]) }
	want := map[string][]float64{"last_touch": {0, 1}, "first_touch": {1, 0}, "linear": {0.5, 0.5}, "position_based": {0.5, 0.5}}
	for model, weights := range want {
		cs := credit(model)
		if len(cs) != 2 || cs[0]["touchpoint_id"] != checkoutID || cs[1]["touchpoint_id"] != orderID {
			t.Fatalf("%s: %v", model, cs)
		}
		sum := 0.0
		for i, c := range cs {
			if c["weight"] != weights[i] {
				t.Errorf("%s touch %d: weight %v, want %v", model, i, c["weight"], weights[i])
			}
			sum += c["revenue"].(float64)
		}
		if sum < 114.2999 || sum > 114.3001 {
			t.Errorf("%s: credited %v of 114.30", model, sum)
		}
	}
	if c := credit("linear"); c[0]["revenue"] != 57.15 || c[0]["channel"] != "paid_social" || c[0]["campaign"] != "spring launch" {
		t.Errorf("the checkout's linear credit: %v", c[0])
	}
	if c := credit("last_touch"); c[1]["revenue"] != 114.3 {
		t.Errorf("last touch: %v", c)
	}
	included := toMaps(doc["included"])
	if len(included) != 2 {
		t.Fatalf("included: %v", doc["included"])
	}
	byID := map[string]map[string]any{}
	for _, it := range included {
		if it["type"] != "touchpoint" {
			t.Errorf("included %v", it)
		}
		byID[it["id"].(string)] = attrs(it)
	}
	co := byID[checkoutID]
	if co == nil || co["kind"] != "checkout" || co["utm_source"] != "facebook" || co["utm_medium"] != "paid_social" ||
		co["click_id_kind"] != "fbclid" || co["landing_path"] != "/" || co["channel"] != "paid_social" {
		t.Errorf("the checkout touchpoint: %v", co)
	}
	if ol := byID[orderID]; ol == nil || ol["kind"] != "order_landing" || ol["utm_source"] != "newsletter" || ol["landing_path"] != "/products/linen-shirt" {
		t.Errorf("the order's landing: %v", ol)
	}
	refs, _ := rows[0]["relationships"].(map[string]any)["touchpoints"].(map[string]any)["data"].([]any)
	if len(refs) != 2 {
		t.Errorf("relationships.touchpoints.data: %v", refs)
	}

	// Date filters select by the order's day.
	for q, n := range map[string]int{"filter[date_from]=2026-03-11": 0, "filter[date_to]=2026-03-09": 0, "filter[date_to]=2026-03-10": 1, "": 1,
		"filter[channel]=paid_social": 1, "filter[channel]=sms": 0} {
		r := get("/api/v1/attribution?"+q, tn.token)
		if got := len(toMaps(r.json(t)["data"])); r.status != 200 || got != n {
			t.Errorf("%s: %d, %d records, want %d", q, r.status, got, n)
		}
	}
	for q, field := range map[string]string{
		"filter[date_from]=2026-13-01":                            "filter[date_from]",
		"filter[date_to]=yesterday":                               "filter[date_to]",
		"filter[date_from]=2026-03-10&filter[date_to]=2026-03-09": "filter[date_to]",
		"filter[channel]=television":                              "filter[channel]",
		"sort=revenue":                                            "sort",
	} {
		r := get("/api/v1/attribution?"+q, tn.token)
		if r.status != 400 || r.errorCode(t) != "invalid_parameter" || errorDetails(t, r)["field"] != field {
			t.Errorf("%s: %d %s, want 400 naming %s", q, r.status, r.body, field)
		}
	}
	// The summary: linear credits per channel and per campaign.
	r = get("/api/v1/attribution/summary?filter[model]=linear&filter[date_from]=2026-03-01&filter[date_to]=2026-03-31", tn.token)
	if r.status != 200 || r.header.Get("X-Service-Stability") != "beta" {
		t.Fatalf("summary: %d %s", r.status, r.body)
	}
	sum := attrs(r.json(t)["data"].(map[string]any))
	groups := map[string]map[string]any{}
	for _, row := range toMaps(sum["rows"]) {
		groups[row["key"].(string)] = row
	}
	if ps := groups["paid_social"]; len(groups) != 2 || ps == nil || ps["orders"] != 0.5 || ps["revenue"] != 57.15 || ps["net"] != 57.15 {
		t.Errorf("summary by channel: %v", sum["rows"])
	}
	r = get("/api/v1/attribution/summary?filter[model]=last_touch&group_by=campaign", tn.token)
	rows = toMaps(attrs(r.json(t)["data"].(map[string]any))["rows"])
	if r.status != 200 || len(rows) != 1 || rows[0]["key"] != "spring_launch" || rows[0]["orders"] != 1.0 || rows[0]["revenue"] != 114.3 {
		t.Errorf("summary by campaign, last touch: %d %s", r.status, r.body)
	}
	for q, field := range map[string]string{
		"":                                  "filter[model]",
		"filter[model]=u_shaped":            "filter[model]",
		"filter[model]=linear&group_by=day": "group_by",
		"filter[model]=linear&filter[date_to]=2026-3-1":                                "filter[date_to]",
		"filter[model]=linear&filter[date_from]=2026-03-02&filter[date_to]=2026-03-01": "filter[date_to]",
		"filter[model]=linear&limit=5":                                                 "limit",
	} {
		r := get("/api/v1/attribution/summary?"+q, tn.token)
		if r.status != 400 || r.errorCode(t) != "invalid_parameter" || errorDetails(t, r)["field"] != field {
			t.Errorf("summary %s: %d %s, want 400 naming %s", q, r.status, r.body, field)
		}
	}
	if r := get("/api/v1/attribution/summary?filter[model]=linear", noScope.token); r.status != 403 {
		t.Errorf("summary without attribution:read: %d %s", r.status, r.body)
	}
	if r := get("/api/v1/attribution", noScope.token); r.status != 403 || r.errorCode(t) != "scope_required" ||
		errorDetails(t, r)["required_scope"] != "attribution:read" {
		t.Errorf("without attribution:read: %d %s", r.status, r.body)
	}
}
