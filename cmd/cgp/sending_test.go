package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/smtptest"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// stateCustomer is a customer payload with the platform's e-mail and
// SMS consent states ("subscribed", "unsubscribed", "not_subscribed") and
// an e-mail address ("" for none).
func stateCustomer(id int64, email, emailState, smsState string) []byte {
	b := customerPayload(id, email, 0, "0.00", "2026-11-01T10:00:00Z")
	b = bytes.Replace(b, []byte(`"email_marketing_consent":{"state":"subscribed"`), []byte(`"email_marketing_consent":{"state":"`+emailState+`"`), 1)
	b = bytes.Replace(b, []byte(`"default_address":`), []byte(`"sms_marketing_consent":{"state":"`+smsState+`","opt_in_level":"single_opt_in","consent_updated_at":null,"consent_collected_from":"SHOPIFY"},"default_address":`), 1)
	if email == "" {
		b = bytes.Replace(b, []byte(`"email":""`), []byte(`"email":null`), 1)
	}
	return b
}

// sendingServer starts the server with an SMTP relay (a real SMTP
// server) and fast retries.
func sendingServer(t *testing.T, dir string, mod func(*Config)) (*testServer, *smtptest.Server) {
	t.Helper()
	relay, err := smtptest.Start(smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	s := startServerWith(t, dir, func(c *Config) {
		c.SMTPAddr, c.SMTPFrom = relay.Addr, "news@shop.example.com"
		c.OutboundAllowPrivate = true
		c.Test.Sending.Schedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
		if mod != nil {
			mod(c)
		}
	})
	return s, relay
}

// campaignNow reads a campaign (after pos when given).
func campaignNow(c catalogClient, id, pos string) map[string]any {
	c.t.Helper()
	h := []string{}
	if pos != "" {
		h = append(h, "X-Wait-For-Position", pos)
	}
	return attrs(data(c.ok(200, http.MethodGet, "/api/v1/campaigns/"+id, "", h...), c.t))
}

// waitCampaign polls a campaign until cond holds on its attributes.
func waitCampaign(c catalogClient, id, what string, cond func(a map[string]any) bool) map[string]any {
	c.t.Helper()
	var last map[string]any
	// Polled every 100 ms: the token's rate limit is the test's budget too.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(2 * minEventually)
	for {
		r := c.call(http.MethodGet, "/api/v1/campaigns/"+id, "")
		switch {
		case r.status == http.StatusOK:
			last = attrs(data(r, c.t))
			if cond(last) {
				return last
			}
		case r.status != http.StatusTooManyRequests:
			c.t.Fatalf("GET campaign: %d %s", r.status, r.body)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %v (last %v)", what, 2*minEventually, last)
		}
		<-tick.C
	}
}

func stats(a map[string]any) map[string]any { return a["stats"].(map[string]any) }

// completedAndCounted holds once the campaign is completed and the
// message log counted every recipient's outcome (the counts are the
// messaging read model's, folded a moment after the completion).
func completedAndCounted(a map[string]any) bool {
	st := stats(a)
	return a["status"] == "completed" && st["sent"].(float64)+st["failed"].(float64)+st["skipped"].(float64) == a["recipients"].(float64)
}

// mailParts reads a message's headers and its text and HTML parts.
func mailParts(t *testing.T, raw []byte) (mail.Header, string, string) {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	var text, html string
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p) // quoted-printable is decoded by NextPart
		switch {
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain"):
			text = string(b)
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/html"):
			html = string(b)
		}
	}
	return m.Header, text, html
}

