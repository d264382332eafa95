package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestSubscriptionEconomicsBehindPlatformScope: GET
// /api/v1/subscriptions/summary hides the subscription economics (200,
// data null, an explicit state) until the shop grants the platform scope
// read_own_subscription_contracts, then serves what the subscription
// webhooks carried, the shop's own only; a bad filter is a 400.
func TestSubscriptionEconomicsBehindPlatformScope(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "subs.example.com", "agency", "analytics:read")
	other := newTenant(t, dir, "subs-other.example.com", "agency", "analytics:read")
	tok := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read")
	noScope := tenant{token: tok["token"].(string), position: uint64(tok["position"].(float64))}
	waitForToken(t, s, noScope)
	get := func(query, token string, wait uint64) response {
		t.Helper()
		r := s.get(t, "/api/v1/subscriptions/summary"+query, token, "X-Wait-For-Position", strconv.FormatUint(wait, 10))
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	grant := func(tn tenant, delivery, updated string, scopes ...string) uint64 {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"id":660136150,"previous":[],"current":["%s"],"updated_at":"%s"}`, strings.Join(scopes, `","`), updated))
		r := s.webhook(t, tn, "app/scopes_update", delivery, body)
		if r.status != http.StatusOK {
			t.Fatalf("scopes update: %d %s", r.status, r.body)
		}
		return mustUint(t, r.position(t))
	}

	// The shop's contracts: one active (billed once, then a failed
	// attempt: in dunning), one cancelled; the billed order arrives.
	billed := withField(t, withField(t, fixture(t, shopify.TopicOrdersCreate), "id", "5984321190041", "5990000000001"),
		"total_price", `"114.30"`, `"29.90"`)
	second := withField(t, fixture(t, shopify.TopicSubscriptionContractsCreate), "id", "12582912345", "12582912399")
	cancelled := withField(t, withField(t, fixture(t, shopify.TopicSubscriptionContractsUpdate), "id", "12582912345", "12582912399"),
		"status", `"paused"`, `"cancelled"`)
	var last uint64
	for i, d := range []struct {
		topic string
		body  []byte
	}{
		{shopify.TopicOrdersCreate, fixture(t, shopify.TopicOrdersCreate)}, {shopify.TopicOrdersCreate, billed},
		{shopify.TopicSubscriptionContractsCreate, fixture(t, shopify.TopicSubscriptionContractsCreate)},
		{shopify.TopicBillingAttemptsSuccess, fixture(t, shopify.TopicBillingAttemptsSuccess)},
		{shopify.TopicBillingAttemptsFailure, fixture(t, shopify.TopicBillingAttemptsFailure)},
		{shopify.TopicSubscriptionContractsCreate, second}, {shopify.TopicSubscriptionContractsUpdate, cancelled},
	} {
		last = s.deliver(t, tn, d.topic, fmt.Sprintf("dlv-subs-%d", i), d.body)
	}
	otherPos := s.deliver(t, other, shopify.TopicSubscriptionContractsCreate, "dlv-subs-other", fixture(t, shopify.TopicSubscriptionContractsCreate))

	hidden := func(r response, state string) {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("summary without the scope: %d %s", r.status, r.body)
		}
		doc := r.json(t)
		meta, _ := doc["meta"].(map[string]any)
		if doc["data"] != nil || meta["subscription_economics"] != state || meta["platform_scope"] != "read_own_subscription_contracts" ||
			meta["feature"] != "subscription_revenue" || meta["reason"] == nil || !strings.Contains(fmt.Sprint(meta["reason"]), "read_own_subscription_contracts") && state == "scope_missing" {
			t.Fatalf("hidden state %s: %s", state, r.body)
		}
		if u, _ := meta["reauthorize_url"].(string); !strings.Contains(u, "/auth/install?shop="+tn.domain) {
			t.Errorf("reauthorize_url %v", meta["reauthorize_url"])
		}
		if len(doc) != 2 || len(meta) != 5 {
			t.Errorf("hidden summary: %s", r.body)
		}
		for _, leak := range []string{"29.9", "114.3", `"contracts"`, `"by_status"`, `"recognised"`, `"mrr"`, `"churn"`, `"dunning"`} {
			if bytes.Contains(r.body, []byte(leak)) {
				t.Errorf("hidden summary leaks %q: %s", leak, r.body)
			}
		}
	}
	// Never reported: the grant is unknown.
	hidden(get("", tn.token, last), "grant_unknown")
	// Reported without the scope.
	pos := grant(tn, "dlv-subs-scopes-1", "2026-11-01T10:00:00Z", "read_orders", "read_customers")
	hidden(get("", tn.token, max(pos, last)), "scope_missing")

	// Bad filters are refused whatever the grant.
	for _, q := range []string{"?filter[date_from]=2026-13-01", "?filter[date_to]=yesterday", "?filter[date_from]=2026-03-10&filter[date_to]=2026-03-01",
		"?filter[status]=active", "?filter[date_from]=2026-03-01&filter[date_from]=2026-03-02"} {
		if r := get(q, tn.token, 0); r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_parameter" {
			t.Errorf("%s: %d %s, want 400 invalid_parameter", q, r.status, r.body)
		}
	}
	if r := s.get(t, "/api/v1/subscriptions/summary", noScope.token); r.status != http.StatusForbidden || r.errorCode(t) != "scope_required" {
		t.Errorf("without analytics:read: %d %s", r.status, r.body)
	}

	// Granted: the economics of what was posted.
	pos = grant(tn, "dlv-subs-scopes-2", "2026-11-02T10:00:00Z", "read_orders", "read_customers", "read_own_subscription_contracts")
	r := get("", tn.token, pos)
	if r.status != http.StatusOK {
		t.Fatalf("summary: %d %s", r.status, r.body)
	}
	doc := r.json(t)
	meta := doc["meta"].(map[string]any)
	if meta["subscription_economics"] != "on" || meta["reason"] != nil || meta["reauthorize_url"] != nil {
		t.Fatalf("meta %v", meta)
	}
	attrs := doc["data"].(map[string]any)["attributes"].(map[string]any)
	want := map[string]string{
		"contracts": `map[active:1 by_status:map[active:1 cancelled:1 expired:0 failed:0 paused:0 stale:0] in_dunning:1 total:2]`,
		"revenue":   `map[recognised:[map[amount:29.9 count:1 currency:EUR]] unpriced_attempts:0]`,
		"mrr":       `map[estimate:[map[amount:29.9 count:1 currency:EUR]] unpriced_contracts:0]`,
		"churn":     `map[ended_in_window:1 ended_of_start:0 live_at_start:0 rate:<nil>]`,
		"dunning":   `map[contracts_in_dunning:1 failed_attempts:1 successful_attempts:1]`,
	}
	for k, w := range want {
		if got := fmt.Sprint(attrs[k]); got != w {
			t.Errorf("%s = %s, want %s", k, got, w)
		}
	}
	// A window without attempts: the current contracts, no revenue.
	r = get("?filter[date_from]=2020-01-01&filter[date_to]=2020-01-31", tn.token, pos)
	attrs = r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	if attrs["date_from"] != "2020-01-01" || attrs["date_to"] != "2020-01-31" || fmt.Sprint(attrs["revenue"]) != `map[recognised:[] unpriced_attempts:0]` ||
		fmt.Sprint(attrs["dunning"]) != `map[contracts_in_dunning:1 failed_attempts:0 successful_attempts:0]` {
		t.Errorf("2020 window: %s", r.body)
	}

	// Another shop, granted too, sees its own contract only.
	pos = grant(other, "dlv-subs-other-scopes", "2026-11-02T10:00:00Z", "read_own_subscription_contracts")
	r = get("", other.token, max(pos, otherPos))
	attrs = r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	if fmt.Sprint(attrs["contracts"]) != `map[active:1 by_status:map[active:1 cancelled:0 expired:0 failed:0 paused:0 stale:0] in_dunning:0 total:1]` ||
		fmt.Sprint(attrs["revenue"]) != `map[recognised:[] unpriced_attempts:0]` ||
		fmt.Sprint(attrs["mrr"]) != `map[estimate:[] unpriced_contracts:1]` {
		t.Errorf("other shop: %s", r.body)
	}
}
