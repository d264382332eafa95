package main

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/outbound"
)

// mailSink is a local SMTP server that keeps every message it receives.
type mailSink struct {
	addr  string
	mu    sync.Mutex
	mails []sunkMail
}

type sunkMail struct {
	from string
	to   []string
	data []byte
}

func (m *mailSink) received() []sunkMail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mails)
}

type sinkSession struct {
	sink *mailSink
	cur  sunkMail
}

func (s *sinkSession) Reset()        { s.cur = sunkMail{} }
func (s *sinkSession) Logout() error { return nil }
func (s *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	s.cur.from = from
	return nil
}
func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = b
	s.sink.mu.Lock()
	s.sink.mails = append(s.sink.mails, s.cur)
	s.sink.mu.Unlock()
	return nil
}

// startMailSink starts a go-smtp server on 127.0.0.1:0 until the test ends.
func startMailSink(t *testing.T) *mailSink {
	t.Helper()
	sink := &mailSink{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &sinkSession{sink: sink}, nil }))
	srv.Domain = "localhost"
	srv.MaxMessageBytes = 10 << 20
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sink.addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return sink
}

// attachment returns the decoded JSON attachment of a mail.
func attachment(t *testing.T, raw []byte) (map[string]any, *mail.Message) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("content type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			t.Fatal("no attachment")
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.Header.Get("Content-Disposition"), "attachment") {
			continue
		}
		if p.Header.Get("Content-Type") == "" || !strings.HasPrefix(p.Header.Get("Content-Type"), "application/json") {
			t.Errorf("attachment type %q", p.Header.Get("Content-Type"))
		}
		b, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, p))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("attachment: %v", err)
		}
		return doc, msg
	}
}

