package main

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/internal/smtptest"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/templateholds"
)

// TestPauseResumeEndToEnd pauses and resumes campaigns and journeys over
// HTTP, by hand and through signed WhatsApp template status webhooks (the
// template reactor), across a restart of the server.
func TestPauseResumeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	// The campaigns have a recipient whose messages never finish while the
	// test runs (the WhatsApp API holds every request, the SMTP relay
	// refuses the recipient for now and the retry is an hour away), so a
	// launched campaign stays sending: the test is about the reactions to
	// template events, not about sending.
	api := whatsapptest.New(whatsapptest.Options{})
	hold := make(chan struct{})
	api.FailWith(func(whatsapptest.Sent) *whatsapptest.Failure { <-hold; return nil })
	t.Cleanup(func() { close(hold); api.Close() })
	var relay *smtptest.Server
	mod := func(c *Config) {
		c.WhatsAppAPIURL, c.OutboundAllowPrivate = api.URL, true
		if relay != nil {
			c.SMTPAddr, c.SMTPFrom = relay.Addr, "news@shop.example.com"
		}
		c.Test.Sending.Schedule = []time.Duration{time.Hour}
	}
	s, relay := sendingServer(t, dir, mod)
	relay.RefuseRecipients(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"})
	rm := messagingDB(t, dir)
	db := readModels(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "pause.example.com", "agency", "4101")
	other := newTenant(t, dir, "other-pause.example.com", "agency", "campaigns:read,campaigns:write,customers:write,journeys:read,journeys:write")
	readOnly := cli(t, dir, "tokens", "create", "--shop", wt.shopID, "--scopes", "campaigns:read,journeys:read")
	waitForToken(t, s, other)
	waitForToken(t, s, tenant{token: readOnly["token"].(string), position: uint64(readOnly["position"].(float64))})
	var a, b, ro catalogClient
	clients := func(s *testServer) {
		a = catalogClient{t: t, s: s, v: v, token: wt.token}
		b = catalogClient{t: t, s: s, v: v, token: other.token}
		ro = catalogClient{t: t, s: s, v: v, token: readOnly["token"].(string)}
	}
	clients(s)

	// settle waits until the template reactor handled the log up to pos
	// (so whatever it appended for it is in the log), then writes in the
	// other shop: a read waiting for that write's position sees the
	// reactor's changes.
	settle := func(pos uint64) string {
		t.Helper()
		waitProjected(t, db, templateholds.Name, pos)
		return b.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"sentinel"}}}`).position(t)
	}
	// template posts a template status fixture, its entry time set to at
	// (a new time is a new template event), and returns its position.
	template := func(name string, at int64) uint64 {
		t.Helper()
		body := waFixture(t, name, wt.waba)
		for _, old := range []string{"1751247548", "1751334011"} {
			body = bytes.Replace(body, []byte(`"time": `+old), []byte(`"time": `+strconv.FormatInt(at, 10)), 1)
		}
		r := waPost(t, s, v, wt.appSecret, body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		pos, _ := strconv.ParseUint(r.position(t), 10, 64)
		waitMessaging(t, rm, pos)
		return pos
	}
	campaignsNow := func(pos string) map[string]map[string]any {
		t.Helper()
		out := map[string]map[string]any{}
		for _, c := range a.list("/api/v1/campaigns?limit=100", pos) {
			out[c["id"].(string)] = attrs(c)
		}
		return out
	}
	journeysNow := func(pos string) map[string]map[string]any {
		t.Helper()
		out := map[string]map[string]any{}
		for _, j := range a.list("/api/v1/journeys?limit=100", pos) {
			out[j["id"].(string)] = attrs(j)
		}
		return out
	}
	// counts counts the log's events by type, but for the sentinels
	// settle writes.
	counts := func() map[string]int {
		n := countTypes(readLog(t, dir))
		delete(n, "AudienceCreated")
		return n
	}

	template("template_approved", 1751247548)
	template("template_rejected", 1751247548)
	// One customer, who consented to e-mail (its platform state) and to
	// WhatsApp (an API decision).
	cr := s.webhook(t, wt.tenant, "customers/create", "pause-c-1", stateCustomer(4242, "held@example.com", "subscribed", "not_subscribed"))
	if cr.status != http.StatusOK {
		t.Fatalf("customers/create: %d %s", cr.status, cr.body)
	}
	heldID := customerIDs(a, cr.position(t))["held@example.com"]
	pos0 := a.ok(201, http.MethodPost, "/api/v1/customers/"+heldID+"/consents",
		`{"data":{"attributes":{"channel":"whatsapp","state":"subscribed"}}}`).position(t)
	waitProjected(t, db, "customers", mustUint(t, pos0))

	// Campaigns of the approved template (order_confirmation): two sending,
	// one kept in draft; an e-mail campaign; one of a template never
	// approved.
	aud := data(a.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"Everyone"}}}`), t)["id"].(string)
	cams := map[string]string{}
	for _, c := range []struct{ name, channel, template string }{
		{"Auto", "whatsapp", approvedTemplate}, {"Manual", "whatsapp", approvedTemplate}, {"Later", "whatsapp", approvedTemplate},
		{"Draft", "whatsapp", approvedTemplate}, {"Mail", "email", ""}, {"Unapproved", "whatsapp", rejectedTemplate},
	} {
		cams[c.name] = data(a.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody(c.name, aud, c.channel, c.template)), t)["id"].(string)
	}
	campaign := func(c catalogClient, name, action string, headers ...string) response {
		t.Helper()
		return c.call(http.MethodPost, "/api/v1/campaigns/"+cams[name]+"/"+action, "", headers...)
	}
	for _, name := range []string{"Auto", "Manual", "Mail", "Unapproved"} {
		if r := campaign(a, name, "launch"); r.status != 200 {
			t.Fatalf("launch %s: %d %s", name, r.status, r.body)
		}
	}

	// Journeys whose WhatsApp step sends order_confirmation, by name.
	steps := `[{"type":"send_message","channel":"whatsapp","template":"order_confirmation"}]`
	jrns := map[string]string{}
	for _, j := range []struct{ name, status string }{{"Auto", "active"}, {"Manual", "active"}, {"Draft", "draft"}} {
		body := fmt.Sprintf(`{"data":{"attributes":{"name":%q,"trigger":"orders/fulfilled","status":%q,"steps":%s}}}`, j.name, j.status, steps)
		jrns[j.name] = data(a.ok(201, http.MethodPost, "/api/v1/journeys", body), t)["id"].(string)
	}
	journey := func(c catalogClient, name, action string, headers ...string) response {
		t.Helper()
		return c.call(http.MethodPost, "/api/v1/journeys/"+jrns[name]+"/"+action, "", headers...)
	}

	// Manual pause: 200 with the resource, beta, the position; the
	// Idempotency-Key replays it.
	first := campaign(a, "Manual", "pause", "Idempotency-Key", "pause-1")
	again := campaign(a, "Manual", "pause", "Idempotency-Key", "pause-1")
	if first.status != 200 || first.header.Get("X-Service-Stability") != "beta" || first.header.Get("X-Event-Position") == "" ||
		attrs(data(first, t))["status"] != "paused" || attrs(data(first, t))["paused_reason"] != "manual" || attrs(data(first, t))["paused_at"] == nil ||
		again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("pause: %d %s / replay %d %s", first.status, first.body, again.status, again.body)
	}
	r := journey(a, "Manual", "pause")
	if r.status != 200 || r.header.Get("X-Service-Stability") != "beta" || attrs(data(r, t))["status"] != "paused" || attrs(data(r, t))["paused_reason"] != "manual" {
		t.Fatalf("journey pause: %d %s", r.status, r.body)
	}

	// Transitions not allowed: 409 conflict, nothing appended.
	before := counts()
	for _, c := range []struct{ kind, name, action string }{
		{"campaigns", "Manual", "pause"}, {"campaigns", "Draft", "pause"}, {"campaigns", "Auto", "resume"}, {"campaigns", "Draft", "resume"},
		{"journeys", "Manual", "pause"}, {"journeys", "Draft", "pause"}, {"journeys", "Auto", "resume"}, {"journeys", "Draft", "resume"},
	} {
		ids := cams
		if c.kind == "journeys" {
			ids = jrns
		}
		a.fails(409, "conflict", "", http.MethodPost, "/api/v1/"+c.kind+"/"+ids[c.name]+"/"+c.action, "")
	}
	// A paused campaign still cannot be launched, nor one launched twice.
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/campaigns/"+cams["Manual"]+"/launch", "")
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/campaigns/"+cams["Auto"]+"/launch", "")
	// Another shop's, or no such id: 404.
	for _, path := range []string{"/api/v1/campaigns/" + cams["Auto"] + "/pause", "/api/v1/campaigns/" + cams["Manual"] + "/resume",
		"/api/v1/journeys/" + jrns["Auto"] + "/pause", "/api/v1/journeys/" + jrns["Manual"] + "/resume"} {
		b.fails(404, "not_found", "", http.MethodPost, path, "")
	}
	a.fails(404, "not_found", "", http.MethodPost, "/api/v1/campaigns/cam_doesnotexist/pause", "")
	a.fails(404, "not_found", "", http.MethodPost, "/api/v1/journeys/jrn_doesnotexist/resume", "")
	a.fails(404, "not_found", "", http.MethodPost, "/api/v1/journeys/"+cams["Auto"]+"/pause", "")
	// Scopes.
	for path, scope := range map[string]string{
		"/api/v1/campaigns/" + cams["Auto"] + "/pause": "campaigns:write", "/api/v1/campaigns/" + cams["Manual"] + "/resume": "campaigns:write",
		"/api/v1/journeys/" + jrns["Auto"] + "/pause": "journeys:write", "/api/v1/journeys/" + jrns["Manual"] + "/resume": "journeys:write",
	} {
		if d := ro.fails(403, "scope_required", "", http.MethodPost, path, ""); d["required_scope"] != scope {
			t.Fatalf("%s: required_scope %v, want %s", path, d["required_scope"], scope)
		}
	}
	if after := counts(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused transitions appended events: %v, before %v", after, before)
	}

	// A manual resume of a campaign whose template is not approved waits
	// for approval.
	campaign(a, "Unapproved", "pause")
	if r := campaign(a, "Unapproved", "resume"); r.status != 200 || attrs(data(r, t))["status"] != "awaiting_approval" || attrs(data(r, t))["paused_reason"] != nil {
		t.Fatalf("resume with an unknown template: %d %s", r.status, r.body)
	}

	// The template is paused: the sending campaign and the active journey
	// using it are paused; the manual pauses, the draft and the e-mail
	// campaign are left alone.
	pos := settle(template("template_paused", 1751334011))
	cs, js := campaignsNow(pos), journeysNow(pos)
	for name, want := range map[string]string{"Auto": "paused template_paused", "Manual": "paused manual", "Draft": "draft <nil>",
		"Later": "draft <nil>", "Mail": "sending <nil>", "Unapproved": "awaiting_approval <nil>"} {
		if got := fmt.Sprint(cs[cams[name]]["status"], " ", cs[cams[name]]["paused_reason"]); got != want {
			t.Errorf("campaign %s after PAUSED: %s, want %s", name, got, want)
		}
	}
	for name, want := range map[string]string{"Auto": "paused template_paused", "Manual": "paused manual", "Draft": "draft <nil>"} {
		if got := fmt.Sprint(js[jrns[name]]["status"], " ", js[jrns[name]]["paused_reason"]); got != want {
			t.Errorf("journey %s after PAUSED: %s, want %s", name, got, want)
		}
	}
	if got := a.list("/api/v1/campaigns?limit=1&filter[status]=paused&sort=created_at", pos); len(got) != 2 || got[0]["id"] != cams["Auto"] {
		t.Errorf("filter[status]=paused: %v", got)
	}
	if got := a.list("/api/v1/journeys?limit=1&filter[status]=paused&sort=created_at", pos); len(got) != 2 || got[0]["id"] != jrns["Auto"] {
		t.Errorf("journeys filter[status]=paused: %v", got)
	}
	// Launched while its template is paused, a campaign waits for approval.
	if r := campaign(a, "Later", "launch"); r.status != 200 || attrs(data(r, t))["status"] != "awaiting_approval" {
		t.Fatalf("launch while paused: %d %s", r.status, r.body)
	}

	// The PAUSED webhook redelivered appends nothing, not even after a
	// restart of the server.
	paused := counts()
	settle(template("template_paused", 1751334011))
	if got := counts(); fmt.Sprint(got) != fmt.Sprint(paused) {
		t.Fatalf("redelivered PAUSED: %v, before %v", got, paused)
	}
	if paused["CampaignPaused"] != 3 || paused["JourneyPaused"] != 2 {
		t.Fatalf("pauses: %d campaigns, %d journeys, want 3 and 2", paused["CampaignPaused"], paused["JourneyPaused"])
	}

	// A decision-intelligence run names the campaigns under way whose
	// template is paused, and the journey the template paused.
	evs := readLog(t, dir)
	waitProjected(t, db, "campaigns", uint64(evs[len(evs)-1].Position))
	out := cli(t, dir, "di", "run", "--shop", wt.shopID)
	recs := toMaps(out["recommendations"])
	if len(recs) != 1 || recs[0]["kind"] != "campaigns_blocked_by_template" {
		t.Fatalf("di run: %v", out)
	}
	var blocked []string
	for _, it := range toMaps(recs[0]["items"]) {
		blocked = append(blocked, fmt.Sprint(it["type"], " ", it["id"]))
	}
	slices.Sort(blocked)
	want := []string{"campaign " + cams["Auto"], "campaign " + cams["Later"], "campaign " + cams["Manual"], "campaign " + cams["Unapproved"],
		"journey " + jrns["Auto"]}
	slices.Sort(want)
	if !slices.Equal(blocked, want) || recs[0]["figures"].(map[string]any)["journeys"] != 1.0 {
		t.Fatalf("blocked by the template: %v, want %v (%v)", blocked, want, recs[0])
	}

	// A paused journey enrolls nobody.
	order := func(id, delivery string) uint64 {
		t.Helper()
		body := withField(t, fixture(t, shopify.TopicOrdersFulfilled), "id", "5984321190041", id)
		return s.deliver(t, wt.tenant, shopify.TopicOrdersFulfilled, delivery, body)
	}
	enrolled := func(name string, pos uint64) int {
		t.Helper()
		waitProjected(t, db, "journeys", pos)
		p := b.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"sentinel"}}}`).position(t)
		return len(a.list("/api/v1/journeys/"+jrns[name]+"/enrollments?limit=100", p))
	}
	if n := enrolled("Auto", order("5984321190051", "dlv-pause-1")); n != 0 {
		t.Fatalf("a paused journey enrolled %d customers", n)
	}

	// Restart: the reactor goes on from its checkpoint.
	s.stop()
	s = startServerWith(t, dir, mod)
	clients(s)
	waitForToken(t, s, tenant{token: wt.token, position: wt.position})

	// The template is approved again: what it paused resumes, the
	// campaign waiting for it is unblocked; manual pauses stay.
	pos = settle(template("template_approved", 1751400000))
	cs, js = campaignsNow(pos), journeysNow(pos)
	for name, want := range map[string]string{"Auto": "sending <nil>", "Later": "sending <nil>", "Manual": "paused manual",
		"Draft": "draft <nil>", "Unapproved": "awaiting_approval <nil>"} {
		if got := fmt.Sprint(cs[cams[name]]["status"], " ", cs[cams[name]]["paused_reason"]); got != want {
			t.Errorf("campaign %s after APPROVED: %s, want %s", name, got, want)
		}
	}
	if cs[cams["Auto"]]["paused_at"] != nil {
		t.Errorf("a resumed campaign keeps paused_at %v", cs[cams["Auto"]]["paused_at"])
	}
	for name, want := range map[string]string{"Auto": "active <nil>", "Manual": "paused manual", "Draft": "draft <nil>"} {
		if got := fmt.Sprint(js[jrns[name]]["status"], " ", js[jrns[name]]["paused_reason"]); got != want {
			t.Errorf("journey %s after APPROVED: %s, want %s", name, got, want)
		}
	}
	approved := counts()
	settle(template("template_approved", 1751400000))
	if got := counts(); fmt.Sprint(got) != fmt.Sprint(approved) {
		t.Fatalf("redelivered APPROVED: %v, before %v", got, approved)
	}
	if approved["CampaignResumed"] != 2 || approved["CampaignApprovalGranted"] != 1 || approved["JourneyResumed"] != 1 {
		t.Fatalf("resumes: %d campaigns (1 manual), %d unblocked, %d journeys", approved["CampaignResumed"],
			approved["CampaignApprovalGranted"], approved["JourneyResumed"])
	}

	// Resumed, the journey enrolls again.
	if n := enrolled("Auto", order("5984321190052", "dlv-pause-2")); n != 1 {
		t.Fatalf("a resumed journey enrolled %d customers, want 1", n)
	}

	// Manual resumes of the manual pauses, with the template approved.
	if r := campaign(a, "Manual", "resume"); r.status != 200 || attrs(data(r, t))["status"] != "sending" || attrs(data(r, t))["paused_at"] != nil {
		t.Fatalf("campaign resume: %d %s", r.status, r.body)
	}
	if r := journey(a, "Manual", "resume"); r.status != 200 || attrs(data(r, t))["status"] != "active" || attrs(data(r, t))["paused_reason"] != nil {
		t.Fatalf("journey resume: %d %s", r.status, r.body)
	}
	a.fails(409, "conflict", "", http.MethodPost, "/api/v1/journeys/"+jrns["Manual"]+"/resume", "")
}
