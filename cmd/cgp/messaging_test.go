package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest/whatsapp"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/messaging"
)

// fixtureWABA is the business account id of the WhatsApp fixtures.
const fixtureWABA = "102290129340398"

// waTenant is a shop with a connected WhatsApp business account.
type waTenant struct {
	tenant
	waba, appSecret, verifyToken string
}

// connectWhatsApp creates a shop on plan and connects waba to it through
// the CLI, waiting until the server's read model has the connection.
func connectWhatsApp(t *testing.T, s *testServer, rm *sql.DB, domainName, plan, waba string) waTenant {
	t.Helper()
	tn := newTenant(t, s.dir, domainName, plan, "*")
	wt := waTenant{tenant: tn, waba: waba, appSecret: "app-secret-" + waba + "-0123456789", verifyToken: "verify-" + waba}
	out := cli(t, s.dir, "messaging", "connect", "--shop", tn.shopID, "--business-account-id", waba,
		"--phone-number-id", "106540352242922", "--app-secret", wt.appSecret, "--verify-token", wt.verifyToken,
		"--access-token", "EAAG-test-token-"+waba)
	waitMessaging(t, rm, uint64(out["position"].(float64)))
	return wt
}

// messagingDB opens the data directory's read models read-only, as a
// separate process would.
func messagingDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "readmodels.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitMessaging waits until the messaging projector has applied pos.
func waitMessaging(t *testing.T, rm *sql.DB, pos uint64) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("messaging read model at %d", pos), func() bool {
		var at uint64
		err := rm.QueryRow(`SELECT position FROM _projector_checkpoints WHERE projector = ?`, messaging.Name).Scan(&at)
		return err == nil && at >= pos
	})
}

// waFixture reads a WhatsApp fixture with its business account id replaced.
func waFixture(t *testing.T, name, waba string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "ingest", "whatsapp", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b, []byte(fixtureWABA), []byte(waba))
}

