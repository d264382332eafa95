package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// received is one request a test receiver got.
type received struct {
	at                        time.Time
	id, typ, signature, stamp string
	body                      []byte
}

// receiver is a subscriber endpoint served by httptest: answer decides
// each answer (nil: 200), given the request's number for its event id
// (1 for the first delivery of an event).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	perID  map[string]int
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	t.Helper()
	rc := &receiver{perID: map[string]int{}, answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		id := r.Header.Get("X-Service-Event-Id")
		rc.perID[id]++
		n := rc.perID[id]
		rc.got = append(rc.got, received{at: time.Now(), id: id, typ: r.Header.Get("X-Service-Event-Type"),
			signature: r.Header.Get("X-Service-Signature"), stamp: r.Header.Get("X-Service-Timestamp"), body: body})
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(w, r, n)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// distinct is how many distinct event ids arrived.
func (rc *receiver) distinct() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.perID)
}

// verifySignature is a receiver's check written from the documented
// recipe alone: split the header on commas, and accept when one value is
// "sha256=" and the hex HMAC-SHA256 of the raw body under the secret.
func verifySignature(secret string, body []byte, header string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	for _, v := range strings.Split(header, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(v)), []byte(want)) {
			return true
		}
	}
	return false
}

// subscribe subscribes url to types for the tenant's shop with the
// command the API runs (allowPrivate: as the operator option would), and
// returns the subscription id and its secret.
func subscribe(t *testing.T, dir string, tn tenant, url string, types ...string) (string, string) {
	t.Helper()
	var id, secret string
	withTestCore(t, dir, func(c *Core) {
		res, err := c.Commands.CreateWebhookSubscription(context.Background(), commands.CreateWebhookSubscription{ShopID: tn.shopID,
			URL: url, EventTypes: types, AllowPrivate: true}, testMeta())
		if err != nil {
			t.Fatal(err)
		}
		id, secret = res.ID, res.Secret
	})
	return id, secret
}

func withTestCore(t *testing.T, dir string, fn func(c *Core)) {
	t.Helper()
	core, err := OpenCore(context.Background(), testConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	fn(core)
}

// postCustomers records n new customers of the tenant through the
// commerce webhook (n customer.created events) and returns the position
// of the last.
func postCustomers(t *testing.T, s *testServer, tn tenant, from, n int) string {
	t.Helper()
	var pos string
	for i := from; i < from+n; i++ {
		r := s.webhook(t, tn, "customers/create", fmt.Sprintf("dlv-wh-%d", i),
			customerPayload(int64(i), fmt.Sprintf("c%d@example.com", i), 0, "0.00", "2026-11-01T10:00:00Z"))
		if r.status != http.StatusOK {
			t.Fatalf("customers/create: %d %s", r.status, r.body)
		}
		pos = r.position(t)
	}
	return pos
}

// deliveries lists a subscription's deliveries over the API.
func deliveries(t *testing.T, s *testServer, v *openapitest.Validator, token, sub, query string) []map[string]any {
	t.Helper()
	r := s.get(t, "/api/v1/webhook-subscriptions/"+sub+"/deliveries?limit=100"+query, token)
	if v != nil {
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
	if r.status != http.StatusOK {
		t.Fatalf("deliveries: %d %s", r.status, r.body)
	}
	var out []map[string]any
	for _, d := range r.json(t)["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

func fastWebhooks(c *Config) {
	c.OutboundAllowPrivate = true
	c.Test.OutboundWebhooks.Schedule = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond,
		50 * time.Millisecond, 50 * time.Millisecond}
	c.Test.OutboundWebhooks.Timeout = 2 * time.Second
}

// Events of a shop reach its subscriber signed as documented, with the
// documented headers and body, no personal data, and each delivery is in
// the attempt log with the receiver's answer.
func TestOutboundWebhooksDeliverSignedEvents(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, fastWebhooks)
	_ = openapitest.NewValidator
	tn := newTenant(t, dir, "wh-signed.example.com", "agency", "webhooks:read,webhooks:write")
	other := newTenant(t, dir, "wh-other.example.com", "agency", "webhooks:read,webhooks:write")
	rc := newReceiver(t, nil)
	sub, secret := subscribe(t, dir, tn, rc.srv.URL+"/hooks", "customer.created")
	waitForToken(t, s, other)
	postCustomers(t, s, tn, 1, 3)
	postCustomers(t, s, other, 100, 2) // another shop's events never reach it
	eventually(t, minEventually, "three deliveries", func() bool { return rc.distinct() >= 3 })
	for _, got := range rc.requests() {
		if !verifySignature(secret, got.body, got.signature) {
			t.Errorf("signature %q does not verify", got.signature)
		}
		var b map[string]any
		if err := json.Unmarshal(got.body, &b); err != nil {
			t.Fatal(err)
		}
		if b["id"] != got.id || b["type"] != "customer.created" || got.typ != "customer.created" || b["shop_id"] != tn.shopID ||
			!strings.HasPrefix(got.id, "evt_") || got.stamp == "" {
			t.Errorf("body %s, headers id %s type %s stamp %s", got.body, got.id, got.typ, got.stamp)
		}
		if _, err := time.Parse(time.RFC3339Nano, b["created_at"].(string)); err != nil {
			t.Errorf("created_at: %v", err)
		}
		if strings.Contains(string(got.body), "@example.com") {
			t.Errorf("personal data in %s", got.body)
		}
	}
	list := deliveries(t, s, nil, tn.token, sub, "")
	if len(list) != 3 {
		t.Fatalf("%d deliveries listed, want 3", len(list))
	}
	a := attrs(list[0])
	at := a["attempts"].([]any)[0].(map[string]any)
	if a["state"] != "succeeded" || a["attempt_count"] != 1.0 || at["response_status"] != 200.0 || at["response_body"] != `{"ok":true}` {
		t.Errorf("delivery %v", a)
	}
	// Another shop's token finds no such subscription.
	if r := s.get(t, "/api/v1/webhook-subscriptions/"+sub+"/deliveries", other.token); r.status != http.StatusNotFound {
		t.Errorf("another shop: %d %s", r.status, r.body)
	}
	if len(rc.requests()) != 3 {
		t.Errorf("%d requests, want 3 (none for the other shop)", len(rc.requests()))
	}
}