// TestEmailCampaignSendsOnceToEachConsentingCustomer launches an e-mail
// campaign to an audience of consenting and non-consenting customers: each
// consenting one with an address gets exactly one message (merged,
// multipart, with its message id), the others none; the campaign
// completes with its counts, and the message log lists the messages.
func TestEmailCampaignSendsOnceToEachConsentingCustomer(t *testing.T) {
	dir := t.TempDir()
	s, relay := sendingServer(t, dir, nil)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "mail-campaign.example.com", "agency", "*")
	waitForToken(t, s, tn)
	c := catalogClient{t: t, s: s, v: v, token: tn.token}

	consenting := map[string]bool{}
	var pos string
	for i, state := range []string{"subscribed", "unsubscribed", "subscribed", "not_subscribed", "subscribed", "subscribed"} {
		email := fmt.Sprintf("buyer%d@example.com", i)
		if i == 5 {
			email = "" // subscribed, but no address
		}
		r := s.webhook(t, tn, "customers/create", fmt.Sprintf("mail-c-%d", i), stateCustomer(int64(7000+i), email, state, "not_subscribed"))
		if r.status != http.StatusOK {
			t.Fatalf("customers/create: %d %s", r.status, r.body)
		}
		pos = r.position(t)
		if state == "subscribed" && email != "" {
			consenting[email] = true
		}
	}
	aud := data(c.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"Everyone"}}}`), t)["id"].(string)

	// A launch without content is refused, naming the field; nothing is sent.
	bare := data(c.ok(201, http.MethodPost, "/api/v1/campaigns", `{"data":{"attributes":{"name":"Bare","audience_id":"`+aud+`","channel":"email"}}}`), t)["id"].(string)
	c.fails(422, "validation_failed", "content.subject", http.MethodPost, "/api/v1/campaigns/"+bare+"/launch", "")
	// Unknown merge fields are refused at creation.
	c.fails(422, "validation_failed", "content.text", http.MethodPost, "/api/v1/campaigns",
		`{"data":{"attributes":{"name":"X","audience_id":"`+aud+`","channel":"email","content":{"subject":"Hi","text":"{{password}}"}}}}`)

	r := c.ok(201, http.MethodPost, "/api/v1/campaigns", `{"data":{"attributes":{"name":"November news","audience_id":"`+aud+`",
		"channel":"email","content":{"subject":"Hello {{first_name}}","text":"Hi {{first_name}}, new arrivals at {{shop_name}}.",
		"html":"<p>Hi <b>{{first_name}}</b></p>"}}}}`)
	id := data(r, t)["id"].(string)
	if got := attrs(data(r, t))["content"].(map[string]any); got["subject"] != "Hello {{first_name}}" {
		t.Fatalf("content %v", got)
	}
	r = c.ok(200, http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "", "X-Wait-For-Position", pos)
	if a := attrs(data(r, t)); a["status"] != "sending" && a["status"] != "completed" {
		t.Fatalf("launch: %s", r.body)
	}
	a := waitCampaign(c, id, "the campaign completes", func(a map[string]any) bool { return a["status"] == "completed" })

	st := stats(a)
	if a["recipients"] != 3.0 || st["sent"] != 3.0 || st["failed"] != 0.0 || st["opted_out"] != 2.0 || st["skipped_no_address"] != 1.0 ||
		a["completed_at"] == nil {
		t.Fatalf("completed campaign %v", a)
	}
	c.fails(409, "conflict", "", http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "")

	msgs := relay.Messages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages sent, want 3", len(msgs))
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		to := m.To[0]
		if !consenting[to] || seen[to] {
			t.Fatalf("sent to %s (consenting %v, seen %v)", to, consenting, seen)
		}
		seen[to] = true
		h, text, html := mailParts(t, m.Data)
		if !strings.HasPrefix(h.Get("Subject"), "Hello First") || !strings.Contains(text, "new arrivals at mail-campaign.example.com") ||
			!strings.Contains(html, "<b>First") || !strings.HasPrefix(h.Get("X-Service-Message-Id"), "msg_") ||
			!strings.HasPrefix(h.Get("Message-Id"), "<"+h.Get("X-Service-Message-Id")+"@") {
			t.Fatalf("message headers %v text %q html %q", h, text, html)
		}
	}

	// The message log lists them, with their campaign, newest first.
	list := c.list("/api/v1/messages?filter[campaign_id]="+id+"&limit=2", "")
	if len(list) != 3 {
		t.Fatalf("message log: %v", list)
	}
	for _, m := range list {
		ma := attrs(m)
		if ma["status"] != "sent" || ma["channel"] != "email" || ma["campaign_id"] != id || ma["sent_at"] == nil || ma["provider"] != "smtp" {
			t.Fatalf("logged message %v", m)
		}
	}
	one := data(c.ok(200, http.MethodGet, "/api/v1/messages/"+list[0]["id"].(string), ""), t)
	if attrs(one)["customer_id"] == nil {
		t.Fatalf("message %v", one)
	}
	c.fails(400, "invalid_parameter", "filter[status]", http.MethodGet, "/api/v1/messages?filter[status]=bounced", "")
	if n := len(c.list("/api/v1/messages?filter[status]=failed", "")); n != 0 {
		t.Fatalf("%d failed messages", n)
	}
}

// waStatus is a signed-ready WhatsApp statuses notification of one
// message.
func waStatus(waba, wamid, status, callback string, at int64) []byte {
	return []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":%q,"changes":[{"value":{
"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},
"statuses":[{"id":%q,"status":%q,"timestamp":"%d","recipient_id":"16505551234","biz_opaque_callback_data":%q}]},
"field":"messages"}]}]}`, waba, wamid, status, at, callback))
}

