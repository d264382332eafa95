package main

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAdminWebhooksPage: issue 22's outbound webhooks pages over real
// HTTP: a subscription made through the form to a local receiver shows
// its secret once, and the test event it sends verifies with it; the
// secret is then in no page and no API answer; rotate shows the new one
// once with its overlap (both signatures meanwhile); the attempt log
// shows the test delivery; a failed delivery is retried from the log;
// recover, disable and enable, settings and delete are the API's; a
// read-only user reads but has no form and is refused every post; another
// account's user gets 404.
func TestAdminWebhooksPage(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		c.TrustedProxies = []string{"127.0.0.1/32"}
		fastWebhooks(c) // the operator's --outbound-allow-private: the receiver is on loopback
	})
	tn := newTenant(t, dir, "admin-webhooks.example.com", "agency", "*")
	other := newTenant(t, dir, "admin-webhooks-other.example.com", "agency", "*")
	owner := signInAs(t, s, dir, tn.accountID, "owner@admin-webhooks.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-webhooks.example.com", "read_only", "127.0.0.1")
	stranger := signInAs(t, s, dir, other.accountID, "owner@admin-webhooks-other.example.com", "owner", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID
	var down atomic.Bool
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if down.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})

	empty := owner.get(t, base+"/webhooks")
	pageHas(t, "webhooks page", empty, "No subscription yet.", `action="`+base+`/webhooks"`,
		`name="event_types" value="customer.created"`, `name="event_types" value="*"`, `name="url"`)
	checkAdminHeaders(t, "webhooks page", empty)

	// A URL the API refuses: its message, the form kept, nothing made.
	bad := owner.post(t, base+"/webhooks", url.Values{"url": {"ftp://example.com/x"}, "description": {"Kept description"},
		"event_types": {"customer.created"}})
	if bad.status != 422 || secretOf(bad) != "" || !strings.Contains(string(bad.body), `value="Kept description"`) {
		t.Fatalf("a refused URL: %d %s", bad.status, bad.body)
	}

	made := owner.post(t, base+"/webhooks", url.Values{"url": {rc.srv.URL + "/hooks"}, "description": {"Orders to the ERP"},
		"event_types": {"customer.created", "order.created"}})
	first := secretOf(made)
	if made.status != 201 || !strings.HasPrefix(first, "whsec_") {
		t.Fatalf("create: %d %s", made.status, made.body)
	}
	api := s.get(t, "/api/v1/webhook-subscriptions", tn.token)
	list := api.json(t)["data"].([]any)
	if api.status != 200 || len(list) != 1 {
		t.Fatalf("the API's list: %d %s", api.status, api.body)
	}
	sub := list[0].(map[string]any)["id"].(string)
	page := base + "/webhooks/" + sub
	subAttrs := func() map[string]any {
		r := s.get(t, "/api/v1/webhook-subscriptions/"+sub, tn.token)
		if r.status != 200 || strings.Contains(string(r.body), "whsec_") {
			t.Fatalf("GET the subscription: %d %s", r.status, r.body)
		}
		return attrs(data(r, t))
	}
	pageHas(t, "the list after create", owner.get(t, base+"/webhooks"), rc.srv.URL+"/hooks", "customer.created, order.created",
		"Orders to the ERP", `href="`+page+`"`, "active")

	// The test event: delivered, signed with the secret shown once.
	ping := owner.post(t, page+"/test", url.Values{})
	if ping.status != 303 || !strings.Contains(ping.header.Get("Location"), "succeeded") {
		t.Fatalf("test event: %d %v", ping.status, ping.header)
	}
	got := rc.requests()
	if len(got) != 1 || got[0].typ != "ping" || !verifySignature(first, got[0].body, got[0].signature) {
		t.Fatalf("the test event received: %+v", got)
	}
	detail := owner.get(t, page)
	pageHas(t, "the subscription's page", detail, rc.srv.URL+"/hooks", "Orders to the ERP", "never rotated",
		`<code>ping</code>`, `<td class="state">succeeded</td>`, `<td class="http">200</td>`, `action="`+page+`/rotate"`,
		`action="`+page+`/test"`, `action="`+page+`/recover"`)

	// Rotate with an hour's overlap: the new secret once, the overlap said.
	rot := owner.post(t, page+"/rotate", url.Values{"overlap_seconds": {"3600"}})
	second := secretOf(rot)
	if rot.status != 200 || !strings.HasPrefix(second, "whsec_") || second == first ||
		!strings.Contains(string(rot.body), "keeps signing too until") {
		t.Fatalf("rotate: %d %s", rot.status, rot.body)
	}
	eventually(t, minEventually, "the API's overlap after rotating", func() bool {
		until, _ := subAttrs()["previous_secret_valid_until"].(string)
		u, err := time.Parse(time.RFC3339Nano, until)
		return err == nil && time.Until(u) > 50*time.Minute && time.Until(u) < 61*time.Minute
	})

	// A failed delivery (the endpoint answers 500), retried from the log.
	down.Store(true)
	failed := owner.post(t, page+"/test", url.Values{})
	if failed.status != 303 || !strings.Contains(failed.header.Get("Location"), "http_500") {
		t.Fatalf("failing test event: %d %v", failed.status, failed.header)
	}
	bad1 := deliveries(t, s, nil, tn.token, sub, "&filter[state]=failed")
	if len(bad1) != 1 {
		t.Fatalf("failed deliveries: %v", bad1)
	}
	dl := bad1[0]["id"].(string)
	log := owner.get(t, page+"?state=failed")
	pageHas(t, "the failed delivery in the log", log, `data-delivery="`+dl+`"`, "failed (http_500)", `<td class="http">500</td>`,
		`action="`+page+`/deliveries/`+dl+`/retry"`)
	down.Store(false)
	retry := owner.post(t, page+"/deliveries/"+dl+"/retry", url.Values{})
	if retry.status != 303 || !strings.HasPrefix(retry.header.Get("Location"), page+"?notice=") {
		t.Fatalf("retry: %d %v", retry.status, retry.header)
	}
	eventually(t, minEventually, "the retried delivery succeeds", func() bool {
		for _, d := range deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded") {
			if d["id"] == dl {
				return true
			}
		}
		return false
	})
	got = rc.requests()
	last := got[len(got)-1]
	if len(got) != 3 || !verifySignature(second, last.body, last.signature) || !verifySignature(first, last.body, last.signature) {
		t.Fatalf("the retried delivery during the overlap: %d requests, %q", len(got), last.signature)
	}
	pageHas(t, "the log after the retry", owner.get(t, page), `data-delivery="`+dl+`"`, "<td>2<details>")

	// Recover since a time: the API's count of deliveries queued.
	rec := owner.post(t, page+"/recover", url.Values{"since": {time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")}})
	if rec.status != 303 || !strings.Contains(rec.header.Get("Location"), "deliveries+queued") {
		t.Fatalf("recover: %d %v", rec.status, rec.header)
	}
	if r := owner.post(t, page+"/recover", url.Values{"since": {"yesterday"}}); r.status != 422 {
		t.Fatalf("recover with an unreadable time: %d", r.status)
	}

	// Disable and enable: the API's PATCH.
	if r := owner.post(t, page+"/enabled", url.Values{"enabled": {"false"}}); r.status != 303 {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	eventually(t, minEventually, "disabled on the API", func() bool {
		a := subAttrs()
		return a["enabled"] == false && a["disabled_reason"] == "merchant"
	})
	pageHas(t, "disabled", owner.get(t, base+"/webhooks"), "disabled (by a user)")
	pageHas(t, "the disabled subscription's page", owner.get(t, page), "disabled (by a user)", `name="enabled" value="true"`, ">Enable</button>")
	if r := owner.post(t, page+"/deliveries/"+dl+"/retry", url.Values{}); r.status != 409 {
		t.Fatalf("retry while disabled: %d %s", r.status, r.body)
	}
	if r := owner.post(t, page+"/enabled", url.Values{"enabled": {"true"}}); r.status != 303 {
		t.Fatalf("enable: %d %s", r.status, r.body)
	}
	// The settings: the API's PATCH.
	if r := owner.post(t, page, url.Values{"url": {rc.srv.URL + "/v2"}, "description": {"Renamed"}, "event_types": {"order.paid"}}); r.status != 303 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	eventually(t, minEventually, "changed on the API", func() bool {
		a := subAttrs()
		return a["enabled"] == true && a["description"] == "Renamed" && a["url"] == rc.srv.URL+"/v2"
	})

	// The read-only user reads the list and the page, has no form, and
	// every post is refused and changes nothing.
	for _, p := range []string{base + "/webhooks", page} {
		r := reader.get(t, p)
		if r.status != 200 || strings.Contains(string(r.body), `method="post" action="`+base) || strings.Contains(string(r.body), `name="form_key"`) {
			t.Fatalf("read-only %s: %d %s", p, r.status, r.body)
		}
		pageHas(t, "read-only "+p, r, rc.srv.URL+"/v2")
	}
	before := len(rc.requests())
	for _, p := range []string{base + "/webhooks", page, page + "/enabled", page + "/delete", page + "/rotate", page + "/test",
		page + "/recover", page + "/deliveries/" + dl + "/retry"} {
		r := reader.post(t, p, url.Values{"url": {rc.srv.URL}, "event_types": {"order.paid"}, "enabled": {"false"},
			"since": {"2026-01-01T00:00"}})
		if r.status != 403 || secretOf(r) != "" {
			t.Fatalf("read-only post %s: %d", p, r.status)
		}
	}
	if a := subAttrs(); a["enabled"] != true || a["secret_rotated_at"] == nil ||
		len(s.get(t, "/api/v1/webhook-subscriptions", tn.token).json(t)["data"].([]any)) != 1 || len(rc.requests()) != before {
		t.Fatalf("the read-only posts changed something: %v", a)
	}

	// Another account's user: 404 for the pages and the forms.
	for _, r := range []response{stranger.get(t, base+"/webhooks"), stranger.get(t, page), stranger.post(t, page+"/test", nil),
		stranger.post(t, base+"/webhooks", url.Values{"url": {rc.srv.URL}, "event_types": {"order.paid"}})} {
		if r.status != 404 {
			t.Fatalf("another account's shop: %d %s", r.status, r.body)
		}
	}
	// A subscription of another shop, through the user's own shop: 404.
	if r := stranger.get(t, "/admin/shops/"+other.shopID+"/webhooks/"+sub); r.status != 404 {
		t.Fatalf("another shop's subscription: %d", r.status)
	}

	// The secrets are never shown again: no page, no API answer.
	for _, r := range []response{owner.get(t, base+"/webhooks"), owner.get(t, page), owner.get(t, page+"?state=succeeded"),
		reader.get(t, page), s.get(t, "/api/v1/webhook-subscriptions", tn.token), s.get(t, "/api/v1/webhook-subscriptions/"+sub, tn.token),
		s.get(t, "/api/v1/webhook-subscriptions/"+sub+"/deliveries", tn.token)} {
		for _, sec := range []string{first, second} {
			if strings.Contains(string(r.body), sec) || secretOf(r) != "" {
				t.Fatalf("a secret shown again: %s", r.body)
			}
		}
	}

	// Every action is the user's in the audit history.
	audit := s.get(t, "/api/v1/audit-events?limit=100&filter[stream]=webhooksubscriptions-"+tn.shopID, tn.token)
	if audit.status != 200 || strings.Count(string(audit.body), `"user:usr_`) < 5 {
		t.Fatalf("audit of the subscription: %d %s", audit.status, audit.body)
	}

	// Delete: back to the list; the API no longer has it.
	del := owner.post(t, page+"/delete", url.Values{})
	if del.status != 303 || !strings.HasPrefix(del.header.Get("Location"), base+"/webhooks?notice=") {
		t.Fatalf("delete: %d %v", del.status, del.header)
	}
	eventually(t, minEventually, "deleted on the API", func() bool {
		return s.get(t, "/api/v1/webhook-subscriptions/"+sub, tn.token).status == 404
	})
	if r := owner.get(t, page); r.status != 404 {
		t.Fatalf("the deleted subscription's page: %d", r.status)
	}
}
