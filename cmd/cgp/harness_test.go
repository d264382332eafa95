package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest"
)

// syncBuffer is a goroutine-safe buffer for the server's logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testServer is the service started in-process exactly as `cgp serve` does,
// on a free port.
type testServer struct {
	t      *testing.T
	dir    string
	base   string
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
	stdout *syncBuffer
}

// minEventually is the least deadline of eventually.
const minEventually = time.Minute

func testConfig(dir string) Config {
	return Config{
		DataDir: dir, Addr: "127.0.0.1:0", LogLevel: "debug", EventLog: "sqlite", Vault: "sqlite",
		ShutdownGrace: 5 * time.Second, MaxWebhookBody: 1 << 20, RateAgency: 600, RateEnterprise: 3000,
		// A generous bound: under load and the race detector, projections
		// lag; a test must never get 503 for a slow machine.
		MaxWaitForPosition: 60 * time.Second,
	}
}

func startServer(t *testing.T, dir string) *testServer {
	t.Helper()
	return startServerWith(t, dir, nil)
}

// startServerWith starts the server with its configuration changed by mod.
func startServerWith(t *testing.T, dir string, mod func(*Config)) *testServer {
	t.Helper()
	cfg := testConfig(dir)
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{t: t, dir: dir, cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}, stdout: &syncBuffer{}}
	ready := make(chan string, 1)
	go func() { s.done <- serve(ctx, cfg, s.stdout, s.logs, func(addr string) { ready <- addr }) }()
	select {
	case addr := <-ready:
		s.base = "http://" + addr
	case err := <-s.done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("server did not start within 30 s")
	}
	t.Cleanup(s.stop)
	return s
}

// stop shuts the server down gracefully and waits for it (idempotent).
func (s *testServer) stop() {
	if s.cancel == nil {
		return
	}
	// Connections the client dialled but never sent a request on (a
	// concurrent burst races dials against reuse) count as in flight for
	// the server's first 5 seconds; closing the client's idle connections
	// lets the drain end at once.
	http.DefaultClient.CloseIdleConnections()
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("server stopped with error: %v", err)
		}
	case <-time.After(30 * time.Second):
		// What every goroutine is waiting on, to find what held the stop.
		var stacks bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		s.t.Errorf("server did not stop within 30 s; goroutines:\n%s", stacks.String())
	}
}

// cli runs a cgp command in-process against the server's data directory
// (its own connections to the files, as a separate process would have) and
// decodes its JSON output.
// dirFlags are extra flags the CLI helpers pass for a data directory (a
// server on shared stores: the CLI must open the same ones).
var dirFlags sync.Map // dir → []string

func cli(t *testing.T, dir string, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "--data-dir", dir)
	if f, ok := dirFlags.Load(dir); ok {
		args = append(args, f.([]string)...)
	}
	if code := Run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("cgp %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("cgp %s: output %q: %v", strings.Join(args, " "), out.String(), err)
	}
	return v
}

// tenant is a shop with a token, made through the CLI.
type tenant struct {
	accountID, shopID, domain, secret, token string
	position                                 uint64
}

func newTenant(t *testing.T, dir, domain, plan, scopes string) tenant {
	t.Helper()
	acc := cli(t, dir, "accounts", "create", "--name", "Acme "+domain, "--plan", plan)
	secret := "whsec_" + strings.Repeat("k", 20) + domain
	shop := cli(t, dir, "shops", "create", "--account", acc["id"].(string), "--domain", domain, "--plan", plan, "--webhook-secret", secret)
	tok := cli(t, dir, "tokens", "create", "--shop", shop["id"].(string), "--scopes", scopes)
	return tenant{accountID: acc["id"].(string), shopID: shop["id"].(string), domain: domain, secret: secret,
		token: tok["token"].(string), position: uint64(tok["position"].(float64))}
}

// response is a completed HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
	req    *http.Request
	resp   *http.Response
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("response %d %q: %v", r.status, r.body, err)
	}
	return v
}

func (r response) errorCode(t *testing.T) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("no error envelope in %d %s", r.status, r.body)
	}
	if rid, _ := e["request_id"].(string); !strings.HasPrefix(rid, "req_") || r.header.Get("X-Request-Id") != rid {
		t.Fatalf("request id %q / header %q", rid, r.header.Get("X-Request-Id"))
	}
	return e["code"].(string)
}

func (r response) position(t *testing.T) string {
	t.Helper()
	p := r.header.Get("X-Event-Position")
	if _, err := strconv.ParseUint(p, 10, 64); err != nil {
		t.Fatalf("X-Event-Position %q: %v", p, err)
	}
	return p
}

func do(t *testing.T, method, url string, body []byte, headers map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b, req: req, resp: resp}
}

// postConcurrently posts the same body with the same headers to url from n
// goroutines at once, and fails unless every post is answered 200: a
// repeat of a delivery racing the first is acknowledged like it.
func postConcurrently(t *testing.T, n int, url string, headers map[string]string, body []byte) {
	t.Helper()
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				statuses <- 0
				return
			}
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusOK {
			t.Fatalf("%d concurrent posts to %s: one got %d, want 200", n, url, st)
		}
	}
}