// gdprRequests lists a shop's GDPR requests over HTTP, validated.
func gdprRequests(t *testing.T, s *testServer, v *openapitest.Validator, token string) []map[string]any {
	t.Helper()
	r := s.get(t, "/api/v1/gdpr-requests", token)
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != http.StatusOK || r.header.Get("X-Service-Stability") != "beta" {
		t.Fatalf("GET /api/v1/gdpr-requests: %d %s", r.status, r.body)
	}
	var out []map[string]any
	for _, it := range r.json(t)["data"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// waitGDPR waits until the shop's only request satisfies cond, and returns it.
func waitGDPR(t *testing.T, s *testServer, v *openapitest.Validator, token, what string, cond func(a map[string]any) bool) map[string]any {
	t.Helper()
	var got map[string]any
	eventually(t, 20*time.Second, what, func() bool {
		rows := gdprRequests(t, s, v, token)
		if len(rows) != 1 {
			return false
		}
		got = rows[0]
		return cond(attrs(got))
	})
	return got
}

const drCustomer = "7064055069303700841" // the data-request fixture's customer

// seedCustomer delivers the customer's profile, a checkout and an order
// (two touchpoints) over signed webhooks; the profile is subscribed to
// e-mail marketing.
func seedCustomer(t *testing.T, s *testServer, tn tenant) {
	t.Helper()
	s.deliver(t, tn, shopify.TopicCustomersCreate, "dlv-dr-cus-"+tn.shopID,
		customerPayload(7064055069303700841, "noor.haddad@example.com", 1, "114.30", "2026-03-01T10:00:00-05:00"))
	s.deliver(t, tn, shopify.TopicCheckoutsCreate, "dlv-dr-co-"+tn.shopID, fixture(t, shopify.TopicCheckoutsCreate))
	s.deliverOrder(t, tn, testOrder{ext: 5984321190041, customer: drCustomer, created: "2026-03-10T12:00:00Z", total: "114.30", financial: "paid"})
}

// requestData delivers the customers/data_request fixture, naming the
// WhatsApp fixture's phone number.
func requestData(t *testing.T, s *testServer, tn tenant) {
	t.Helper()
	body := bytes.Replace(fixture(t, shopify.TopicCustomersDataRequest), []byte("+31612345678"), []byte("+1 650 555 1234"), 1)
	s.deliver(t, tn, shopify.TopicCustomersDataRequest, "dlv-dr-req-"+tn.shopID, body)
}

// TestDataRequestExport: customers/data_request over signed webhooks is
// answered (a) by e-mail to the shop's contact address through a local
// SMTP server, the attached export holding the profile, events, messages,
// attributions and opt-ins; (b) by a signed HTTPS POST to the shop's
// data-request URL; (c) a destination failing first (500) is visible in
// the API with attempts=1, then completes; (d) a shop with no destination
// shows no_destination. GdprRequestCompleted is in the log once per
// delivered request, and the logs hold no personal data or secret.
func TestDataRequestExport(t *testing.T) {
	dir := t.TempDir()
	sink := startMailSink(t)
	type post struct {
		path   string
		header http.Header
		body   []byte
	}
	posts := make(chan post, 10)
	var flakyCalls atomic.Int32
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/flaky" {
			if flakyCalls.Add(1) == 1 {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			<-release // the second attempt waits until the test saw the first failure
		}
		posts <- post{path: r.URL.Path, header: r.Header.Clone(), body: b}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	s := startServerWith(t, dir, func(c *Config) {
		c.SMTPAddr, c.SMTPFrom = sink.addr, "privacy@cgp.example"
		c.OutboundAllowPrivate, c.Test.OutboundTLS = true, trustTLS(hook) // the endpoint is on 127.0.0.1
		c.Test.ExportRetry, c.Test.ExportPoll = 20*time.Millisecond, 20*time.Millisecond
	})
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)

	// (a) E-mail: the contact address set with `cgp shops privacy`.
	wt := connectWhatsApp(t, s, rm, "dr-mail.example.com", "agency", "1000000001")
	mailShop := wt.tenant
	set := cli(t, dir, "shops", "privacy", "--shop", mailShop.shopID, "--contact-email", "dpo@dr-mail.example.com")
	mailSecret, _ := set["signing_secret"].(string)
	if !strings.HasPrefix(mailSecret, outbound.SecretPrefix) || set["contact_email"] != "dpo@dr-mail.example.com" {
		t.Fatalf("shops privacy: %v", set)
	}
	waitForToken(t, s, mailShop)
	seedCustomer(t, s, mailShop)
	waDeliver(t, s, v, rm, wt, "messages_text") // from 16505551234
	requestData(t, s, mailShop)
	done := waitGDPR(t, s, v, mailShop.token, "the e-mailed export completes", func(a map[string]any) bool { return a["status"] == "completed" })
	a := attrs(done)
	customerID := domain.CustomerIDFromExternal(mailShop.shopID, drCustomer)
	if a["channel"] != "email" || a["kind"] != "customers/data_request" || a["customer_id"] != customerID || a["attempts"] != 1.0 ||
		a["platform_request_id"] != "9912" || a["last_reason"] != nil || a["completed_at"] == nil || a["sha256"] == nil {
		t.Errorf("completed request: %v", a)
	}
	mails := sink.received()
	if len(mails) != 1 || !slices.Equal(mails[0].to, []string{"dpo@dr-mail.example.com"}) || mails[0].from != "privacy@cgp.example" {
		t.Fatalf("mails: %d %+v", len(mails), mails)
	}
	doc, msg := attachment(t, mails[0].data)
	if !strings.Contains(msg.Header.Get("Subject"), done["id"].(string)) {
		t.Errorf("subject %q", msg.Header.Get("Subject"))
	}
	if doc["format_version"] != 1.0 || doc["shop_id"] != mailShop.shopID || doc["customer_id"] != customerID ||
		doc["request_id"] != done["id"] || doc["customer_known"] != true || doc["generated_at"] == nil {
		t.Errorf("export header: %v", doc)
	}
	profile, _ := doc["profile"].(map[string]any)
	if profile["email"] != "noor.haddad@example.com" || profile["first_name"] != "First7064055069303700841" || profile["external_id"] != drCustomer {
		t.Errorf("profile: %v", profile)
	}
	optIns := toMaps(doc["opt_ins"])
	if len(optIns) != 1 || optIns[0]["channel"] != "email" || optIns[0]["consented"] != true {
		t.Errorf("opt-ins: %v", optIns)
	}
	types := map[string]int{}
	for _, e := range toMaps(doc["events"]) {
		types[e["type"].(string)]++
	}
	for _, typ := range []string{"CustomerCreated", "CheckoutRecorded", "OrderRecorded", "WhatsAppMessageReceived"} {
		if types[typ] == 0 {
			t.Errorf("no %s among the events: %v", typ, types)
		}
	}
	for _, e := range toMaps(doc["events"]) {
		if e["type"] == "CustomerCreated" && e["data"].(map[string]any)["email"] != "noor.haddad@example.com" {
			t.Errorf("the customer event is not decoded: %v", e["data"])
		}
	}
	msgs := toMaps(doc["messages"])
	if len(msgs) != 1 || msgs[0]["direction"] != "inbound" || msgs[0]["text"] != "Does it come in another color?" || msgs[0]["from"] != "16505551234" {
		t.Errorf("messages: %v", msgs)
	}
	attributions := doc["attributions"].(map[string]any)
	tps := toMaps(attributions["touchpoints"])
	orderID := domain.OrderIDFromExternal(mailShop.shopID, "5984321190041")
	checkoutID := domain.CheckoutIDFromExternal(mailShop.shopID, "33012345678901")
	if len(tps) != 2 || tps[0]["id"] != checkoutID || tps[0]["utm_source"] != "facebook" || tps[1]["id"] != orderID {
		t.Errorf("touchpoints: %v", tps)
	}
	credits := toMaps(attributions["credits"])
	if len(credits) == 0 || credits[0]["order_id"] != orderID {
		t.Errorf("credits: %v", credits)
	}
	if n := len(toMaps(doc["events"])); doc["counts"].(map[string]any)["events"] != float64(n) {
		t.Errorf("counts: %v, %d events", doc["counts"], n)
	}

	// (b) HTTPS POST to the data-request URL, signed with the secret.
	hookShop := newTenant(t, dir, "dr-hook.example.com", "agency", "customers:read")
	set = cli(t, dir, "shops", "privacy", "--shop", hookShop.shopID, "--data-request-url", hook.URL+"/ok", "--outbound-allow-private")
	hookSecret := set["signing_secret"].(string)
	waitForToken(t, s, hookShop)
	seedCustomer(t, s, hookShop)
	requestData(t, s, hookShop)
	var p post
	select {
	case p = <-posts:
	case <-time.After(20 * time.Second):
		t.Fatal("no POST to the data-request URL")
	}
	if p.path != "/ok" || !outbound.Verify([]byte(hookSecret), p.body, p.header.Get(outbound.HeaderSignature)) ||
		outbound.Verify([]byte(mailSecret), p.body, p.header.Get(outbound.HeaderSignature)) {
		t.Fatalf("POST %s: signature %q does not verify", p.path, p.header.Get(outbound.HeaderSignature))
	}
	if p.header.Get(outbound.HeaderEventType) != "customer.data_request" || !strings.HasPrefix(p.header.Get(outbound.HeaderEventID), "evt_") ||
		p.header.Get(outbound.HeaderTimestamp) == "" {
		t.Errorf("headers: %v", p.header)
	}
	var note map[string]any
	if err := json.Unmarshal(p.body, &note); err != nil {
		t.Fatal(err)
	}
	data, _ := note["data"].(map[string]any)
	if note["type"] != "customer.data_request" || note["id"] != p.header.Get(outbound.HeaderEventID) || note["shop_id"] != hookShop.shopID ||
		data["customer_id"] != domain.CustomerIDFromExternal(hookShop.shopID, drCustomer) ||
		data["profile"].(map[string]any)["email"] != "noor.haddad@example.com" {
		t.Errorf("notification: %v", note)
	}
	a = attrs(waitGDPR(t, s, v, hookShop.token, "the posted export completes", func(a map[string]any) bool { return a["status"] == "completed" }))
	if a["channel"] != "webhook" || a["bytes"] != float64(len(p.body)) {
		t.Errorf("completed by webhook: %v (body %d bytes)", a, len(p.body))
	}

	// (c) A destination failing first, then working.
	flaky := newTenant(t, dir, "dr-flaky.example.com", "agency", "customers:read")
	cli(t, dir, "shops", "privacy", "--shop", flaky.shopID, "--data-request-url", hook.URL+"/flaky", "--outbound-allow-private")
	waitForToken(t, s, flaky)
	requestData(t, s, flaky)
	a = attrs(waitGDPR(t, s, v, flaky.token, "the first attempt fails", func(a map[string]any) bool { return a["attempts"] == 1.0 }))
	if a["status"] != "retrying" || a["last_reason"] != "http_500" || a["channel"] != "webhook" || a["next_attempt_at"] == nil ||
		a["completed_at"] != nil {
		t.Errorf("after a failed attempt: %v", a)
	}
	unblock()
	select {
	case p = <-posts:
	case <-time.After(20 * time.Second):
		t.Fatal("no retry")
	}
	var unknown map[string]any
	_ = json.Unmarshal(p.body, &unknown)
	if d := unknown["data"].(map[string]any); d["customer_known"] != false || d["profile"] != nil || len(d["events"].([]any)) != 0 {
		t.Errorf("export of an unknown customer: %v", d)
	}
	a = attrs(waitGDPR(t, s, v, flaky.token, "the retry completes", func(a map[string]any) bool { return a["status"] == "completed" }))
	if a["attempts"] != 2.0 || a["last_reason"] != "http_500" {
		t.Errorf("after the retry: %v", a)
	}

	// (d) No URL and no contact e-mail.
	lost := newTenant(t, dir, "dr-lost.example.com", "agency", "customers:read")
	waitForToken(t, s, lost)
	requestData(t, s, lost)
	a = attrs(waitGDPR(t, s, v, lost.token, "no destination", func(a map[string]any) bool { return a["attempts"] != 0.0 }))
	if a["status"] != "retrying" || a["last_reason"] != "no_destination" {
		t.Errorf("without destination: %v", a)
	}

	// The CLI lists the same.
	out := cli(t, dir, "gdpr", "requests", "--shop", flaky.shopID)
	if rows := toMaps(out["requests"]); len(rows) != 1 || rows[0]["status"] != "completed" || rows[0]["attempts"] != 2.0 {
		t.Errorf("cgp gdpr requests: %v", out)
	}
	s.stop()
	completed := map[string]int{}
	for _, e := range readLog(t, dir) {
		if e.Type == "GdprRequestCompleted" {
			completed[e.ShopID]++
		}
	}
	if completed[mailShop.shopID] != 1 || completed[hookShop.shopID] != 1 || completed[flaky.shopID] != 1 || completed[lost.shopID] != 0 {
		t.Errorf("GdprRequestCompleted events: %v", completed)
	}
	logs := s.logs.String()
	for _, secret := range []string{"noor.haddad@example.com", "Does it come in another color", "16505551234", mailSecret, hookSecret, "dpo@dr-mail"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold %q", secret)
		}
	}
	if len(sink.received()) != 1 {
		t.Errorf("%d mails, want 1", len(sink.received()))
	}
}