// waPost posts a notification signed with secret.
func waPost(t *testing.T, s *testServer, v *openapitest.Validator, secret string, body []byte) response {
	t.Helper()
	r := do(t, http.MethodPost, s.base+whatsapp.Path, body, map[string]string{
		"Content-Type": "application/json", whatsapp.HeaderSignature: whatsapp.Sign([]byte(secret), body)})
	if v != nil {
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
	return r
}

// waDeliver posts a fixture for wt and waits until the read model has it.
func waDeliver(t *testing.T, s *testServer, v *openapitest.Validator, rm *sql.DB, wt waTenant, name string) {
	t.Helper()
	r := waPost(t, s, v, wt.appSecret, waFixture(t, name, wt.waba))
	if r.status != http.StatusOK {
		t.Fatalf("%s: %d %s", name, r.status, r.body)
	}
	pos, _ := strconv.ParseUint(r.position(t), 10, 64)
	waitMessaging(t, rm, pos)
}

func countTypes(events []eventlog.Event) map[string]int {
	n := map[string]int{}
	for _, e := range events {
		n[e.Type]++
	}
	return n
}

func TestMessagingConnectCLI(t *testing.T) {
	dir := t.TempDir()
	acc := cli(t, dir, "accounts", "create", "--name", "Msg", "--plan", "growth")
	shop := cli(t, dir, "shops", "create", "--account", acc["id"].(string), "--domain", "msg.example.com", "--plan", "growth",
		"--webhook-secret", "whsec_0123456789abcdef")["id"].(string)
	other := cli(t, dir, "shops", "create", "--account", acc["id"].(string), "--domain", "msg2.example.com", "--plan", "growth",
		"--webhook-secret", "whsec_0123456789abcdef")["id"].(string)
	const secret, verify = "app-secret-0123456789abcdef", "verify-token-42"
	args := []string{"messaging", "connect", "--shop", shop, "--business-account-id", "555", "--phone-number-id", "777",
		"--app-secret", secret, "--verify-token", verify, "--data-dir", dir}

	code, stdout, stderr := runCLI(args...)
	var out map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("connect: exit %d %q %q", code, stdout, stderr)
	}
	if out["shop_id"] != shop || out["business_account_id"] != "555" || out["phone_number_id"] != "777" || out["rotated"] != false ||
		out["webhook_path"] != "/webhooks/whatsapp" || out["position"] == nil {
		t.Errorf("connect output %s", stdout)
	}
	if strings.Contains(stdout+stderr, secret) || strings.Contains(stdout+stderr, verify) {
		t.Errorf("connect printed a secret: %s %s", stdout, stderr)
	}
	// Again, with the secrets from the environment twins: a rotation.
	t.Setenv("CGP_APP_SECRET", "app-secret-rotated-0123456789")
	t.Setenv("CGP_VERIFY_TOKEN", "verify-token-43")
	code, stdout, stderr = runCLI("messaging", "connect", "--shop", shop, "--business-account-id", "555", "--phone-number-id", "777", "--data-dir", dir)
	if code != 0 || !strings.Contains(stdout, `"rotated":true`) || strings.Contains(stdout, "rotated-0123456789") {
		t.Fatalf("reconnect: exit %d %q %q", code, stdout, stderr)
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"another shop", []string{"--shop", other, "--business-account-id", "555", "--phone-number-id", "777"}, 1, "another shop"},
		{"unknown shop", []string{"--shop", "shop_missing", "--business-account-id", "556", "--phone-number-id", "777"}, 1, "shop not found"},
		{"missing flag", []string{"--shop", shop, "--phone-number-id", "777"}, 2, "--business-account-id"},
		{"account id", []string{"--shop", shop, "--business-account-id", "waba-1", "--phone-number-id", "777"}, 2, "business_account_id"},
		{"short secret", []string{"--shop", shop, "--business-account-id", "557", "--phone-number-id", "777", "--app-secret", "short"}, 2, "app_secret"},
	} {
		code, stdout, stderr := runCLI(append(append([]string{"messaging", "connect"}, c.args...), "--data-dir", dir)...)
		if code != c.code || !strings.Contains(stderr, c.err) || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", c.name, code, stdout, stderr, c.code, c.err)
		}
	}

	p := cli(t, dir, "messaging", "connect-provider", "--shop", shop, "--provider", "twilio")
	tok, _ := p["token"].(string)
	if !domain.ValidProviderToken(tok) || p["callback_path"] != "/webhooks/providers/twilio?token="+tok || p["provider"] != "twilio" || p["rotated"] != false {
		t.Fatalf("connect-provider output %v", p)
	}
	if again := cli(t, dir, "messaging", "connect-provider", "--shop", shop, "--provider", "twilio"); again["token"] == tok || again["rotated"] != true {
		t.Fatalf("connect-provider again: %v", again)
	}
	if code, _, stderr := runCLI("messaging", "connect-provider", "--shop", shop, "--provider", "Not OK", "--data-dir", dir); code != 2 || !strings.Contains(stderr, "provider") {
		t.Errorf("bad provider name: exit %d %q", code, stderr)
	}
	if code, _, stderr := runCLI("messaging", "--data-dir", dir); code != 2 || !strings.Contains(stderr, "subcommand") {
		t.Errorf("no subcommand: exit %d %q", code, stderr)
	}
	// The log holds the secret sealed, never in clear.
	for _, e := range readLog(t, dir) {
		for _, s := range []string{secret, verify, "app-secret-rotated", tok} {
			if bytes.Contains(e.Data, []byte(s)) {
				t.Errorf("%s holds %q in clear", e.Type, s)
			}
		}
	}
}