func (s *testServer) get(t *testing.T, path, token string, extra ...string) response {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return do(t, http.MethodGet, s.base+path, nil, h)
}

// webhook posts a signed commerce delivery to the topic's receiver. A
// fixture's shop (fixtureShopDomain) becomes tn's, as the platform names
// the shop it delivers for.
func (s *testServer) webhook(t *testing.T, tn tenant, topic, deliveryID string, body []byte) response {
	t.Helper()
	body = forShop(tn, body)
	return do(t, http.MethodPost, s.base+webhookPath(topic), body, webhookHeaders(tn, topic, deliveryID, body))
}

// webhookPath is the receiver of a commerce topic.
func webhookPath(topic string) string {
	if topic == "app/scopes_update" {
		return "/webhooks/app/scopes_update"
	}
	return "/webhooks/events"
}

// fixtureShopDomain is the shop domain the commerce fixtures name.
const fixtureShopDomain = "atelier-nord.myshopify.com"

// forShop makes a fixture name tn's shop instead of fixtureShopDomain.
func forShop(tn tenant, body []byte) []byte {
	return bytes.ReplaceAll(body, []byte(`"`+fixtureShopDomain+`"`), []byte(strconv.Quote(tn.domain)))
}

// webhookTriggeredAt is the X-Commerce-Triggered-At of webhookHeaders: the
// time the test binary started, within the window of destructive topics
// for any test's length.
var webhookTriggeredAt = time.Now().UTC().Truncate(time.Second)

func webhookHeaders(tn tenant, topic, deliveryID string, body []byte) map[string]string {
	return map[string]string{
		"Content-Type":           "application/json",
		ingest.HeaderHMAC:        ingest.SignCommerce([]byte(tn.secret), body),
		ingest.HeaderWebhookID:   deliveryID,
		ingest.HeaderTopic:       topic,
		ingest.HeaderShopDomain:  tn.domain,
		ingest.HeaderTriggeredAt: webhookTriggeredAt.Format(time.RFC3339),
	}
}

// customerPayload is a commerce-platform customer in the public Shopify
// webhook shape.
func customerPayload(id int64, email string, orders int, spent string, updated string) []byte {
	return []byte(fmt.Sprintf(`{"id":%d,"email":%q,"accepts_marketing":false,"created_at":"2026-01-0%dT10:00:00-05:00",
"updated_at":%q,"first_name":"First%d","last_name":"Last%d","orders_count":%d,"state":"enabled","total_spent":%q,
"last_order_id":null,"note":"prefers e-mail","verified_email":true,"multipass_identifier":null,"tax_exempt":false,
"tags":"imported, newsletter","last_order_name":null,"currency":"USD","phone":"+1555%07d",
"addresses":[{"id":1,"customer_id":%d,"first_name":"First","last_name":"Last","company":null,"address1":"1 Main St",
"address2":null,"city":"Ottawa","province":"Ontario","country":"Canada","zip":"K1A 0A1","phone":null,"default":true}],
"email_marketing_consent":{"state":"subscribed","opt_in_level":"single_opt_in","consent_updated_at":null},
"default_address":{"id":1,"customer_id":%d,"address1":"1 Main St","city":"Ottawa","province":"Ontario","country":"Canada","zip":"K1A 0A1","default":true}}`,
		id, email, id%9+1, updated, id, id, orders, spent, id, id, id))
}

// eventually polls cond until it holds or the deadline passes. The
// deadline is at least minEventually, whatever within says: it only ever
// fails a test, and under load (the race detector, a busy second core)
// projections and reactors lag by seconds.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	within = max(within, minEventually)
	deadline := time.Now().Add(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		<-tick.C
	}
}

func testMeta() commands.Meta { return commands.Meta{Actor: "test", Source: "cli"} }

func recordCustomer(shop, external string) commands.RecordCustomer {
	return commands.RecordCustomer{ShopID: shop, Profile: domain.CustomerProfile{ExternalID: external}}
}

func setTags(shop, external string, tags []string) commands.SetCustomerTags {
	return commands.SetCustomerTags{ShopID: shop, CustomerID: domain.CustomerIDFromExternal(shop, external), Tags: tags}
}

func createAccount(name, plan string) commands.CreateAccount {
	return commands.CreateAccount{Name: name, Plan: plan}
}

func createShop(account, domain string) commands.CreateShop {
	return commands.CreateShop{AccountID: account, Domain: domain, Plan: "agency", WebhookSecret: "bench-secret-0123456789"}
}

func issueToken(shop string, scopes ...string) commands.IssueToken {
	return commands.IssueToken{ShopID: shop, Scopes: scopes}
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatUint(uint64(x), 10)
	default:
		return fmt.Sprint(v)
	}
}

func timeNow() time.Time { return time.Now() }
