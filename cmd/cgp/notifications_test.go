package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"mime"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/cgp-platform/cgp/internal/smtptest"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
	"github.com/cgp-platform/cgp/limits/limitstest"
	"github.com/cgp-platform/cgp/notify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/anomalies"
)

// TestShopNotificationSettings: GET /api/v1/shop shows the defaults (P1
// and P2 by e-mail and chat, P3 in-app only); PATCH changes them member
// by member, with a 422 naming the member for each bad value and a 403
// for a token without `*`; the CLI's `shops notifications` is the same
// command.
func TestShopNotificationSettings(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "settings.example.com", "agency", "*")
	waitForToken(t, s, tn)
	c := catalogClient{t: t, s: s, v: v, token: tn.token}
	notif := func(r response) map[string]any {
		t.Helper()
		return attrs(data(r, t))["notifications"].(map[string]any)
	}
	got := notif(c.ok(200, http.MethodGet, "/api/v1/shop", ""))
	if fmt.Sprint(got["channels"]) != "map[P1:[email chat] P2:[email chat] P3:[]]" || len(got["emails"].([]any)) != 0 ||
		got["chat_number"] != nil || got["quiet_hours"] != nil {
		t.Fatalf("defaults: %v", got)
	}
	r := c.ok(200, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"emails":["ops@settings.example.com",
		"ops@settings.example.com","cto@settings.example.com"],"chat_number":"+33 6 12 34 56 78","channels":{"P2":["email"]},
		"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"Europe/Paris"}}}}}`)
	got = notif(r)
	if fmt.Sprint(got["emails"]) != "[ops@settings.example.com cto@settings.example.com]" || got["chat_number"] != "33612345678" ||
		fmt.Sprint(got["channels"]) != "map[P1:[email chat] P2:[email] P3:[]]" ||
		fmt.Sprint(got["quiet_hours"]) != "map[end:07:00 start:22:00 time_zone:Europe/Paris]" {
		t.Fatalf("patched: %v", got)
	}
	got = notif(c.ok(200, http.MethodGet, "/api/v1/shop", "", "X-Wait-For-Position", r.position(t)))
	if got["chat_number"] != "33612345678" || got["quiet_hours"] == nil {
		t.Fatalf("read back: %v", got)
	}
	r = c.ok(200, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"quiet_hours":null}}}}`)
	if got = notif(r); got["quiet_hours"] != nil || got["chat_number"] != "33612345678" {
		t.Fatalf("quiet hours removed: %v", got)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"emails":["not an address"]}`, "notifications.emails"},
		{`{"emails":["Ann <ann@x.example.com>"]}`, "notifications.emails"},
		{`{"chat_number":"call me"}`, "notifications.chat_number"},
		{`{"channels":{"P4":["email"]}}`, "notifications.channels"},
		{`{"channels":{"P1":["pager"]}}`, "notifications.channels"},
		{`{"quiet_hours":{"start":"25:00","end":"07:00","time_zone":"UTC"}}`, "notifications.quiet_hours.start"},
		{`{"quiet_hours":{"start":"22:00","end":"22:00","time_zone":"UTC"}}`, "notifications.quiet_hours.end"},
		{`{"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"Mars/Olympus"}}`, "notifications.quiet_hours.time_zone"},
		{`{"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"UTC","extra":1}}`, "notifications.quiet_hours"},
		{`{}`, "data.attributes"},
	} {
		c.fails(422, "validation_failed", bad.field, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":`+bad.body+`}}}`)
	}
	c.fails(422, "validation_failed", "", http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"plan":"enterprise"}}}`)
	narrow := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "analytics:read,webhooks:write")
	waitForToken(t, s, tenant{token: narrow["token"].(string), position: uint64(narrow["position"].(float64))})
	nc := catalogClient{t: t, s: s, v: v, token: narrow["token"].(string)}
	nc.fails(403, "scope_required", "", http.MethodGet, "/api/v1/shop", "")
	nc.fails(403, "scope_required", "", http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"chat_number":""}}}}`)
	// The notifications list is the narrow token's (analytics:read).
	list := nc.ok(200, http.MethodGet, "/api/v1/notifications", "").json(t)
	if list["meta"].(map[string]any)["unread_count"] != 0.0 || len(list["data"].([]any)) != 0 {
		t.Fatalf("no notification yet: %v", list)
	}
	nc.fails(404, "not_found", "", http.MethodPost, "/api/v1/notifications/ntf_doesnotexist/read", "")

	out := cli(t, dir, "shops", "notifications", "--shop", tn.shopID, "--email", "night@settings.example.com", "--p3", "email",
		"--quiet-hours", "23:00-06:30", "--time-zone", "America/New_York")
	n := out["notifications"].(map[string]any)
	if fmt.Sprint(n["emails"]) != "[night@settings.example.com]" || fmt.Sprint(n["channels"]) != "map[P1:[email chat] P2:[email] P3:[email]]" ||
		n["chat_number"] != "33612345678" {
		t.Fatalf("cli: %v", out)
	}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"shops", "notifications", "--shop", "shop_nobody", "--p1", "email", "--data-dir", dir},
		&stdout, &stderr); code != exitFailure || !strings.Contains(stderr.String(), "shop not found") {
		t.Errorf("an unknown shop: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := Run(context.Background(), []string{"shops", "notifications", "--shop", tn.shopID, "--quiet-hours", "22:00-07:00",
		"--time-zone", "Nowhere/Else", "--data-dir", dir}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "time_zone") {
		t.Errorf("a bad time zone: exit %d, %s", code, stderr.String())
	}
}