// TestShopsPrivacyValidates: the CLI refuses a plain-http URL, a URL
// with credentials, a bad e-mail and an unknown shop, and (point 10 of
// issue 14) every loopback, private, link-local or oddly written address
// of the SSRF report, naming the field; --outbound-allow-private admits
// them.
func TestShopsPrivacyValidates(t *testing.T) {
	dir := t.TempDir()
	tn := newTenant(t, dir, "dr-valid.example.com", "agency", "customers:read")
	for _, args := range [][]string{
		{"--shop", tn.shopID, "--data-request-url", "http://example.com/gdpr"},
		{"--shop", tn.shopID, "--data-request-url", "https://user:pw@example.com/gdpr"},
		{"--shop", tn.shopID, "--contact-email", "not an address"},
		{"--shop", "shop_unknown", "--contact-email", "dpo@example.com"},
	} {
		var out, errb bytes.Buffer
		if code := Run(t.Context(), append([]string{"shops", "privacy", "--data-dir", dir}, args...), &out, &errb); code == 0 {
			t.Errorf("%v: accepted: %s", args, out.String())
		}
	}
	for _, u := range []string{"https://127.0.0.1/gdpr", "https://[::1]/gdpr", "https://localhost/gdpr", "https://169.254.169.254/latest",
		"https://10.0.0.1/gdpr", "https://0177.0.0.1/gdpr", "https://2130706433/gdpr", "https://[::ffff:127.0.0.1]/gdpr"} {
		var out, errb bytes.Buffer
		code := Run(t.Context(), []string{"shops", "privacy", "--data-dir", dir, "--shop", tn.shopID, "--data-request-url", u}, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), "data_request_url") {
			t.Errorf("%s: exit %d, stderr %q, want refused naming data_request_url", u, code, errb.String())
		}
	}
	if set := cli(t, dir, "shops", "privacy", "--shop", tn.shopID, "--data-request-url", "http://127.0.0.1:9/gdpr", "--outbound-allow-private"); set["data_request_url"] != "http://127.0.0.1:9/gdpr" {
		t.Errorf("with --outbound-allow-private: %v", set)
	}
	out := cli(t, dir, "shops", "privacy", "--shop", tn.shopID, "--data-request-url", "https://example.com/gdpr")
	again := cli(t, dir, "shops", "privacy", "--shop", tn.shopID)
	if again["data_request_url"] != "https://example.com/gdpr" || again["signing_secret"] == out["signing_secret"] {
		t.Errorf("a second call keeps the URL and rotates the secret: %v %v", out, again)
	}
}