// whatsAppSender connects a WhatsApp account with an access token (so the
// shop can send) and approves the template_approved fixture's template.
func whatsAppSender(t *testing.T, s *testServer, v *openapitest.Validator, rm *sql.DB, domainName, waba string) waTenant {
	t.Helper()
	tn := newTenant(t, s.dir, domainName, "agency", "*")
	wt := waTenant{tenant: tn, waba: waba, appSecret: "app-secret-" + waba + "-0123456789", verifyToken: "verify-" + waba}
	out := cli(t, s.dir, "messaging", "connect", "--shop", tn.shopID, "--business-account-id", waba,
		"--phone-number-id", "106540352242922", "--app-secret", wt.appSecret, "--verify-token", wt.verifyToken,
		"--access-token", "EAAG-test-access-token-"+waba)
	waitMessaging(t, rm, uint64(out["position"].(float64)))
	waitForToken(t, s, tn)
	waDeliver(t, s, v, rm, wt, "template_approved")
	return wt
}

// customerIDs maps the shop's customers' e-mail addresses to their ids.
func customerIDs(c catalogClient, pos string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, cu := range c.list("/api/v1/customers?limit=100", pos) {
		if e, ok := attrs(cu)["email"].(string); ok {
			out[e] = cu["id"].(string)
		}
	}
	return out
}

