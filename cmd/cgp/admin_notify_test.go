package main

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// unreadIs fails unless the page's header shows n unread notifications.
func unreadIs(t *testing.T, what string, r response, n int) {
	t.Helper()
	pageHas(t, what, r, fmt.Sprintf(`id="unread-count">%d<`, n))
}

// followed fetches the page a form's 303 sends the browser to.
func followed(t *testing.T, u *adminUser, r response, what string) response {
	t.Helper()
	loc := r.header.Get("Location")
	if r.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/admin/shops/") {
		t.Fatalf("%s: %d %s %s", what, r.status, loc, r.body)
	}
	return u.get(t, loc)
}

// TestAdminNotificationsPage: issue 22's notifications page over real
// HTTP: a P1 notification (a template paused) is in the list, filtered by
// severity and state, with the header's unread count 1; marked read from
// the page the count is 0 and the API says read; the settings changed
// through the form are what GET /api/v1/shop answers, a bad one is shown
// with the form kept and changes nothing; a read-only user sees no form
// and is refused every post; another account's shop is 404.
func TestAdminNotificationsPage(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	v := openapitest.NewValidator(t)
	rm := messagingDB(t, dir)
	wt := connectWhatsApp(t, s, rm, "admin-notify.example.com", "agency", "7301")
	waitForToken(t, s, wt.tenant)
	owner := signInAs(t, s, dir, wt.accountID, "owner@admin-notify.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, wt.accountID, "reader@admin-notify.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + wt.shopID

	empty := owner.get(t, base+"/notifications")
	unreadIs(t, "before any anomaly", empty, 0)
	pageHas(t, "the empty list", empty, "No notification", `name="emails"`, `name="channels_P1" value="email" checked`)
	checkAdminHeaders(t, "notifications page", empty)

	deliverForAnomalies(t, s, v, rm, wt, waFixture(t, "template_paused", wt.waba))
	var id string
	eventually(t, 30*time.Second, "the P1 notification in the API", func() bool {
		r := s.get(t, "/api/v1/notifications", wt.token)
		l, _ := r.json(t)["data"].([]any)
		if len(l) == 1 {
			id = l[0].(map[string]any)["id"].(string)
		}
		return id != ""
	})
	var list response
	eventually(t, 30*time.Second, "the P1 notification on the page", func() bool {
		list = owner.get(t, base+"/notifications")
		return strings.Contains(string(list.body), `data-notification="`+id+`"`)
	})
	unreadIs(t, "one P1", list, 1)
	pageHas(t, "the list", list, `severity-P1">P1<`, domain.AnomalyTemplatePaused, "order_confirmation", "<strong>unread</strong>",
		`action="`+base+`/notifications/`+id+`/read"`)
	// The GET form's filters are the API's.
	if r := owner.get(t, base+"/notifications?severity=P2"); strings.Contains(string(r.body), `data-notification="`+id+`"`) {
		t.Fatalf("P2 only shows the P1: %s", r.body)
	}
	pageHas(t, "P1 unread", owner.get(t, base+"/notifications?severity=P1&unread=true&kind="+domain.AnomalyTemplatePaused),
		`data-notification="`+id+`"`, `<option value="P1" selected>`)
	if r := owner.get(t, base+"/notifications?unread=false"); strings.Contains(string(r.body), `data-notification="`+id+`"`) {
		t.Fatalf("read only shows the unread one: %s", r.body)
	}
	// A filter the API refuses: its error, with its status.
	if r := owner.get(t, base+"/notifications?severity=P9"); r.status != 400 || !strings.Contains(string(r.body), `role="alert"`) {
		t.Fatalf("a bad filter: %d %s", r.status, r.body)
	}
	one := owner.get(t, base+"/notifications/"+id)
	pageHas(t, "one notification", one, "order_confirmation", "paused", `name="back" value="notification"`)
	if r := owner.get(t, base+"/notifications/ntf_nosuchthing"); r.status != 404 {
		t.Fatalf("an unknown notification: %d", r.status)
	}

	// The read-only user: the list without forms; every post refused.
	ro := reader.get(t, base+"/notifications")
	unreadIs(t, "read-only", ro, 1)
	if ro.status != 200 || strings.Contains(string(ro.body), "/read\"") || strings.Contains(string(ro.body), `name="emails"`) ||
		!strings.Contains(string(ro.body), `data-notification="`+id+`"`) {
		t.Fatalf("read-only page: %d %s", ro.status, ro.body)
	}
	if r := reader.post(t, base+"/notifications/"+id+"/read", url.Values{}); r.status != 403 {
		t.Fatalf("read-only mark read: %d", r.status)
	}
	if r := reader.post(t, base+"/notifications/settings", url.Values{"emails": {"sneaky@example.com"}}); r.status != 403 {
		t.Fatalf("read-only settings: %d", r.status)
	}

	// Mark read: the count is 0 at once, and the API says read.
	read := owner.post(t, base+"/notifications/"+id+"/read", url.Values{"back": {"notification"}})
	after := followed(t, owner, read, "mark read")
	unreadIs(t, "after mark read", after, 0)
	pageHas(t, "after mark read", after, "Marked as read", "read 20")
	if strings.Contains(string(after.body), "/read\"") {
		t.Fatalf("the read notification still offers mark read: %s", after.body)
	}
	got := s.get(t, "/api/v1/notifications/"+id, wt.token).json(t)
	if attrs(got["data"].(map[string]any))["read_at"] == nil {
		t.Fatalf("the API after mark read: %v", got)
	}
	if m := s.get(t, "/api/v1/notifications", wt.token).json(t)["meta"].(map[string]any); m["unread_count"] != 0.0 {
		t.Fatalf("the API's unread count: %v", m)
	}

	// Mark all read: a second anomaly (a number's quality rated), one
	// click, none unread; the API's own call marks nothing more.
	deliverForAnomalies(t, s, v, rm, wt, waFixture(t, "quality_rated", wt.waba))
	var withAll response
	eventually(t, 30*time.Second, "the second notification on the page", func() bool {
		withAll = owner.get(t, base+"/notifications")
		return strings.Contains(string(withAll.body), `action="`+base+`/notifications/read-all"`)
	})
	unreadIs(t, "the second notification", withAll, 1)
	all := followed(t, owner, owner.post(t, base+"/notifications/read-all", url.Values{}), "mark all read")
	unreadIs(t, "after mark all read", all, 0)
	pageHas(t, "after mark all read", all, "Marked 1 notifications as read.")
	again := do(t, http.MethodPost, s.base+"/api/v1/notifications/read", nil, map[string]string{"Authorization": "Bearer " + wt.token})
	v.ValidateResponse(t, again.req, again.resp, again.body)
	if again.status != 200 || attrs(again.json(t)["data"].(map[string]any))["marked"] != 0.0 {
		t.Fatalf("mark all read again: %d %s", again.status, again.body)
	}

	// The settings form: what the API answers afterwards.
	saved := owner.post(t, base+"/notifications/settings", url.Values{"emails": {"ops@admin-notify.example.com\ncto@admin-notify.example.com"},
		"chat_number": {"+33 6 12 34 56 78"}, "channels_P1": {"email", "chat"}, "channels_P3": {"chat"},
		"quiet_start": {"22:00"}, "quiet_end": {"07:00"}, "quiet_time_zone": {"Europe/Paris"}})
	page := followed(t, owner, saved, "settings")
	pageHas(t, "the saved settings", page, "The notification settings are saved", "ops@admin-notify.example.com\ncto@admin-notify.example.com",
		`value="&#43;33612345678"`, `name="channels_P3" value="chat" checked`, `value="Europe/Paris"`)
	if strings.Contains(string(page.body), `name="channels_P2" value="email" checked`) {
		t.Fatalf("P2 by e-mail still ticked: %s", page.body)
	}
	shopSettings := func() map[string]any {
		t.Helper()
		r := s.get(t, "/api/v1/shop", wt.token)
		if r.status != 200 {
			t.Fatalf("GET /api/v1/shop: %d %s", r.status, r.body)
		}
		return attrs(r.json(t)["data"].(map[string]any))["notifications"].(map[string]any)
	}
	want := "[ops@admin-notify.example.com cto@admin-notify.example.com] 33612345678 map[P1:[email chat] P2:[] P3:[chat]] " +
		"map[end:07:00 start:22:00 time_zone:Europe/Paris]"
	n := shopSettings()
	if g := fmt.Sprint(n["emails"], " ", n["chat_number"], " ", n["channels"], " ", n["quiet_hours"]); g != want {
		t.Fatalf("the API's settings:\n got %s\nwant %s", g, want)
	}
	// A bad address: the API's error on the page, the form kept, nothing
	// changed.
	bad := owner.post(t, base+"/notifications/settings", url.Values{"emails": {"not an address"}, "chat_number": {"+44 20 7946 0000"},
		"channels_P1": {"email"}})
	if bad.status != 422 {
		t.Fatalf("a bad address: %d %s", bad.status, bad.body)
	}
	pageHas(t, "a bad address", bad, `role="alert"`, "notifications.emails", ">not an address</textarea>", `value="&#43;44 20 7946 0000"`)
	n = shopSettings()
	if g := fmt.Sprint(n["emails"], " ", n["chat_number"], " ", n["channels"], " ", n["quiet_hours"]); g != want {
		t.Fatalf("a refused form changed the settings: %s", g)
	}
	badTZ := owner.post(t, base+"/notifications/settings", url.Values{"quiet_start": {"22:00"}, "quiet_end": {"07:00"},
		"quiet_time_zone": {"Mars/Olympus"}})
	pageHas(t, "a bad time zone", badTZ, "time_zone", `value="Mars/Olympus"`)
	// Quiet hours removed: all three fields empty.
	cleared := owner.post(t, base+"/notifications/settings", url.Values{"emails": {""}, "channels_P1": {"email", "chat"}})
	followed(t, owner, cleared, "clear")
	if n = shopSettings(); n["quiet_hours"] != nil || n["chat_number"] != nil || len(n["emails"].([]any)) != 0 {
		t.Fatalf("cleared: %v", n)
	}
	// The changes are the user's in the audit history.
	audit := s.get(t, "/api/v1/audit-events?filter[type]=NotificationSettingsChanged", wt.token)
	if audit.status != 200 || strings.Count(string(audit.body), `"user:usr_`) < 2 {
		t.Fatalf("audit: %d %s", audit.status, audit.body)
	}

	// Another account's shop is 404, pages and forms alike.
	other := newTenant(t, dir, "other-notify.example.com", "agency", "*")
	stranger := signInAs(t, s, dir, other.accountID, "owner@other-notify.example.com", "owner", "127.0.0.1")
	for _, p := range []string{base + "/notifications", base + "/notifications/" + id} {
		if r := stranger.get(t, p); r.status != 404 || strings.Contains(string(r.body), "order_confirmation") {
			t.Fatalf("another account's %s: %d", p, r.status)
		}
	}
	if r := stranger.post(t, base+"/notifications/settings", url.Values{"emails": {"evil@example.com"}}); r.status != 404 {
		t.Fatalf("another account's settings: %d", r.status)
	}
	if r := stranger.get(t, "/admin/shops/"+other.shopID+"/notifications/"+id); r.status != 404 {
		t.Fatalf("the notification through another shop: %d", r.status)
	}
}

// TestAdminConversationsPage: issue 22's conversations page over real
// HTTP: a customer's conversation waiting for a person is in the human
// queue (on its second page, by the API's cursor, after 25 newer); its page shows the messages; a reply through the form goes once
// through the Cloud API's contract and appears in the conversation; a
// reply the API refuses is shown with the text kept; assign (to the
// user's e-mail) and close are what the API answers after; a read-only
// user reads without forms and is refused every post; another account's
// shop, or this shop's conversation through it, is 404.
func TestAdminConversationsPage(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) {
		c.WhatsAppAPIURL = api.URL
		c.TrustedProxies = []string{"127.0.0.1/32"}
	})
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	// Below pro_plus inbound messages go to the human queue; the admin API
	// is the agency plan's: the shop moves there once its customer wrote.
	wt := connectWhatsApp(t, s, rm, "admin-conv.example.com", "pro", "7401")
	const digits = "15550107401"
	question := "Where is my parcel? admin-conv-question"
	receive(t, s, v, wt, inboundText(t, wt.waba, digits, "wamid.admin-conv-1", question, time.Now().Add(-time.Minute)))
	// 25 later conversations: a page of the list holds 25, the first one is
	// on the second page.
	for i := range 25 {
		receive(t, s, v, wt, inboundText(t, wt.waba, fmt.Sprintf("1555020%04d", i), fmt.Sprintf("wamid.admin-conv-more-%d", i),
			"Hello", time.Now().Add(-time.Minute)))
	}
	up := cli(t, dir, "shops", "set-plan", "--shop", wt.shopID, "--plan", "agency")
	pos := fmt.Sprint(uint64(up["position"].(float64)))
	eventually(t, 20*time.Second, "the agency plan in force", func() bool {
		return s.get(t, "/api/v1/conversations", wt.token, "X-Wait-For-Position", pos).status == http.StatusOK
	})
	id := domain.ConversationID(wt.shopID, domain.CustomerIDFromPhone(wt.shopID, digits))
	owner := signInAs(t, s, dir, wt.accountID, "owner@admin-conv.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, wt.accountID, "reader@admin-conv.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + wt.shopID

	var queue response
	eventually(t, 20*time.Second, "26 conversations in the human queue", func() bool {
		queue = owner.get(t, base+"/conversations")
		return strings.Count(string(queue.body), `data-conversation="`) == 25 && strings.Contains(string(queue.body), `rel="next"`)
	})
	pageHas(t, "the human queue", queue, `aria-current="page">Human queue`, "Conversations waiting for a person", ">human</td>")
	checkAdminHeaders(t, "conversations page", queue)
	if strings.Contains(string(queue.body), `data-conversation="`+id+`"`) {
		t.Fatalf("the oldest conversation on the first page: %s", queue.body)
	}
	// The next page, by the API's cursor: the first conversation.
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindSubmatch(queue.body)
	if next == nil {
		t.Fatalf("no next page: %s", queue.body)
	}
	older := owner.get(t, html.UnescapeString(string(next[1])))
	if older.status != 200 || strings.Count(string(older.body), `data-conversation="`) != 1 ||
		!strings.Contains(string(older.body), `data-conversation="`+id+`"`) || strings.Contains(string(older.body), `rel="next"`) {
		t.Fatalf("the second page: %d %s", older.status, older.body)
	}
	if r := owner.get(t, base+"/conversations?queue=ai_concierge"); strings.Contains(string(r.body), `data-conversation="`+id+`"`) {
		t.Fatalf("the AI concierge's queue shows the human one: %s", r.body)
	}
	pageHas(t, "every conversation", owner.get(t, base+"/conversations?queue=all"), `aria-current="page">All`, `rel="next"`)
	if r := owner.get(t, base+"/conversations?queue=nonsense"); r.status != 404 {
		t.Fatalf("an unknown queue: %d", r.status)
	}
	cv := owner.get(t, base+"/conversations/"+id)
	pageHas(t, "the conversation", cv, question, `name="text"`, "Assign to me", `action="`+base+`/conversations/`+id+`/close"`)
	if strings.Contains(string(cv.body), "Earlier messages") {
		t.Fatalf("a one-message conversation offers earlier messages: %s", cv.body)
	}
	// A cursor the API refuses is shown, not a failure of the page.
	pageHas(t, "a bad earlier cursor", owner.get(t, base+"/conversations/"+id+"?earlier=nonsense"), "Latest messages", `role="alert"`)

	// The read-only user reads, without forms; every post is refused and
	// nothing is sent.
	ro := reader.get(t, base+"/conversations/"+id)
	if ro.status != 200 || !strings.Contains(string(ro.body), question) || strings.Contains(string(ro.body), `name="text"`) ||
		strings.Contains(string(ro.body), "/assign\"") || strings.Contains(string(ro.body), "/close\"") {
		t.Fatalf("read-only conversation: %d %s", ro.status, ro.body)
	}
	if r := reader.get(t, base+"/conversations"); r.status != 200 || strings.Count(string(r.body), `data-conversation="`) != 25 {
		t.Fatalf("read-only queue: %d %s", r.status, r.body)
	}
	for _, a := range []string{"reply", "assign", "close"} {
		if r := reader.post(t, base+"/conversations/"+id+"/"+a, url.Values{"text": {"sneaky"}}); r.status != 403 {
			t.Fatalf("read-only %s: %d", a, r.status)
		}
	}
	if n := len(api.Sent()); n != 0 {
		t.Fatalf("%d messages sent after refused posts", n)
	}

	// A reply the API refuses (blank): shown, the page kept, nothing sent.
	blank := owner.post(t, base+"/conversations/"+id+"/reply", url.Values{"text": {"   "}})
	if blank.status != 422 {
		t.Fatalf("a blank reply: %d %s", blank.status, blank.body)
	}
	pageHas(t, "a blank reply", blank, `role="alert"`, "The reply was not sent", question)

	// A reply through the form: sent once through the Cloud API, in the
	// conversation's messages.
	answer := "It left our warehouse today admin-conv-answer"
	key := "ui_" + strings.Repeat("b", 32)
	sentPage := followed(t, owner, owner.post(t, base+"/conversations/"+id+"/reply", url.Values{"text": {answer}, "form_key": {key}}), "reply")
	pageHas(t, "after the reply", sentPage, "Your reply is queued", answer)
	// The same form posted twice sends once.
	if r := owner.post(t, base+"/conversations/"+id+"/reply", url.Values{"text": {answer}, "form_key": {key}}); r.status != 303 {
		t.Fatalf("the reply posted again: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := api.WaitCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the reply sent, on the page", func() bool {
		r := owner.get(t, base+"/conversations/"+id)
		return strings.Contains(string(r.body), answer) && strings.Contains(string(r.body), " · sent</p>")
	})
	sent := api.Sent()
	if len(sent) != 1 || sent[0].Type != "text" || sent[0].Text != answer || sent[0].To != digits {
		t.Fatalf("sent %+v", sent)
	}
	msgs := s.get(t, "/api/v1/conversations/"+id+"/messages", wt.token).json(t)["data"].([]any)
	if len(msgs) != 2 || attrs(msgs[1].(map[string]any))["text"] != answer || attrs(msgs[1].(map[string]any))["author"] != "human" {
		t.Fatalf("the API's messages: %v", msgs)
	}

	// Assign to me, then close: what the API answers after.
	assigned := followed(t, owner, owner.post(t, base+"/conversations/"+id+"/assign", url.Values{}), "assign")
	pageHas(t, "assigned", assigned, `class="assignee">owner@admin-conv.example.com<`, "Unassign me")
	conv := func() map[string]any {
		t.Helper()
		return attrs(s.get(t, "/api/v1/conversations/"+id, wt.token).json(t)["data"].(map[string]any))
	}
	if a := conv(); a["assignee"] != "owner@admin-conv.example.com" {
		t.Fatalf("the API's assignee: %v", a)
	}
	closed := followed(t, owner, owner.post(t, base+"/conversations/"+id+"/close", url.Values{}), "close")
	pageHas(t, "closed", closed, `class="queue">closed<`)
	if a := conv(); a["queue"] != "closed" {
		t.Fatalf("the API's queue after close: %v", a)
	}
	if r := owner.get(t, base+"/conversations"); strings.Contains(string(r.body), `data-conversation="`+id+`"`) {
		t.Fatalf("a closed conversation in the human queue: %s", r.body)
	}
	audit := s.get(t, "/api/v1/audit-events?limit=100&filter[type]=ConversationClosed", wt.token)
	if audit.status != 200 || !strings.Contains(string(audit.body), `"user:usr_`) {
		t.Fatalf("audit: %d %s", audit.status, audit.body)
	}

	// Another account's shop is 404; this conversation through another
	// shop is 404 too.
	other := newTenant(t, dir, "other-conv.example.com", "agency", "*")
	stranger := signInAs(t, s, dir, other.accountID, "owner@other-conv.example.com", "owner", "127.0.0.1")
	for _, p := range []string{base + "/conversations", base + "/conversations/" + id, "/admin/shops/" + other.shopID + "/conversations/" + id} {
		if r := stranger.get(t, p); r.status != 404 || strings.Contains(string(r.body), question) {
			t.Fatalf("another account's %s: %d", p, r.status)
		}
	}
	if r := stranger.post(t, "/admin/shops/"+other.shopID+"/conversations/"+id+"/reply", url.Values{"text": {"hi"}}); r.status != 404 {
		t.Fatalf("a reply through another shop: %d", r.status)
	}
	if n := len(api.Sent()); n != 1 {
		t.Fatalf("%d messages sent in all", n)
	}
}