// trustTLS returns a TLS configuration trusting srv's certificate.
func trustTLS(srv *httptest.Server) *tls.Config {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig
}

// TestDataRequestURLGuardAtConnectTime (point 10 of issue 14): a
// data-request URL naming a loopback endpoint (here set by an operator
// whose CLI ran with --outbound-allow-private, as a URL recorded before
// the set-time check would be) is refused by the server's guard when it
// connects, through the name localhost as well as the literal address:
// the endpoint, listening on 127.0.0.1, never receives the export, and
// the recorded reason is the coarse address_refused, the same for a
// listening and a closed port, so a shop learns nothing about ports.
func TestDataRequestURLGuardAtConnectTime(t *testing.T) {
	dir := t.TempDir()
	hook, hits := countingHook(t, http.StatusNoContent)
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closed.Close()
	_, port, _ := net.SplitHostPort(hook.Listener.Addr().String())
	s := startServerWith(t, dir, func(c *Config) {
		c.Test.OutboundTLS = trustTLS(hook) // the guard is on: OutboundAllowPrivate is off by default
		c.Test.ExportRetry, c.Test.ExportPoll = time.Hour, 20*time.Millisecond
	})
	v := openapitest.NewValidator(t)
	for i, u := range []string{"https://localhost:" + port + "/ok", hook.URL + "/ok", closed.URL + "/ok", "https://[::1]:" + port + "/ok"} {
		tn := newTenant(t, dir, fmt.Sprintf("dr-guard%d.example.com", i), "agency", "customers:read")
		cli(t, dir, "shops", "privacy", "--shop", tn.shopID, "--data-request-url", u, "--outbound-allow-private")
		waitForToken(t, s, tn)
		requestData(t, s, tn)
		a := attrs(waitGDPR(t, s, v, tn.token, "the attempt to "+u+" is recorded", func(a map[string]any) bool { return a["attempts"] == 1.0 }))
		if a["status"] != "retrying" || a["last_reason"] != "address_refused" || a["channel"] != "webhook" {
			t.Errorf("%s: %v, want retrying with address_refused", u, a)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback endpoint received %d exports", n)
	}
	if logs := s.logs.String(); strings.Contains(logs, ":"+port) || strings.Contains(logs, "connection refused") || strings.Contains(logs, "prohibited") {
		t.Errorf("the logs hold the dial error or the port: %s", logs)
	}
}

// countingHook is a TLS endpoint that answers every request with status
// and counts them; it closes with the test.
func countingHook(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(hook.Close)
	return hook, &calls
}