// TestWhatsAppCampaignSendsTemplatesAndStatusesMoveTheCounts launches a
// WhatsApp campaign through the Cloud API's contract: each customer who
// opted in gets the approved template with its merged parameters and the
// message id as callback data; the platform's status webhooks land on the
// right messages and move the campaign's counts.
func TestWhatsAppCampaignSendsTemplatesAndStatusesMoveTheCounts(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) { c.WhatsAppAPIURL = api.URL })
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := whatsAppSender(t, s, v, rm, "wa-campaign.example.com", "6001")
	c := catalogClient{t: t, s: s, v: v, token: wt.token}

	// A campaign naming a template the shop does not have is refused.
	var pos string
	for i := 0; i < 3; i++ {
		r := s.webhook(t, wt.tenant, "customers/create", fmt.Sprintf("wa-c-%d", i),
			stateCustomer(int64(8000+i), fmt.Sprintf("wa%d@example.com", i), "not_subscribed", "not_subscribed"))
		if r.status != http.StatusOK {
			t.Fatalf("customers/create: %d %s", r.status, r.body)
		}
		pos = r.position(t)
	}
	ids := customerIDs(c, pos)
	for _, e := range []string{"wa0@example.com", "wa2@example.com"} {
		pos = c.ok(201, http.MethodPost, "/api/v1/customers/"+ids[e]+"/consents",
			`{"data":{"attributes":{"channel":"whatsapp","state":"subscribed"}}}`).position(t)
	}
	aud := data(c.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"All"}}}`), t)["id"].(string)
	unknown := data(c.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody("Unknown", aud, "whatsapp", "999")), t)["id"].(string)
	c.fails(422, "validation_failed", "template_id", http.MethodPost, "/api/v1/campaigns/"+unknown+"/launch", "")

	id := data(c.ok(201, http.MethodPost, "/api/v1/campaigns", `{"data":{"attributes":{"name":"Drop","audience_id":"`+aud+`",
		"channel":"whatsapp","template_id":"`+approvedTemplate+`","content":{"parameters":["{{first_name}}","20%"]}}}}`), t)["id"].(string)
	r := c.ok(200, http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "", "X-Wait-For-Position", pos)
	if tpl := attrs(data(r, t))["template"]; tpl == nil {
		// The answer may come before the read model folded the launch.
		_ = tpl
	}
	a := waitCampaign(c, id, "the campaign completes", completedAndCounted)
	if a["recipients"] != 2.0 || stats(a)["sent"] != 2.0 || stats(a)["opted_out"] != 1.0 {
		t.Fatalf("campaign %v", a)
	}
	if tpl := a["template"].(map[string]any); tpl["name"] != "order_confirmation" || tpl["language"] != "en_US" {
		t.Fatalf("template %v", tpl)
	}
	sent := api.Sent()
	if len(sent) != 2 {
		t.Fatalf("%d messages sent: %+v", len(sent), sent)
	}
	for _, m := range sent {
		if m.Template != "order_confirmation" || m.Language != "en_US" || len(m.Parameters) != 2 || !strings.HasPrefix(m.Parameters[0], "First80") ||
			m.Parameters[1] != "20%" || !strings.HasPrefix(m.CallbackData, "msg_") || m.Token != "EAAG-test-access-token-6001" ||
			m.PhoneNumberID != "106540352242922" || !strings.HasPrefix(m.To, "1555") {
			t.Fatalf("sent %+v", m)
		}
	}

	// The platform's statuses land on the messages by their wamid.
	now := time.Now().Unix()
	for _, st := range []struct{ wamid, status string }{{sent[0].WAMID, "delivered"}, {sent[1].WAMID, "delivered"}, {sent[1].WAMID, "read"}} {
		if r := waPost(t, s, v, wt.appSecret, waStatus(wt.waba, st.wamid, st.status, "", now)); r.status != http.StatusOK {
			t.Fatalf("status: %d %s", r.status, r.body)
		}
		now++
	}
	a = waitCampaign(c, id, "statuses are counted", func(a map[string]any) bool {
		return stats(a)["delivered"] == 2.0 && stats(a)["read"] == 1.0
	})
	if st := stats(a); st["delivery_rate"] != 1.0 || st["open_rate"] != 0.5 {
		t.Fatalf("rates %v", st)
	}
	read := c.list("/api/v1/messages?filter[status]=read&filter[channel]=whatsapp", "")
	if len(read) != 1 || attrs(read[0])["provider_message_id"] != sent[1].WAMID || attrs(read[0])["opened_at"] == nil ||
		attrs(read[0])["delivered_at"] == nil {
		t.Fatalf("read messages %v", read)
	}
}

// TestCampaignPauseStopsSendingAndResumeSendsNobodyTwice holds the
// provider's answers, pauses the campaign while sends are under way,
// checks that nothing more is sent, resumes it, and finds each recipient
// served exactly once; a provider failing with 503 at first is retried.
func TestCampaignPauseStopsSendingAndResumeSendsNobodyTwice(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) { c.WhatsAppAPIURL = api.URL })
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := whatsAppSender(t, s, v, rm, "wa-pause.example.com", "6002")
	c := catalogClient{t: t, s: s, v: v, token: wt.token}
	const n = 60
	var pos string
	for i := 0; i < n; i++ {
		r := s.webhook(t, wt.tenant, "customers/create", fmt.Sprintf("wp-c-%d", i),
			stateCustomer(int64(9000+i), fmt.Sprintf("wp%d@example.com", i), "not_subscribed", "not_subscribed"))
		if r.status != http.StatusOK {
			t.Fatalf("customers/create: %d %s", r.status, r.body)
		}
		pos = r.position(t)
	}
	for _, id := range customerIDs(c, pos) {
		pos = c.ok(201, http.MethodPost, "/api/v1/customers/"+id+"/consents",
			`{"data":{"attributes":{"channel":"whatsapp","state":"subscribed"}}}`).position(t)
	}
	// The provider holds every request until released, and fails the
	// first attempt of every fifth recipient with a 503.
	gate := make(chan struct{})
	var mu sync.Mutex
	failed := map[string]bool{}
	api.FailWith(func(m whatsapptest.Sent) *whatsapptest.Failure {
		<-gate
		mu.Lock()
		defer mu.Unlock()
		if m.To[len(m.To)-1] == '5' && !failed[m.To] {
			failed[m.To] = true
			return &whatsapptest.Failure{Status: 503, Code: 131016, Message: "Service unavailable"}
		}
		return nil
	})
	aud := data(c.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"All"}}}`), t)["id"].(string)
	id := data(c.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody("Pause me", aud, "whatsapp", approvedTemplate)), t)["id"].(string)
	c.ok(200, http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "", "X-Wait-For-Position", pos)
	// Wait until sends are held at the provider, then pause.
	eventually(t, 30*time.Second, "sends reach the provider", func() bool { return api.Waiting() > 0 })
	c.ok(200, http.MethodPost, "/api/v1/campaigns/"+id+"/pause", "")
	sdb := sendingDB(t, dir)
	eventually(t, 30*time.Second, "the sender sees the pause", func() bool {
		var status string
		_ = sdb.QueryRow(`SELECT status FROM snd_campaigns WHERE campaign_id = ?`, id).Scan(&status)
		return status == "paused"
	})
	close(gate)
	// Once the sends under way finished, nothing of the campaign is queued
	// or in flight: what was sent is all that is sent while paused.
	eventually(t, 30*time.Second, "the sends under way finish", func() bool {
		var open int
		_ = sdb.QueryRow(`SELECT COUNT(*) FROM snd_outbox WHERE campaign_id = ? AND state IN ('queued', 'in_flight')`, id).Scan(&open)
		return open == 0
	})
	paused := api.Count()
	if paused >= n {
		t.Fatalf("all %d sent before the pause took effect", paused)
	}
	if a := campaignNow(c, id, ""); a["status"] != "paused" {
		t.Fatalf("status %v", a["status"])
	}
	c.ok(200, http.MethodPost, "/api/v1/campaigns/"+id+"/resume", "")
	a := waitCampaign(c, id, "the campaign completes", completedAndCounted)
	if stats(a)["sent"] != float64(n) || stats(a)["failed"] != 0.0 {
		t.Fatalf("campaign %v", a)
	}
	to := map[string]int{}
	for _, m := range api.Sent() {
		to[m.To]++
	}
	if len(to) != n {
		t.Fatalf("%d recipients served, want %d", len(to), n)
	}
	for k, c := range to {
		if c != 1 {
			t.Fatalf("%s served %d times", k, c)
		}
	}
	if len(failed) == 0 {
		t.Fatal("no send failed: the retry path was not exercised")
	}
}