// TestNotificationsReachTheMerchant: with a controllable clock, a real
// SMTP server and the WhatsApp Cloud API's contract: a template PAUSED
// (delivered three times) is one P1 notification in-app, one e-mail to the
// shop's address and one chat message to the merchant's number at once;
// APPROVED resolves it (and cancels its reminder). A YELLOW quality is a
// P2 in-app at once and by e-mail and chat only in the next hourly
// digest. The template paused again the same day is in-app only. A RED
// quality (P1) left unread is sent again 4 hours later; once read, nothing
// more is queued.
func TestNotificationsReachTheMerchant(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	var clock atomic.Int64
	clock.Store(time.Now().UnixMicro())
	now := func() time.Time { return time.UnixMicro(clock.Load()) }
	var notifier atomic.Pointer[notify.Service]
	dir := t.TempDir()
	s, relay := sendingServer(t, dir, func(c *Config) {
		c.WhatsAppAPIURL = api.URL
		c.Test.Notify.Now = now
		c.Test.Notify.Opened = func(n *notify.Service) { notifier.Store(n) }
	})
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := whatsAppSender(t, s, v, rm, "notify.example.com", "7001")
	c := catalogClient{t: t, s: s, v: v, token: wt.token}
	c.ok(200, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"emails":["ops@notify.example.com"],
		"chat_number":"+33 6 12 34 56 78"}}}}`)
	// deliver posts a fixture as of the platform's time at (0: the
	// fixture's own).
	deliver := func(name string, at int) string {
		t.Helper()
		body := waFixture(t, name, wt.waba)
		if at != 0 {
			body = regexp.MustCompile(`"time": [0-9]+`).ReplaceAll(body, []byte(fmt.Sprintf(`"time": %d`, at)))
		}
		r := waPost(t, s, v, wt.appSecret, body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		return r.position(t)
	}
	// settled waits until the notifier has applied everything up to the
	// log's head (the anomalies the reactor raised included).
	settled := func() {
		t.Helper()
		var head uint64
		eventually(t, time.Minute, "the anomaly reactor at the log's head", func() bool {
			log := readLog(t, dir)
			head = uint64(log[len(log)-1].Position)
			var at uint64
			err := rm.QueryRow(`SELECT position FROM _projector_checkpoints WHERE projector = ?`, anomalies.Name).Scan(&at)
			return err == nil && at >= head
		})
		log := readLog(t, dir)
		head = uint64(log[len(log)-1].Position)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := notifier.Load().WaitFor(ctx, head); err != nil {
			t.Fatal(err)
		}
	}
	list := func() ([]map[string]any, float64) {
		t.Helper()
		log := readLog(t, dir)
		body := c.ok(200, http.MethodGet, "/api/v1/notifications?limit=100", "", "X-Wait-For-Position",
			fmt.Sprint(uint64(log[len(log)-1].Position))).json(t)
		var out []map[string]any
		for _, d := range body["data"].([]any) {
			out = append(out, d.(map[string]any))
		}
		return out, body["meta"].(map[string]any)["unread_count"].(float64)
	}
	sent := func(emails, chats int) {
		t.Helper()
		t.Cleanup(func() {
			if t.Failed() {
				db := notifier.Load().Store.DB()
				for _, q := range []string{`SELECT anomaly_id || ' ' || shop_id || ' ' || severity FROM ntf_anomalies`,
					`SELECT delivery_id || ' ' || channel || ' ' || state || ' ' || due_at || ' ' || last_error FROM ntf_outbox`,
					`SELECT shop_id || ' ' || settings FROM ntf_settings`, `SELECT shop_id || dedupe_key FROM ntf_keys`} {
					rows, err := db.Query(q)
					if err != nil {
						t.Log(err)
						continue
					}
					for rows.Next() {
						var x string
						rows.Scan(&x)
						t.Log(x)
					}
					rows.Close()
				}
			}
		})
		eventually(t, time.Minute, fmt.Sprintf("%d e-mails and %d chat messages", emails, chats), func() bool {
			return relay.Count() >= emails && api.Count() >= chats
		})
		settled()
		if relay.Count() != emails || api.Count() != chats {
			t.Fatalf("%d e-mails and %d chat messages, want %d and %d", relay.Count(), api.Count(), emails, chats)
		}
	}

	for range 3 {
		deliver("template_paused", 0)
	}
	sent(1, 1)
	ns, unread := list()
	if len(ns) != 1 || unread != 1 || attrs(ns[0])["severity"] != "P1" || attrs(ns[0])["kind"] != "template_paused" {
		t.Fatalf("notifications %v (unread %v)", ns, unread)
	}
	m := relay.Messages()[0]
	header, text, _ := mailParts(t, m.Data)
	if m.To[0] != "ops@notify.example.com" || !strings.HasPrefix(subjectOf(t, header), "[P1] ") ||
		!strings.Contains(text, "order_confirmation") {
		t.Fatalf("e-mail to %v: %s\n%s", m.To, subjectOf(t, header), text)
	}
	chat := api.Sent()[0]
	if chat.To != "33612345678" || chat.Template != "merchant_alert" || len(chat.Parameters) != 2 ||
		!strings.HasPrefix(chat.Parameters[0], "[P1] ") || chat.Parameters[1] != "notify.example.com" {
		t.Fatalf("chat message %+v", chat)
	}

	deliver("template_approved", 1751334500)
	settled()
	ns, _ = list()
	if attrs(ns[0])["resolved_at"] == nil {
		t.Fatalf("not resolved: %v", ns[0])
	}

	deliver("quality_rated", 0) // YELLOW
	settled()
	ns, unread = list()
	if len(ns) != 2 || attrs(ns[0])["severity"] != "P2" || unread != 2 {
		t.Fatalf("after YELLOW: %v (unread %v)", ns, unread)
	}
	if relay.Count() != 1 || api.Count() != 1 {
		t.Fatalf("a P2 went out before its digest: %d e-mails, %d chats", relay.Count(), api.Count())
	}
	clock.Add(time.Hour.Microseconds())
	sent(2, 2)
	header, _, _ = mailParts(t, relay.Messages()[1].Data)
	if !strings.HasPrefix(subjectOf(t, header), "[P2] ") {
		t.Fatalf("digest subject %q", subjectOf(t, header))
	}

	// Paused again the same day: in-app only.
	deliver("template_paused", 1751335000)
	settled()
	if ns, _ = list(); len(ns) != 3 {
		t.Fatalf("%d notifications after the second pause", len(ns))
	}

	deliver("quality_flagged", 1748541000) // RED: P1
	sent(3, 3)
	ns, _ = list()
	red := ns[0]
	if attrs(red)["kind"] != "number_quality_red" {
		t.Fatalf("newest %v", red)
	}
	clock.Add((4*time.Hour + time.Minute).Microseconds())
	sent(4, 4)
	header, _, _ = mailParts(t, relay.Messages()[3].Data)
	if !strings.HasPrefix(subjectOf(t, header), "[P1, reminder] ") {
		t.Fatalf("reminder subject %q", subjectOf(t, header))
	}
	read := c.ok(200, http.MethodPost, "/api/v1/notifications/"+red["id"].(string)+"/read", "")
	if attrs(data(read, t))["read_at"] == nil {
		t.Fatalf("read: %s", read.body)
	}
	settled()
	var queued int
	if err := notifier.Load().Store.DB().QueryRow(`SELECT COUNT(*) FROM ntf_outbox WHERE state = 'queued'`).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if queued != 0 {
		t.Fatalf("%d deliveries still queued after the read", queued)
	}
	if _, unread = list(); unread != 3 {
		t.Fatalf("unread %v, want 3", unread)
	}
}

// subjectOf decodes a message's Subject (RFC 2047).
func subjectOf(t *testing.T, h mail.Header) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOperatorAlertReachesTheOperator: 1,000 failed authentications from
// one address in 24 hours reach the operator's address by e-mail, once,
// however many more follow.
func TestOperatorAlertReachesTheOperator(t *testing.T) {
	relay, err := smtptest.Start(smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	dir := t.TempDir()
	clock := limitstest.NewClock()
	s := startServerWith(t, dir, func(c *Config) {
		c.TrustedProxies = []string{"127.0.0.1/32"}
		c.Test.GuardNow = clock.Now
		c.SMTPAddr, c.SMTPFrom, c.OperatorEmail = relay.Addr, "alerts@cgp.example.com", "oncall@cgp.example.com"
	})
	bad := "copt_live_" + strings.Repeat("F", 32)
	for range 1100 {
		s.from(t, "192.0.2.77", bad)
	}
	eventually(t, time.Minute, "the operator's alert", func() bool { return relay.Count() >= 1 })
	for range 50 {
		s.from(t, "192.0.2.77", bad)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := relay.WaitCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m := relay.Messages()
	header, text, _ := mailParts(t, m[0].Data)
	if len(m) != 1 || m[0].To[0] != "oncall@cgp.example.com" || !strings.HasPrefix(subjectOf(t, header), "[P1] ") ||
		!strings.Contains(text, "the platform") {
		t.Fatalf("%d e-mails; the first to %v: %s\n%s", len(m), m[0].To, subjectOf(t, header), text)
	}
}

// TestNotificationRetriesUntilTheRelayAccepts: a relay that refuses for
// now (451) does not lose a P1 e-mail: it is tried again with backoff and
// delivered once the relay accepts, once.
func TestNotificationRetriesUntilTheRelayAccepts(t *testing.T) {
	var notifier atomic.Pointer[notify.Service]
	dir := t.TempDir()
	s, relay := sendingServer(t, dir, func(c *Config) {
		c.Test.Notify.Schedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
		c.Test.Notify.Opened = func(n *notify.Service) { notifier.Store(n) }
	})
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "retry-notify.example.com", "agency", "7002")
	c := catalogClient{t: t, s: s, v: v, token: wt.token}
	c.ok(200, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"emails":["ops@retry-notify.example.com"]}}}}`)
	relay.RefuseRecipients(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"})
	if r := waPost(t, s, v, wt.appSecret, waFixture(t, "template_paused", wt.waba)); r.status != http.StatusOK {
		t.Fatalf("template_paused: %d %s", r.status, r.body)
	}
	attempts := func() int {
		var n sql.NullInt64
		if err := notifier.Load().Store.DB().QueryRow(`SELECT MAX(attempts) FROM ntf_outbox WHERE channel = 'email'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return int(n.Int64)
	}
	eventually(t, time.Minute, "three refused attempts", func() bool { return attempts() >= 3 })
	if relay.Count() != 0 {
		t.Fatalf("%d e-mails accepted while refusing", relay.Count())
	}
	relay.RefuseRecipients(nil)
	eventually(t, time.Minute, "the e-mail delivered", func() bool { return relay.Count() >= 1 })
	var queued int
	eventually(t, time.Minute, "nothing left queued but the reminder", func() bool {
		err := notifier.Load().Store.DB().QueryRow(`SELECT COUNT(*) FROM ntf_outbox WHERE channel = 'email' AND state = 'queued' AND reminder = 0`).
			Scan(&queued)
		return err == nil && queued == 0
	})
	if relay.Count() != 1 || relay.Messages()[0].To[0] != "ops@retry-notify.example.com" {
		t.Fatalf("%d e-mails: %v", relay.Count(), relay.Messages())
	}
}
