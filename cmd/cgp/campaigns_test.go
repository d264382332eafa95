package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// WhatsApp template ids of the template_approved and template_rejected
// fixtures.
const approvedTemplate, rejectedTemplate = "1689556908129832", "1689556908129833"

// campaignBody is a campaign's create body; an e-mail campaign gets a
// subject and a text, so that it can be launched.
func campaignBody(name, audience, channel, template string) string {
	content := ""
	if channel == "email" {
		content = `,"content":{"subject":"News for {{first_name}}","text":"Hello {{first_name}}"}`
	}
	return fmt.Sprintf(`{"data":{"attributes":{"name":%q,"audience_id":%q,"channel":%q,"template_id":%q%s}}}`, name, audience, channel, template, content)
}

func TestCampaignsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, nil)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "campaigns.example.com", "agency", "4001")
	other := newTenant(t, dir, "other-campaigns.example.com", "agency", "campaigns:read,campaigns:write,customers:read,customers:write")
	readOnly := cli(t, dir, "tokens", "create", "--shop", wt.shopID, "--scopes", "campaigns:read,customers:read")
	noScope := cli(t, dir, "tokens", "create", "--shop", wt.shopID, "--scopes", "orders:read")
	waitForToken(t, s, other)
	waitForToken(t, s, tenant{token: noScope["token"].(string), position: uint64(noScope["position"].(float64))})
	a := catalogClient{t: t, s: s, v: v, token: wt.token}
	b := catalogClient{t: t, s: s, v: v, token: other.token}
	ro := catalogClient{t: t, s: s, v: v, token: readOnly["token"].(string)}
	none := catalogClient{t: t, s: s, v: v, token: noScope["token"].(string)}

	// Template states come from signed WhatsApp template status webhooks.
	waDeliver(t, s, v, rm, wt, "template_approved")
	waDeliver(t, s, v, rm, wt, "template_rejected")

	// Audiences.
	r := a.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"VIP at risk","filters":{
		"lifecycle_stages":["at_risk"],"tags":["vip"],"min_total_spent":"500","last_order_before":"2026-10-01T00:00:00Z"}}}}`)
	if r.header.Get("X-Service-Stability") != "beta" {
		t.Fatalf("audiences stability %q", r.header.Get("X-Service-Stability"))
	}
	aud := data(r, t)
	audID := aud["id"].(string)
	f := attrs(aud)["filters"].(map[string]any)
	if !strings.HasPrefix(audID, domain.PrefixAudience) || f["min_total_spent"] != 500.0 || f["max_total_spent"] != nil ||
		fmt.Sprint(f["lifecycle_stages"], f["tags"]) != "[at_risk] [vip]" || f["last_order_before"] != "2026-10-01T00:00:00Z" {
		t.Fatalf("audience %s", r.body)
	}
	if got := data(a.ok(200, http.MethodGet, "/api/v1/audiences/"+audID, "", "X-Wait-For-Position", r.position(t)), t); attrs(got)["name"] != "VIP at risk" {
		t.Fatalf("GET audience %v", got)
	}
	if n := len(a.list("/api/v1/audiences?limit=1", r.position(t))); n != 1 {
		t.Fatalf("%d audiences", n)
	}
	otherAud := data(b.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"Theirs"}}}`), t)["id"].(string)
	b.fails(404, "not_found", "", http.MethodGet, "/api/v1/audiences/"+audID, "")
	for body, field := range map[string]string{
		`{"data":{"attributes":{"filters":{}}}}`:                                          "name",
		`{"data":{"attributes":{"name":"x","filters":{"lifecycle_stages":["gold"]}}}}`:    "filters.lifecycle_stages",
		`{"data":{"attributes":{"name":"x","filters":{"min_total_spent":"lots"}}}}`:       "filters.min_total_spent",
		`{"data":{"attributes":{"name":"x","filters":{"last_order_after":"yesterday"}}}}`: "filters.last_order_after",
		`{"data":{"attributes":{"name":"x","filters":{"colour":"red"}}}}`:                 "filters.colour",
	} {
		a.fails(422, "validation_failed", field, http.MethodPost, "/api/v1/audiences", body)
	}

	// audience_id is required and must be an audience of the shop.
	for _, body := range []string{
		`{"data":{"attributes":{"name":"No audience","template_id":"1"}}}`,
		campaignBody("Unknown", "aud_doesnotexist", "whatsapp", approvedTemplate),
		campaignBody("Not an id", "cus_123", "whatsapp", approvedTemplate),
		campaignBody("Theirs", otherAud, "whatsapp", approvedTemplate),
	} {
		a.fails(422, "validation_failed", "audience_id", http.MethodPost, "/api/v1/campaigns", body)
	}
	a.fails(422, "validation_failed", "template_id", http.MethodPost, "/api/v1/campaigns", campaignBody("x", audID, "whatsapp", ""))
	a.fails(422, "validation_failed", "channel", http.MethodPost, "/api/v1/campaigns", campaignBody("x", audID, "sms", ""))

	// Campaigns: created in draft, 201 with the envelope and the position.
	ids := map[string]string{}
	var pos string
	for _, c := range []struct{ name, channel, template string }{
		{"Approved", "whatsapp", approvedTemplate}, {"Rejected", "whatsapp", rejectedTemplate},
		{"Unknown template", "whatsapp", "999"}, {"Newsletter", "email", ""},
	} {
		r := a.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody(c.name, audID, c.channel, c.template))
		pos = r.position(t)
		d := data(r, t)
		at := attrs(d)
		if !strings.HasPrefix(d["id"].(string), domain.PrefixCampaign) || d["type"] != "campaign" || at["status"] != "draft" ||
			at["audience_id"] != audID || at["channel"] != c.channel || at["launched_at"] != nil || r.header.Get("X-Service-Stability") != "stable" {
			t.Fatalf("created %s", r.body)
		}
		ids[c.name] = d["id"].(string)
	}

	// Lists: walked a row at a page both ways, filtered by status.
	names := func(rows []map[string]any) string {
		var out []string
		for _, r := range rows {
			out = append(out, attrs(r)["name"].(string))
		}
		return strings.Join(out, ",")
	}
	if got := names(a.list("/api/v1/campaigns?limit=1&sort=created_at", pos)); got != "Approved,Rejected,Unknown template,Newsletter" {
		t.Fatalf("sort=created_at: %s", got)
	}
	if got := names(a.list("/api/v1/campaigns?limit=3", pos)); got != "Newsletter,Unknown template,Rejected,Approved" {
		t.Fatalf("default sort: %s", got)
	}
	if n := len(b.list("/api/v1/campaigns?limit=100", pos)); n != 0 {
		t.Fatalf("another shop sees %d campaigns", n)
	}
	for q, field := range map[string]string{"filter[status]=live": "filter[status]", "sort=name": "sort", "filter[channel]=email": "filter[channel]"} {
		a.fails(400, "invalid_parameter", field, http.MethodGet, "/api/v1/campaigns?"+q, "")
	}

	// Launch: sending with an approved template (or e-mail), else
	// awaiting_approval; a second launch is a conflict.
	launch := func(c catalogClient, name string, headers ...string) response {
		return c.call(http.MethodPost, "/api/v1/campaigns/"+ids[name]+"/launch", "", headers...)
	}
	// A template the shop does not have is refused at launch.
	a.fails(422, "validation_failed", "template_id", http.MethodPost, "/api/v1/campaigns/"+ids["Unknown template"]+"/launch", "")
	for name, want := range map[string]string{"Approved": "sending", "Rejected": "awaiting_approval"} {
		r := launch(a, name)
		if r.status != 200 {
			t.Fatalf("launch %s: %d %s", name, r.status, r.body)
		}
		pos = r.position(t)
		if at := attrs(data(r, t)); at["status"] != want || at["launched_at"] == nil {
			t.Fatalf("launch %s: %s, want %s", name, r.body, want)
		}
		if again := launch(a, name); again.status != 409 || again.errorCode(t) != "conflict" {
			t.Fatalf("second launch of %s: %d %s", name, again.status, again.body)
		}
	}
	b.fails(404, "not_found", "", http.MethodPost, "/api/v1/campaigns/"+ids["Newsletter"]+"/launch", "")
	a.fails(404, "not_found", "", http.MethodPost, "/api/v1/campaigns/cam_doesnotexist/launch", "")

	// An Idempotency-Key replays the first launch instead of conflicting.
	first := launch(a, "Newsletter", "Idempotency-Key", "launch-1")
	again := launch(a, "Newsletter", "Idempotency-Key", "launch-1")
	if first.status != 200 || again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) ||
		attrs(data(first, t))["status"] != "sending" {
		t.Fatalf("replayed launch: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	if r := launch(a, "Newsletter"); r.status != 409 || r.errorCode(t) != "conflict" {
		t.Fatalf("launch without the key: %d %s", r.status, r.body)
	}
	pos = first.position(t)
	if got := names(a.list("/api/v1/campaigns?filter[status]=sending&sort=created_at", pos)); got != "Approved,Newsletter" {
		t.Fatalf("filter[status]=sending: %s", got)
	}
	if got := names(a.list("/api/v1/campaigns?filter[status]=awaiting_approval&limit=1&sort=created_at", pos)); got != "Rejected" {
		t.Fatalf("filter[status]=awaiting_approval: %s", got)
	}

	// An idempotent create answers the same campaign.
	body := campaignBody("Once", audID, "email", "")
	c1 := a.ok(201, http.MethodPost, "/api/v1/campaigns", body, "Idempotency-Key", "create-1")
	c2 := a.ok(201, http.MethodPost, "/api/v1/campaigns", body, "Idempotency-Key", "create-1")
	if c2.header.Get("Idempotent-Replayed") != "true" || data(c1, t)["id"] != data(c2, t)["id"] {
		t.Fatalf("replayed create: %s / %s", c1.body, c2.body)
	}

	// Scopes.
	none.fails(403, "scope_required", "", http.MethodGet, "/api/v1/campaigns", "")
	none.fails(403, "scope_required", "", http.MethodGet, "/api/v1/audiences", "")
	if d := ro.fails(403, "scope_required", "", http.MethodPost, "/api/v1/campaigns", body); d["required_scope"] != "campaigns:write" {
		t.Fatalf("required_scope %v", d["required_scope"])
	}
	if d := ro.fails(403, "scope_required", "", http.MethodPost, "/api/v1/campaigns/"+ids["Approved"]+"/launch", ""); d["required_scope"] != "campaigns:write" {
		t.Fatalf("required_scope %v", d["required_scope"])
	}
	if d := ro.fails(403, "scope_required", "", http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"x"}}}`); d["required_scope"] != "customers:write" {
		t.Fatalf("required_scope %v", d["required_scope"])
	}
	ro.ok(200, http.MethodGet, "/api/v1/campaigns", "")
}

// An audience's single GET counts the customers its filters select at the
// request: the count follows the customers received.
func TestAudienceCustomerCount(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "audience-count.example.com", "agency", "campaigns:read,campaigns:write,customers:read,customers:write")
	waitForToken(t, s, tn)
	a := catalogClient{t: t, s: s, v: openapitest.NewValidator(t), token: tn.token}
	// Three customers with 1, 2 and 5 orders (no last order known: recent),
	// spending 50, 200 and 900.
	var last string
	for i, c := range []struct {
		orders int
		spent  string
	}{{1, "50.00"}, {2, "200.00"}, {5, "900.00"}} {
		id := int64(7001 + i)
		r := s.webhook(t, tn, "customers/create", fmt.Sprintf("aud-%d", id),
			customerPayload(id, fmt.Sprintf("c%d@example.com", id), c.orders, c.spent, "2026-01-05T10:00:00-05:00"))
		if r.status != 200 {
			t.Fatalf("customer %d: %d %s", id, r.status, r.body)
		}
		last = r.header.Get("X-Event-Position")
	}
	// The counts read the customers read model: it has the three first.
	a.ok(200, http.MethodGet, "/api/v1/customers?limit=1", "", "X-Wait-For-Position", last)
	count := func(filters string) float64 {
		t.Helper()
		r := a.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"n","filters":`+filters+`}}}`)
		// The audience was created after the customers: wait for it.
		got := attrs(data(a.ok(200, http.MethodGet, "/api/v1/audiences/"+data(r, t)["id"].(string), "", "X-Wait-For-Position", r.position(t)), t))
		n, ok := got["customer_count"].(float64)
		if !ok {
			t.Fatalf("audience %v has no customer_count", got)
		}
		return n
	}
	for filters, want := range map[string]float64{
		`{}`:                                    3,
		`{"lifecycle_stages":["loyal"]}`:        1,
		`{"lifecycle_stages":["new","active"]}`: 2,
		`{"min_total_spent":"100"}`:             2,
		`{"min_total_spent":"100","max_total_spent":"500"}`: 1,
		`{"lifecycle_stages":["churned"]}`:                  0,
		`{"tags":["vip"]}`:                                  0,
	} {
		if got := count(filters); got != want {
			t.Errorf("audience %s counts %v customers, want %v", filters, got, want)
		}
	}
	// Lists leave the count out (it is computed per audience on its GET).
	for _, item := range a.list("/api/v1/audiences?limit=100", last) {
		if _, ok := attrs(item)["customer_count"]; ok {
			t.Fatalf("listed audience carries customer_count: %v", item)
		}
	}
}