// sendingDB opens the sending store read-only, as another process would.
func sendingDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "sending.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// waQuality is a phone_number_quality_update notification.
func waQuality(waba, rating, tier string, at int64) []byte {
	return []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":%q,"time":%d,"changes":[{"value":{
"display_phone_number":"15550783881","event":"DOWNGRADE","current_limit":%q,"quality_rating":%q},"field":"phone_number_quality_update"}]}]}`,
		waba, at, tier, rating))
}

// TestQualityThrottlesTheDailyAllowance: a number of tier TIER_50 rated
// YELLOW sends half its allowance (25) and the rest of the campaign
// waits; GREEN restores the full allowance (50 in 24 hours) and the
// campaign completes; a second campaign sends what is left of the day and
// continues the next day (a controllable clock). YELLOW is announced as a
// P2 WhatsAppSendingLimitChanged event.
func TestQualityThrottlesTheDailyAllowance(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	var clock atomic.Int64
	clock.Store(time.Now().UnixMicro())
	now := func() time.Time { return time.UnixMicro(clock.Load()) }
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) { c.WhatsAppAPIURL, c.Test.Sending.Now = api.URL, now })
	rm := messagingDB(t, dir)
	sdb := sendingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := whatsAppSender(t, s, v, rm, "wa-quality.example.com", "6003")
	c := catalogClient{t: t, s: s, v: v, token: wt.token}
	const n = 40
	var pos string
	for i := 0; i < n; i++ {
		r := s.webhook(t, wt.tenant, "customers/create", fmt.Sprintf("wq-c-%d", i),
			stateCustomer(int64(30000+i), fmt.Sprintf("wq%d@example.com", i), "not_subscribed", "not_subscribed"))
		if r.status != http.StatusOK {
			t.Fatalf("customers/create: %d %s", r.status, r.body)
		}
		pos = r.position(t)
	}
	for _, id := range customerIDs(c, pos) {
		c.ok(201, http.MethodPost, "/api/v1/customers/"+id+"/consents", `{"data":{"attributes":{"channel":"whatsapp","state":"subscribed"}}}`)
	}
	quality := func(rating string, at int64) {
		t.Helper()
		if r := waPost(t, s, v, wt.appSecret, waQuality(wt.waba, rating, "TIER_50", at)); r.status != http.StatusOK {
			t.Fatalf("quality: %d %s", r.status, r.body)
		}
		eventually(t, time.Minute, "the sender sees "+rating, func() bool {
			var got string
			_ = sdb.QueryRow(`SELECT rating FROM snd_numbers WHERE shop_id = ?`, wt.shopID).Scan(&got)
			return got == rating
		})
	}
	// settled waits until the campaign's messages are all sent or waiting
	// for a later day, and returns how many were sent.
	settled := func(id string) int {
		t.Helper()
		var sent int
		eventually(t, time.Minute, "the campaign's sends settle", func() bool {
			var open, all int
			_ = sdb.QueryRow(`SELECT COUNT(*) FROM snd_outbox WHERE campaign_id = ? AND (state IN ('in_flight', 'held')
				OR (state = 'queued' AND due_at <= ?))`, id, now().UnixMicro()).Scan(&open)
			_ = sdb.QueryRow(`SELECT COUNT(*) FROM snd_outbox WHERE campaign_id = ?`, id).Scan(&all)
			_ = sdb.QueryRow(`SELECT COUNT(*) FROM snd_outbox WHERE campaign_id = ? AND outcome = 'sent'`, id).Scan(&sent)
			return all == n && open == 0
		})
		return sent
	}
	quality("YELLOW", 1764000000)
	ar := c.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"All"}}}`)
	aud := data(ar, t)["id"].(string)
	first := data(c.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody("Throttled", aud, "whatsapp", approvedTemplate)), t)["id"].(string)
	c.ok(200, http.MethodPost, "/api/v1/campaigns/"+first+"/launch", "", "X-Wait-For-Position", ar.position(t))
	if sent := settled(first); sent != 25 || api.Count() != 25 {
		t.Fatalf("YELLOW on TIER_50: %d sent (%d at the API), want 25", sent, api.Count())
	}
	var limits []*domain.WhatsAppSendingLimitChanged
	withTestCore(t, dir, func(core *Core) {
		for _, e := range readLog(t, dir) {
			if e.Type == "WhatsAppSendingLimitChanged" && e.ShopID == wt.shopID {
				d, err := core.Codec.Decode(context.Background(), &e)
				if err != nil {
					t.Fatal(err)
				}
				limits = append(limits, d.Event.(*domain.WhatsAppSendingLimitChanged))
			}
		}
	})
	if len(limits) != 1 || limits[0].Severity != "P2" || limits[0].DailyLimit != 25 || limits[0].QualityRating != "YELLOW" {
		t.Fatalf("limit events %+v", limits)
	}

	quality("GREEN", 1764000100)
	if a := waitCampaign(c, first, "GREEN restores the allowance", completedAndCounted); stats(a)["sent"] != float64(n) {
		t.Fatalf("campaign %v", a)
	}
	// The day's allowance is spent but for 10: a second campaign sends 10,
	// and the rest a day later.
	second := data(c.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody("Next day", aud, "whatsapp", approvedTemplate)), t)["id"].(string)
	c.ok(200, http.MethodPost, "/api/v1/campaigns/"+second+"/launch", "")
	if sent := settled(second); sent != 10 {
		t.Fatalf("second campaign: %d sent the first day, want 10", sent)
	}
	clock.Add((24*time.Hour + time.Minute).Microseconds())
	if a := waitCampaign(c, second, "the rest goes the next day", completedAndCounted); stats(a)["sent"] != float64(n) {
		t.Fatalf("second campaign %v", a)
	}
	if api.Count() != 2*n {
		t.Fatalf("%d messages at the API, want %d", api.Count(), 2*n)
	}
}