func TestWhatsAppHandshake(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "hands.example.com", "growth", "1001")

	get := func(q url.Values) response {
		r := do(t, http.MethodGet, s.base+whatsapp.Path+"?"+q.Encode(), nil, nil)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	q := url.Values{"hub.mode": {"subscribe"}, "hub.challenge": {"1158201444"}, "hub.verify_token": {wt.verifyToken}}
	r := get(q)
	if r.status != 200 || string(r.body) != "1158201444" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
		r.header.Get("X-Service-Stability") != "stable" {
		t.Fatalf("handshake: %d %q %v", r.status, r.body, r.header)
	}
	for name, mod := range map[string]func(url.Values){
		"wrong token":       func(q url.Values) { q.Set("hub.verify_token", "verify-someone-else") },
		"no token":          func(q url.Values) { q.Del("hub.verify_token") },
		"wrong mode":        func(q url.Values) { q.Set("hub.mode", "unsubscribe") },
		"no mode":           func(q url.Values) { q.Del("hub.mode") },
		"no challenge":      func(q url.Values) { q.Del("hub.challenge") },
		"unsafe challenge":  func(q url.Values) { q.Set("hub.challenge", "<script>alert(1)</script> x") },
		"too long":          func(q url.Values) { q.Set("hub.challenge", strings.Repeat("7", 257)) },
		"token with suffix": func(q url.Values) { q.Set("hub.verify_token", wt.verifyToken+"x") },
	} {
		bad := url.Values{}
		for k, vs := range q {
			bad[k] = append([]string(nil), vs...)
		}
		mod(bad)
		if r := get(bad); r.status != 403 || r.errorCode(t) != whatsapp.CodeVerificationFailed {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	// Rotation: the new verify token works, the old one no longer does.
	out := cli(t, dir, "messaging", "connect", "--shop", wt.shopID, "--business-account-id", wt.waba, "--phone-number-id", "1",
		"--app-secret", wt.appSecret, "--verify-token", "verify-rotated-1001")
	waitMessaging(t, rm, uint64(out["position"].(float64)))
	if r := get(q); r.status != 403 {
		t.Errorf("old verify token after rotation: %d", r.status)
	}
	q.Set("hub.verify_token", "verify-rotated-1001")
	if r := get(q); r.status != 200 || string(r.body) != "1158201444" {
		t.Errorf("new verify token: %d %s", r.status, r.body)
	}
	s.stop()
	for _, secret := range []string{wt.verifyToken, "verify-rotated-1001", wt.appSecret} {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
}

func TestWhatsAppSignatures(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	a := connectWhatsApp(t, s, rm, "sig-a.example.com", "growth", "2001")
	b := connectWhatsApp(t, s, rm, "sig-b.example.com", "growth", "2002")
	before := countTypes(readLog(t, dir))
	body := waFixture(t, "messages_text", a.waba)

	r := do(t, http.MethodPost, s.base+whatsapp.Path, body, map[string]string{"Content-Type": "application/json"})
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != 400 || r.errorCode(t) != "signature_required" {
		t.Errorf("no signature: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodPost, s.base+whatsapp.Path, nil, nil); r.status != 400 {
		t.Errorf("bare POST: %d %s (a 301 or 404 would mean delivery is broken)", r.status, r.body)
	}
	twoAccounts := []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[%s,%s]}`,
		entryOf(t, waFixture(t, "statuses_read", a.waba)), entryOf(t, waFixture(t, "statuses_delivered", b.waba))))
	for name, c := range map[string]struct {
		body []byte
		sig  string
	}{
		"wrong secret":       {body, whatsapp.Sign([]byte("not-the-app-secret-0123"), body)},
		"other account's":    {body, whatsapp.Sign([]byte(b.appSecret), body)},
		"unknown account":    {waFixture(t, "messages_text", "2999"), whatsapp.Sign([]byte(a.appSecret), waFixture(t, "messages_text", "2999"))},
		"no sha256 prefix":   {body, strings.TrimPrefix(whatsapp.Sign([]byte(a.appSecret), body), "sha256=")},
		"altered body":       {bytes.Replace(body, []byte("another color"), []byte("another colour"), 1), whatsapp.Sign([]byte(a.appSecret), body)},
		"one of two secrets": {twoAccounts, whatsapp.Sign([]byte(a.appSecret), twoAccounts)},
		"no account named":   {[]byte(`{"object":"whatsapp_business_account","entry":[]}`), whatsapp.Sign([]byte(a.appSecret), []byte(`{"object":"whatsapp_business_account","entry":[]}`))},
		"smuggled entry id": {[]byte(`{"entry":[{"id":"2001","ID":"2002","changes":[]}]}`),
			whatsapp.Sign([]byte(a.appSecret), []byte(`{"entry":[{"id":"2001","ID":"2002","changes":[]}]}`))},
	} {
		r := do(t, http.MethodPost, s.base+whatsapp.Path, c.body, map[string]string{"Content-Type": "application/json", whatsapp.HeaderSignature: c.sig})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != 401 || r.errorCode(t) != "invalid_signature" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	big := make([]byte, 2<<20)
	if r := waPost(t, s, v, a.appSecret, big); r.status != 413 {
		t.Errorf("2 MiB body: %d", r.status)
	}
	if after := countTypes(readLog(t, dir)); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused deliveries reached the log: %v, was %v", after, before)
	}

	// Accounts of one app share its secret: a body naming both verifies
	// with each, and each entry goes to its own shop.
	c := connectWhatsAppWithSecret(t, s, rm, "sig-c.example.com", "2003", a.appSecret)
	both := []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[%s,%s]}`,
		entryOf(t, waFixture(t, "statuses_read", a.waba)), entryOf(t, waFixture(t, "statuses_failed", c.waba))))
	r = waPost(t, s, v, a.appSecret, both)
	if r.status != 200 {
		t.Fatalf("two accounts, one secret: %d %s", r.status, r.body)
	}
	pos, _ := strconv.ParseUint(r.position(t), 10, 64)
	waitMessaging(t, rm, pos)
	q := messaging.NewQueries(rm)
	ctx := context.Background()
	if m, err := q.Message(ctx, a.shopID, "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3MTE5MjcwMjlFNjJCODM1QTYA"); err != nil || m.OpenedAt.IsZero() {
		t.Errorf("shop a: %+v %v", m, err)
	}
	if m, err := q.Message(ctx, c.shopID, "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJGQjBGMzU2NEMzRjFCNEQ0QUQA"); err != nil || m.FailedAt.IsZero() {
		t.Errorf("shop c: %+v %v", m, err)
	}
	if _, err := q.Message(ctx, a.shopID, "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJGQjBGMzU2NEMzRjFCNEQ0QUQA"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("shop c's status reached shop a: %v", err)
	}
}

// connectWhatsAppWithSecret connects waba to a new shop with a given app
// secret.
func connectWhatsAppWithSecret(t *testing.T, s *testServer, rm *sql.DB, domainName, waba, secret string) waTenant {
	t.Helper()
	tn := newTenant(t, s.dir, domainName, "growth", "*")
	out := cli(t, s.dir, "messaging", "connect", "--shop", tn.shopID, "--business-account-id", waba,
		"--phone-number-id", "1", "--app-secret", secret, "--verify-token", "verify-"+waba)
	waitMessaging(t, rm, uint64(out["position"].(float64)))
	return waTenant{tenant: tn, waba: waba, appSecret: secret, verifyToken: "verify-" + waba}
}

// entryOf returns the first entry of a notification.
func entryOf(t *testing.T, body []byte) string {
	t.Helper()
	var n struct {
		Entry []json.RawMessage `json:"entry"`
	}
	if err := json.Unmarshal(body, &n); err != nil || len(n.Entry) == 0 {
		t.Fatalf("fixture: %v", err)
	}
	return string(n.Entry[0])
}

func TestWhatsAppEventsReachReadModels(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	pro := connectWhatsApp(t, s, rm, "proplus.example.com", "pro_plus", "3001")
	growth := connectWhatsApp(t, s, rm, "growth.example.com", "growth", "3002")
	q := messaging.NewQueries(rm)
	ctx := context.Background()
	const inboundID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="

	// Inbound messages: the AI concierge's queue on pro_plus, the human
	// queue on growth.
	waDeliver(t, s, v, rm, pro, "messages_text")
	waDeliver(t, s, v, rm, growth, "messages_text")
	waDeliver(t, s, v, rm, growth, "messages_interactive")
	for _, c := range []struct {
		wt    waTenant
		queue string
		n     int
	}{{pro, domain.QueueAIConcierge, 1}, {growth, domain.QueueHuman, 3}} {
		list, err := q.Queue(ctx, c.wt.shopID, c.queue, 10)
		if err != nil || len(list) != c.n {
			t.Fatalf("%s queue of %s: %d messages, %v", c.queue, c.wt.domain, len(list), err)
		}
		m, err := q.InboundMessage(ctx, c.wt.shopID, inboundID)
		if err != nil || m.Queue != c.queue || *m.Text != "Does it come in another color?" || *m.From != "16505551234" ||
			*m.ProfileName != "Sheena Nelson" || m.CustomerID != domain.CustomerIDFromExternal(c.wt.shopID, "phone:16505551234") ||
			!m.SentAt.Equal(time.Unix(1749416383, 0)) || m.BusinessAccountID != c.wt.waba {
			t.Errorf("%s: %+v %v", c.wt.domain, m, err)
		}
	}
	if other, _ := q.Queue(ctx, pro.shopID, domain.QueueHuman, 10); len(other) != 0 {
		t.Errorf("pro_plus message in the human queue: %+v", other)
	}

	// Statuses: delivered_at, opened_at, failed_at and the error code; a
	// status of a message not in the log yet creates its row.
	const outID, failedID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3MTE5MjcwMjlFNjJCODM1QTYA", "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJGQjBGMzU2NEMzRjFCNEQ0QUQA"
	waDeliver(t, s, v, rm, growth, "statuses_delivered")
	m, err := q.Message(ctx, growth.shopID, outID)
	if err != nil || !m.DeliveredAt.Equal(time.Unix(1750263773, 0)) || !m.OpenedAt.IsZero() || m.LastStatus != "delivered" ||
		m.CustomerID != domain.CustomerIDFromPhone(growth.shopID, "16505551234") || m.Source != "whatsapp" {
		t.Fatalf("after delivered: %+v %v", m, err)
	}
	waDeliver(t, s, v, rm, growth, "statuses_read")
	if m, err := q.Message(ctx, growth.shopID, outID); err != nil || !m.OpenedAt.Equal(time.Unix(1750263890, 0)) || !m.DeliveredAt.Equal(time.Unix(1750263773, 0)) {
		t.Fatalf("after read: %+v %v", m, err)
	}
	waDeliver(t, s, v, rm, growth, "statuses_failed")
	if m, err := q.Message(ctx, growth.shopID, failedID); err != nil || !m.FailedAt.Equal(time.Unix(1750264001, 0)) ||
		m.ErrorCode != "131047" || m.ErrorTitle != "Re-engagement message" || !m.DeliveredAt.IsZero() {
		t.Fatalf("after failed: %+v %v", m, err)
	}

	// Templates.
	waDeliver(t, s, v, rm, growth, "template_approved")
	if tp, err := q.Template(ctx, growth.shopID, "1689556908129832"); err != nil || tp.State != domain.TemplateApproved || tp.Name != "order_confirmation" {
		t.Fatalf("approved: %+v %v", tp, err)
	}
	waDeliver(t, s, v, rm, growth, "template_paused")
	if tp, err := q.Template(ctx, growth.shopID, "1689556908129832"); err != nil || tp.State != domain.TemplatePaused || tp.LastEvent != "PAUSED" || tp.Language != "en_US" {
		t.Fatalf("paused: %+v %v", tp, err)
	}
	waDeliver(t, s, v, rm, growth, "template_rejected")
	if tp, err := q.Template(ctx, growth.shopID, "1689556908129833"); err != nil || tp.State != domain.TemplateRejected || tp.Reason != "INVALID_FORMAT" {
		t.Fatalf("rejected: %+v %v", tp, err)
	}

	// Quality ratings: stated, implied by the event, kept when the update
	// is about the limit only, and an unknown value kept as sent.
	for _, c := range []struct{ fixture, rating, limit string }{
		{"quality_rated", "YELLOW", "TIER_1K"}, {"quality_flagged", "RED", "TIER_1K"}, {"quality_throughput", "RED", "TIER_UNLIMITED"},
	} {
		waDeliver(t, s, v, rm, growth, c.fixture)
		if p, err := q.PhoneNumber(ctx, growth.shopID, "15550783881"); err != nil || p.Rating != c.rating || p.CurrentLimit != c.limit {
			t.Fatalf("%s: %+v %v", c.fixture, p, err)
		}
	}
	odd := bytes.Replace(waFixture(t, "quality_rated", growth.waba), []byte(`"YELLOW"`), []byte(`"ULTRAVIOLET"`), 1)
	r := waPost(t, s, v, growth.appSecret, odd)
	pos, _ := strconv.ParseUint(r.position(t), 10, 64)
	waitMessaging(t, rm, pos)
	if p, _ := q.PhoneNumber(ctx, growth.shopID, "15550783881"); p == nil || p.Rating != "ULTRAVIOLET" {
		t.Fatalf("unknown rating not kept: %+v", p)
	}

	// Alerts and reviews are stored, unknown values kept as sent.
	waDeliver(t, s, v, rm, growth, "account_alerts")
	odd = bytes.Replace(waFixture(t, "account_alerts", growth.waba), []byte(`"WARNING"`), []byte(`"APOCALYPTIC"`), 1)
	if r := waPost(t, s, v, growth.appSecret, odd); r.status != 200 {
		t.Fatalf("odd alert: %d %s", r.status, r.body)
	}
	waDeliver(t, s, v, rm, growth, "account_review_update")
	odd = bytes.Replace(waFixture(t, "account_review_update", growth.waba), []byte(`"APPROVED"`), []byte(`"UNDER_CONSIDERATION"`), 1)
	r = waPost(t, s, v, growth.appSecret, odd)
	pos, _ = strconv.ParseUint(r.position(t), 10, 64)
	waitMessaging(t, rm, pos)
	alerts, err := q.Alerts(ctx, growth.shopID)
	if err != nil || len(alerts) != 2 || alerts[0].Severity != "WARNING" || alerts[1].Severity != "APOCALYPTIC" ||
		alerts[0].Type != "INCREASED_CAPABILITIES_ELIGIBILITY_DEFERRED" || alerts[0].EntityID != "506914307656634" {
		t.Fatalf("alerts: %+v %v", alerts, err)
	}
	reviews, err := q.Reviews(ctx, growth.shopID)
	if err != nil || len(reviews) != 2 || reviews[0].Decision != "APPROVED" || reviews[1].Decision != "UNDER_CONSIDERATION" {
		t.Fatalf("reviews: %+v %v", reviews, err)
	}

	// Verified deliveries the service does not map are recorded: an
	// unknown field, a messages change with errors only, a change whose
	// value does not fit, and malformed JSON.
	recorded := countTypes(readLog(t, dir))["WebhookDeliveryRecorded"]
	truncated := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"` + growth.waba + `","changes":[{"field":"messages","value":{"messages":[{"from":`)
	for name, b := range map[string][]byte{
		"unknown field":  waFixture(t, "unknown_field", growth.waba),
		"errors only":    waFixture(t, "messages_errors", growth.waba),
		"value mismatch": []byte(`{"entry":[{"id":"` + growth.waba + `","changes":[{"field":"messages","value":{"messages":[{"from":16505551234}]}}]}]}`),
		"malformed json": truncated,
	} {
		if r := waPost(t, s, v, growth.appSecret, b); r.status != 200 {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if got := countTypes(readLog(t, dir))["WebhookDeliveryRecorded"]; got != recorded+4 {
		t.Errorf("%d deliveries recorded, want %d", got, recorded+4)
	}

	// Nothing personal or secret reaches the logs.
	s.stop()
	logs := s.logs.String()
	for _, secret := range []string{growth.appSecret, pro.appSecret, growth.verifyToken, "16505551234", "Sheena", "another color",
		whatsapp.Sign([]byte(growth.appSecret), waFixture(t, "messages_text", growth.waba))[7:]} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
}

func TestWhatsAppDeduplication(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	wt := connectWhatsApp(t, s, rm, "dedup-wa.example.com", "pro_plus", "4001")
	fixtures := []string{"messages_text", "statuses_delivered", "statuses_failed", "template_rejected", "quality_flagged",
		"account_alerts", "account_review_update", "unknown_field"}
	for _, f := range fixtures {
		if r := waPost(t, s, nil, wt.appSecret, waFixture(t, f, wt.waba)); r.status != 200 {
			t.Fatalf("%s: %d %s", f, r.status, r.body)
		}
	}
	// The deliveries' own events (source "webhook"): the reactors append
	// theirs (the concierge's answer, anomalies) in the background, at
	// their own pace.
	fromWebhooks := func(evs []eventlog.Event) []eventlog.Event {
		var out []eventlog.Event
		for _, e := range evs {
			if e.Metadata.Source == "webhook" {
				out = append(out, e)
			}
		}
		return out
	}
	first := fromWebhooks(readLog(t, dir))
	// Sequential repeats.
	for _, f := range fixtures {
		if r := waPost(t, s, nil, wt.appSecret, waFixture(t, f, wt.waba)); r.status != 200 {
			t.Fatalf("repeat %s: %d %s", f, r.status, r.body)
		}
	}
	// Concurrent repeats of one new status.
	body := waFixture(t, "statuses_read", wt.waba)
	postConcurrently(t, 16, s.base+whatsapp.Path, map[string]string{"Content-Type": "application/json",
		whatsapp.HeaderSignature: whatsapp.Sign([]byte(wt.appSecret), body)}, body)
	after := fromWebhooks(readLog(t, dir))
	if len(after) != len(first)+1 {
		t.Fatalf("repeats appended %d events, want only the one read status", len(after)-len(first))
	}
	if e := after[len(after)-1]; e.Type != "MessageStatusReported" {
		t.Fatalf("last event %s", e.Type)
	}
	want := map[string]int{"WhatsAppMessageReceived": 1, "MessageStatusReported": 3, "WhatsAppTemplateStatusUpdated": 1,
		"WhatsAppPhoneQualityUpdated": 1, "WhatsAppAccountAlertReceived": 1, "WhatsAppAccountReviewUpdated": 1, "WebhookDeliveryRecorded": 1}
	got := countTypes(after)
	for typ, n := range want {
		if got[typ] != n {
			t.Errorf("%s: %d events, want %d", typ, got[typ], n)
		}
	}
}

func TestProviderCallbacks(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "provider.example.com", "growth", "*")
	other := newTenant(t, dir, "provider2.example.com", "growth", "*")
	p := cli(t, dir, "messaging", "connect-provider", "--shop", tn.shopID, "--provider", "twilio")
	token := p["token"].(string)
	otherTok := cli(t, dir, "messaging", "connect-provider", "--shop", other.shopID, "--provider", "vonage")["token"].(string)
	body, err := os.ReadFile(filepath.Join("..", "..", "ingest", "providers", "testdata", "statuses.json"))
	if err != nil {
		t.Fatal(err)
	}
	post := func(path string, b []byte) response {
		r := do(t, http.MethodPost, s.base+path, b, map[string]string{"Content-Type": "application/json"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	// Wait for both connections.
	eventually(t, 10*time.Second, "provider connections", func() bool {
		_, e1 := messaging.NewQueries(rm).ProviderByTokenHash(context.Background(), domain.HashToken(token))
		_, e2 := messaging.NewQueries(rm).ProviderByTokenHash(context.Background(), domain.HashToken(otherTok))
		return e1 == nil && e2 == nil
	})
	before := len(readLog(t, dir))
	for name, path := range map[string]string{
		"no token":          "/webhooks/providers/twilio",
		"empty token":       "/webhooks/providers/twilio?token=",
		"unknown token":     "/webhooks/providers/twilio?token=cpt_" + strings.Repeat("A", 32),
		"malformed token":   "/webhooks/providers/twilio?token=" + url.QueryEscape(token+"'"),
		"other provider":    "/webhooks/providers/vonage?token=" + token,
		"other shop's":      "/webhooks/providers/twilio?token=" + otherTok,
		"token in fragment": "/webhooks/providers/twilio#token=" + token,
	} {
		if r := post(path, body); r.status != 403 || r.errorCode(t) != "invalid_callback_token" || r.header.Get("X-Service-Stability") != "beta" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if after := len(readLog(t, dir)); after != before {
		t.Fatalf("refused callbacks appended %d events", after-before)
	}

	r := post(p["callback_path"].(string), body)
	if r.status != 200 {
		t.Fatalf("callback: %d %s", r.status, r.body)
	}
	pos, _ := strconv.ParseUint(r.position(t), 10, 64)
	waitMessaging(t, rm, pos)
	q := messaging.NewQueries(rm)
	ctx := context.Background()
	if m, err := q.Message(ctx, tn.shopID, "SM5f2c1a9e0b7d4e3f8a6b2c1d0e9f8a7b"); err != nil ||
		!m.DeliveredAt.Equal(time.Date(2026, 11, 1, 10, 0, 5, 0, time.UTC)) || m.OpenedAt.IsZero() || m.Source != "provider:twilio" {
		t.Errorf("delivered and read: %+v %v", m, err)
	}
	if m, err := q.Message(ctx, tn.shopID, "SM0a1b2c3d4e5f60718293a4b5c6d7e8f9"); err != nil || m.FailedAt.IsZero() || m.ErrorCode != "30008" {
		t.Errorf("failed: %+v %v", m, err)
	}
	if _, err := q.Message(ctx, other.shopID, "SM0a1b2c3d4e5f60718293a4b5c6d7e8f9"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("status reached another shop: %v", err)
	}
	// A repeat appends nothing; a body that does not fit is recorded.
	n := len(readLog(t, dir))
	if r := post(p["callback_path"].(string), body); r.status != 200 {
		t.Fatalf("repeat: %d", r.status)
	}
	if got := len(readLog(t, dir)); got != n {
		t.Errorf("repeat appended %d events", got-n)
	}
	if r := post(p["callback_path"].(string), []byte(`{"statuses": [`)); r.status != 200 {
		t.Errorf("malformed body: %d %s", r.status, r.body)
	}
	if got := countTypes(readLog(t, dir))["WebhookDeliveryRecorded"]; got != 1 {
		t.Errorf("%d deliveries recorded, want 1", got)
	}
	// Rotation: the old token fails from then on.
	rotated := cli(t, dir, "messaging", "connect-provider", "--shop", tn.shopID, "--provider", "twilio")
	waitMessaging(t, rm, uint64(rotated["position"].(float64)))
	if r := post(p["callback_path"].(string), body); r.status != 403 {
		t.Errorf("old token after rotation: %d", r.status)
	}
	if r := post(rotated["callback_path"].(string), body); r.status != 200 {
		t.Errorf("new token: %d %s", r.status, r.body)
	}
	s.stop()
	for _, secret := range []string{token, otherTok, rotated["token"].(string)} {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("logs contain a callback token")
		}
	}
}
