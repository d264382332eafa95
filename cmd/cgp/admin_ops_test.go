package main

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// apiStatus is a campaign's or journey's status as the API shows it.
func apiStatus(t *testing.T, s *testServer, token, path string) string {
	t.Helper()
	r := s.get(t, path, token)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	st, _ := attrs(data(r, t))["status"].(string)
	return st
}

// TestAdminCampaignsPage: issue 22's campaigns and journeys pages over real
// HTTP: the list and each one's page show their status and metrics; a
// draft campaign is launched, then paused and resumed through the forms
// and the API says so each time; a journey is paused and resumed the
// same way; a refused action (pausing a paused journey) is the API's 409
// on the page; a read-only user reads the pages, sees no form, and is
// refused a post (403) that changes nothing; another account's user gets
// 404.
func TestAdminCampaignsPage(t *testing.T) {
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) { c.TrustedProxies = []string{"127.0.0.1/32"} })
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "admin-campaigns.example.com", "agency", "4101")
	waitForToken(t, s, wt.tenant)
	waDeliver(t, s, v, rm, wt, "template_rejected")
	api := catalogClient{t: t, s: s, v: v, token: wt.token}
	aud := data(api.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"Everyone"}}}`), t)["id"].(string)
	cam := data(api.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody("Winter sale", aud, "whatsapp", rejectedTemplate)), t)["id"].(string)
	jrn := data(api.ok(201, http.MethodPost, "/api/v1/journeys", journeyBody("Review request", "orders/fulfilled", "")), t)["id"].(string)

	owner := signInAs(t, s, dir, wt.accountID, "owner@admin-campaigns.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, wt.accountID, "reader@admin-campaigns.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + wt.shopID

	var list response
	eventually(t, 10*time.Second, "the campaign and the journey on the list", func() bool {
		list = owner.get(t, base+"/campaigns")
		return strings.Contains(string(list.body), "Winter sale") && strings.Contains(string(list.body), "Review request")
	})
	pageHas(t, "campaigns page", list, "Delivery rate", "Open rate", "Opened", "Enrollments", `<td class="status">draft</td>`,
		`action="`+base+`/campaigns/`+cam+`/launch"`, `action="`+base+`/journeys/`+jrn+`/pause"`, `href="`+base+`/campaigns/`+cam+`"`)
	checkAdminHeaders(t, "campaigns page", list)

	// Launch the draft from the list: back to the list with a notice; the
	// rejected template makes it await approval.
	launched := owner.post(t, base+"/campaigns/"+cam+"/launch", url.Values{"return": {"list"}})
	if launched.status != 303 || !strings.HasPrefix(launched.header.Get("Location"), base+"/campaigns?notice=") {
		t.Fatalf("launch: %d %v %s", launched.status, launched.header, launched.body)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/campaigns/"+cam); st != domain.CampaignStatusAwaitingApproval {
		t.Fatalf("after launch the API says %q", st)
	}
	// Pause from its page: back to its page; the API says paused.
	paused := owner.post(t, base+"/campaigns/"+cam+"/pause", url.Values{})
	if paused.status != 303 || !strings.HasPrefix(paused.header.Get("Location"), base+"/campaigns/"+cam+"?notice=") {
		t.Fatalf("pause: %d %v %s", paused.status, paused.header, paused.body)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/campaigns/"+cam); st != domain.CampaignStatusPaused {
		t.Fatalf("after pause the API says %q", st)
	}
	page := owner.get(t, paused.header.Get("Location"))
	pageHas(t, "campaign page", page, "Campaign Winter sale", `role="status"`, "is paused", "paused: manual",
		"Recipients", "Sent", "Delivered", "Opened (read)", "Failed", "Opted out", "Delivery rate", "Open rate", "Failure rate", "Opt-out rate",
		`action="`+base+`/campaigns/`+cam+`/resume"`)

	// The read-only user reads, sees no form, and cannot resume.
	ro := reader.get(t, base+"/campaigns/"+cam)
	if ro.status != 200 || strings.Contains(string(ro.body), "/resume\"") || !strings.Contains(string(ro.body), "Delivery rate") {
		t.Fatalf("read-only campaign page: %d %s", ro.status, ro.body)
	}
	if r := reader.get(t, base+"/campaigns"); r.status != 200 || strings.Contains(string(r.body), `method="post"`+" action=\""+base) {
		t.Fatalf("read-only campaigns page: %d %s", r.status, r.body)
	}
	if r := reader.post(t, base+"/campaigns/"+cam+"/resume", url.Values{}); r.status != 403 {
		t.Fatalf("read-only resume: %d", r.status)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/campaigns/"+cam); st != domain.CampaignStatusPaused {
		t.Fatalf("after a read-only resume the API says %q", st)
	}
	if r := owner.post(t, base+"/campaigns/"+cam+"/resume", url.Values{}); r.status != 303 {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/campaigns/"+cam); st != domain.CampaignStatusAwaitingApproval {
		t.Fatalf("after resume the API says %q", st)
	}

	// The journey: pause, a second pause refused by the API (409, on the
	// page), a read-only resume refused, resume.
	if r := owner.post(t, base+"/journeys/"+jrn+"/pause", url.Values{"return": {"list"}}); r.status != 303 ||
		!strings.HasPrefix(r.header.Get("Location"), base+"/campaigns?notice=") {
		t.Fatalf("journey pause: %d %v", r.status, r.header)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/journeys/"+jrn); st != domain.JourneyStatusPaused {
		t.Fatalf("after pause the API says %q", st)
	}
	again := owner.post(t, base+"/journeys/"+jrn+"/pause", url.Values{})
	pageHas(t, "second pause", again, `role="alert"`, "could not be paused")
	if again.status != 409 {
		t.Fatalf("second pause: %d", again.status)
	}
	if r := reader.post(t, base+"/journeys/"+jrn+"/resume", url.Values{}); r.status != 403 {
		t.Fatalf("read-only journey resume: %d", r.status)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/journeys/"+jrn); st != domain.JourneyStatusPaused {
		t.Fatalf("after a read-only resume the API says %q", st)
	}
	jp := reader.get(t, base+"/journeys/"+jrn)
	pageHas(t, "read-only journey page", jp, "Journey Review request", `<dd class="enrollment-count">0</dd>`, "Recent enrollments", "No enrollment yet", "orders/fulfilled")
	if strings.Contains(string(jp.body), "/resume\"") {
		t.Fatalf("a resume form for the read-only user: %s", jp.body)
	}
	if r := owner.post(t, base+"/journeys/"+jrn+"/resume", url.Values{}); r.status != 303 {
		t.Fatalf("journey resume: %d %s", r.status, r.body)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/journeys/"+jrn); st != domain.JourneyStatusActive {
		t.Fatalf("after resume the API says %q", st)
	}

	// Unknown ids and another account's user: 404.
	if r := owner.get(t, base+"/campaigns/cam_doesnotexist"); r.status != 404 {
		t.Fatalf("unknown campaign: %d", r.status)
	}
	if r := owner.post(t, base+"/journeys/jrn_doesnotexist/pause", url.Values{}); r.status != 404 {
		t.Fatalf("unknown journey: %d", r.status)
	}
	other := newTenant(t, dir, "other-admin-campaigns.example.com", "agency", "*")
	stranger := signInAs(t, s, dir, other.accountID, "owner@other-admin-campaigns.example.com", "owner", "127.0.0.1")
	for _, p := range []string{base + "/campaigns", base + "/campaigns/" + cam, base + "/journeys/" + jrn} {
		if r := stranger.get(t, p); r.status != 404 || strings.Contains(string(r.body), "Winter sale") {
			t.Fatalf("another account's %s: %d", p, r.status)
		}
	}
	if r := stranger.post(t, base+"/journeys/"+jrn+"/pause", url.Values{}); r.status != 404 {
		t.Fatalf("another account's pause: %d", r.status)
	}
	if st := apiStatus(t, s, wt.token, "/api/v1/journeys/"+jrn); st != domain.JourneyStatusActive {
		t.Fatalf("after another account's pause the API says %q", st)
	}
}

// TestAdminGDPRPage: a customers/data_request delivered over the signed
// commerce webhook appears on the GDPR page with its kind, the customer as
// the API names it, status and received time, for any user of the
// account; another account's user gets 404.
func TestAdminGDPRPage(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "admin-gdpr.example.com", "agency", "*")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-gdpr.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID

	pageHas(t, "empty GDPR page", reader.get(t, base+"/gdpr"), "No GDPR request received")
	s.deliver(t, tn, shopify.TopicCustomersDataRequest, "dlv-admin-gdpr", fixture(t, shopify.TopicCustomersDataRequest))
	customer := domain.CustomerIDFromExternal(tn.shopID, drCustomer)
	var got response
	eventually(t, 10*time.Second, "the data request on the GDPR page", func() bool {
		got = reader.get(t, base+"/gdpr")
		return strings.Contains(string(got.body), customer)
	})
	if got.status != 200 {
		t.Fatalf("GDPR page: %d", got.status)
	}
	pageHas(t, "GDPR page", got, "Data request", "customers/data_request", `<code class="customer">`+customer+`</code>`, " UTC")
	// The page says what the API says (the exporter may attempt between
	// two reads: they are compared until they agree).
	eventually(t, time.Minute, "the page's status is the API's", func() bool {
		r := s.get(t, "/api/v1/gdpr-requests", tn.token)
		rows := r.json(t)["data"].([]any)
		if len(rows) != 1 {
			t.Fatalf("the API's GDPR requests: %s", r.body)
		}
		status := attrs(rows[0].(map[string]any))["status"].(string)
		got = reader.get(t, base+"/gdpr")
		again := attrs(s.get(t, "/api/v1/gdpr-requests", tn.token).json(t)["data"].([]any)[0].(map[string]any))["status"]
		return again == status && strings.Contains(string(got.body), `<td class="status">`+status)
	})

	// A customers/redact is listed too: pending, then completed once the
	// customer is erased; the exporter does not take it.
	red := s.deliver(t, tn, shopify.TopicCustomersRedact, "dlv-admin-gdpr-redact", fixture(t, shopify.TopicCustomersRedact))
	var redact map[string]any
	eventually(t, time.Minute, "the redaction completed in the API", func() bool {
		r := s.get(t, "/api/v1/gdpr-requests", tn.token, "X-Wait-For-Position", fmt.Sprint(red))
		for _, x := range r.json(t)["data"].([]any) {
			if at := attrs(x.(map[string]any)); at["kind"] == "customers/redact" {
				redact = at
			}
		}
		return redact != nil && redact["status"] == "completed"
	})
	if redact["completed_at"] == nil || redact["attempts"].(float64) != 0 || redact["channel"] != nil {
		t.Fatalf("the redaction: %v", redact)
	}
	pageHas(t, "the redaction on the page", reader.get(t, base+"/gdpr"), "Redact a customer", "customers/redact")

	other := newTenant(t, dir, "other-admin-gdpr.example.com", "agency", "*")
	stranger := signInAs(t, s, dir, other.accountID, "owner@other-admin-gdpr.example.com", "owner", "127.0.0.1")
	if r := stranger.get(t, base+"/gdpr"); r.status != 404 || strings.Contains(string(r.body), customer) {
		t.Fatalf("another account's GDPR page: %d", r.status)
	}
	if r := reader.get(t, base+"/gdpr?cursor=nonsense"); r.status != 400 {
		t.Fatalf("a bad cursor: %d", r.status)
	}
}

var auditActor = regexp.MustCompile(`<code class="actor">([^<]*)</code>`)

// TestAdminAuditPage: the audit page lists the shop's events; filtered by
// the actor of a UI action (user:<id>) it shows only that user's events,
// with the user's e-mail; the time filters are sent to the API in RFC
// 3339 (an empty range shows nothing, a reversed one is the API's 400 on
// the page); the chain verification says verified, for a read-only user
// too; another account's user gets 404.
func TestAdminAuditPage(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "admin-audit.example.com", "agency", "*")
	waitForToken(t, s, tn)
	owner := signInAs(t, s, dir, tn.accountID, "owner@admin-audit.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-audit.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID

	created := s.post(t, "/api/v1/journeys", tn.token, journeyBody("Audited", "orders/fulfilled", ""))
	if created.status != 201 {
		t.Fatalf("create journey: %d %s", created.status, created.body)
	}
	jrn := data(created, t)["id"].(string)
	eventually(t, 10*time.Second, "the journey readable", func() bool {
		return s.get(t, "/api/v1/journeys/"+jrn, tn.token).status == 200
	})
	if r := owner.post(t, base+"/journeys/"+jrn+"/pause", url.Values{}); r.status != 303 {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	if r := reader.post(t, base+"/journeys/"+jrn+"/resume", url.Values{}); r.status != 403 {
		t.Fatalf("read-only resume: %d", r.status)
	}

	// The user's id is the actor of the pause in the API's history.
	var actor string
	eventually(t, 10*time.Second, "the pause in the audit history", func() bool {
		r := s.get(t, "/api/v1/audit-events?filter[type]=JourneyPaused", tn.token)
		rows, _ := r.json(t)["data"].([]any)
		if len(rows) != 1 {
			return false
		}
		actor, _ = attrs(rows[0].(map[string]any))["actor"].(string)
		return true
	})
	if !strings.HasPrefix(actor, "user:") {
		t.Fatalf("the pause's actor: %q", actor)
	}

	all := reader.get(t, base+"/audit")
	pageHas(t, "audit page", all, "JourneyCreated", "JourneyPaused", "journey-"+jrn, `<label for="audit-actor">`, "Verify the chain")
	actors := map[string]bool{}
	for _, m := range auditActor.FindAllStringSubmatch(string(all.body), -1) {
		actors[m[1]] = true
	}
	if !actors[actor] || len(actors) < 2 {
		t.Fatalf("the page's actors %v, want %s and others", actors, actor)
	}
	checkAdminHeaders(t, "audit page", all)

	mine := reader.get(t, base+"/audit?"+url.Values{"actor": {actor}}.Encode())
	pageHas(t, "filtered by actor", mine, "JourneyPaused", `<span class="actor-email">owner@admin-audit.example.com</span>`, `value="`+actor+`"`)
	ms := auditActor.FindAllStringSubmatch(string(mine.body), -1)
	if len(ms) == 0 {
		t.Fatalf("no event of %s: %s", actor, mine.body)
	}
	for _, m := range ms {
		if m[1] != actor {
			t.Fatalf("an event of %s when filtered by %s", m[1], actor)
		}
	}
	if strings.Contains(string(mine.body), "JourneyCreated") {
		t.Fatal("the token's event shown when filtered by the user")
	}

	// Time filters from datetime inputs.
	future := time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04")
	if r := reader.get(t, base+"/audit?from="+future); r.status != 200 || !strings.Contains(string(r.body), "No event matches") {
		t.Fatalf("from the future: %d %s", r.status, r.body)
	}
	past := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")
	pageHas(t, "the last hour", reader.get(t, base+"/audit?"+url.Values{"from": {past}, "to": {future}, "type": {"JourneyPaused"}}.Encode()), "JourneyPaused")
	bad := reader.get(t, base+"/audit?"+url.Values{"from": {future}, "to": {past}}.Encode())
	if bad.status != 400 || !strings.Contains(string(bad.body), `role="alert"`) || !strings.Contains(string(bad.body), `value="`+future+`"`) {
		t.Fatalf("a reversed range: %d %s", bad.status, bad.body)
	}

	// Pagination: one event a page is not offered, but every event is
	// reachable through the next links.
	seen := 0
	next := base + "/audit?order=oldest"
	for i := 0; next != "" && i < 20; i++ {
		p := reader.get(t, next)
		seen += len(auditActor.FindAllStringSubmatch(string(p.body), -1))
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]+)">More events</a>`).FindStringSubmatch(string(p.body)); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if seen != len(auditActor.FindAllStringSubmatch(string(all.body), -1)) {
		t.Fatalf("%d events oldest first, %d newest first", seen, len(auditActor.FindAllStringSubmatch(string(all.body), -1)))
	}

	// The chain verification, for any user of the shop: verified up to
	// the shop's last event.
	last := regexp.MustCompile(`<tr>\n<td>(\d+)</td>`).FindStringSubmatch(string(all.body))[1]
	for _, u := range []*adminUser{owner, reader} {
		v := u.get(t, base+"/audit/verify")
		pageHas(t, "verification", v, `class="notice verified"`, "Verified: the chain is intact up to position "+last)
		if v.status != 200 {
			t.Fatalf("verify: %d", v.status)
		}
	}

	other := newTenant(t, dir, "other-admin-audit.example.com", "agency", "*")
	stranger := signInAs(t, s, dir, other.accountID, "owner@other-admin-audit.example.com", "owner", "127.0.0.1")
	for _, p := range []string{base + "/audit", base + "/audit/verify"} {
		if r := stranger.get(t, p); r.status != 404 || strings.Contains(string(r.body), jrn) {
			t.Fatalf("another account's %s: %d", p, r.status)
		}
	}
}