// TestOptOutStopsMarketingMessagesNotSentYet: a campaign waits for its
// template's approval; meanwhile one recipient replies STOP. Once the
// template is approved the others get the message and the one who opted
// out is skipped (counted as opted out), not sent to.
func TestOptOutStopsMarketingMessagesNotSentYet(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) { c.WhatsAppAPIURL = api.URL })
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := whatsAppSender(t, s, v, rm, "wa-optout.example.com", "6004")
	waDeliver(t, s, v, rm, wt, "template_rejected")
	c := catalogClient{t: t, s: s, v: v, token: wt.token}
	var pos string
	for i := 0; i < 3; i++ {
		r := s.webhook(t, wt.tenant, "customers/create", fmt.Sprintf("wo-c-%d", i),
			stateCustomer(int64(40000+i), fmt.Sprintf("wo%d@example.com", i), "not_subscribed", "not_subscribed"))
		if r.status != http.StatusOK {
			t.Fatalf("customers/create: %d %s", r.status, r.body)
		}
		pos = r.position(t)
	}
	for _, id := range customerIDs(c, pos) {
		pos = c.ok(201, http.MethodPost, "/api/v1/customers/"+id+"/consents",
			`{"data":{"attributes":{"channel":"whatsapp","state":"subscribed"}}}`).position(t)
	}
	aud := data(c.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"All"}}}`), t)["id"].(string)
	id := data(c.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody("Waits", aud, "whatsapp", rejectedTemplate)), t)["id"].(string)
	r := c.ok(200, http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "", "X-Wait-For-Position", pos)
	if a := attrs(data(r, t)); a["status"] != "awaiting_approval" || a["recipients"] != 3.0 {
		t.Fatalf("launch: %s", r.body)
	}
	// The customer of +1 555 40001 replies STOP (customerPayload's phone
	// is +1555 and the id on 7 digits).
	// A second ahead: the reply carries whole seconds, and the most recent
	// decision wins over the opt-in recorded a moment ago.
	stop := waReply(t, wt.waba, "15550040001", "wamid.STOP40001", "STOP", time.Now().Add(2*time.Second))
	if r := waPost(t, s, v, wt.appSecret, stop); r.status != http.StatusOK {
		t.Fatalf("STOP: %d %s", r.status, r.body)
	}
	ids := customerIDs(c, "")
	stopped := ids["wo1@example.com"]
	eventually(t, time.Minute, "the STOP is recorded", func() bool {
		cu := c.call(http.MethodGet, "/api/v1/customers/"+stopped, "")
		if cu.status != http.StatusOK {
			return false
		}
		consent, _ := attrs(data(cu, t))["consent"].(map[string]any)
		wa, _ := consent["whatsapp"].(map[string]any)
		return wa["state"] == "unsubscribed"
	})
	// The template is approved: the campaign sends.
	approved := bytes.ReplaceAll(waFixture(t, "template_approved", wt.waba), []byte(approvedTemplate), []byte(rejectedTemplate))
	if r := waPost(t, s, v, wt.appSecret, approved); r.status != http.StatusOK {
		t.Fatalf("approval: %d %s", r.status, r.body)
	}
	a := waitCampaign(c, id, "the campaign completes", completedAndCounted)
	if st := stats(a); st["sent"] != 2.0 || st["skipped"] != 1.0 || st["opted_out"] != 1.0 {
		t.Fatalf("campaign %v", a)
	}
	for _, m := range api.Sent() {
		if strings.HasSuffix(m.To, "0040001") {
			t.Fatalf("sent to the customer who opted out: %+v", m)
		}
	}
	skipped := c.list("/api/v1/messages?filter[status]=skipped", "")
	if len(skipped) != 1 || attrs(skipped[0])["skip_reason"] != "no_consent" || attrs(skipped[0])["customer_id"] != stopped {
		t.Fatalf("skipped %v", skipped)
	}
}
