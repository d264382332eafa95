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
	"github.com/cgp-platform/cgp/domain"
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

// attemptsOf lists the attempt log of the subscription's only delivery,
// oldest attempt first.
func attemptsOf(t *testing.T, s *testServer, tn tenant, sub string) (map[string]any, []map[string]any) {
	t.Helper()
	list := deliveries(t, s, nil, tn.token, sub, "")
	if len(list) != 1 {
		return nil, nil
	}
	a := attrs(list[0])
	var out []map[string]any
	for _, at := range a["attempts"].([]any) {
		out = append([]map[string]any{at.(map[string]any)}, out...)
	}
	return a, out
}

// A delivery answered 500 twice, then not in time, is attempted again on
// the schedule until the endpoint answers 200; every attempt is in the
// log with its status or reason and the answer's body.
func TestOutboundWebhookRetriesUntilSuccess(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	defer close(release)
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.Test.OutboundWebhooks.Timeout = 300 * time.Millisecond
	})
	tn := newTenant(t, dir, "wh-retry.example.com", "agency", "webhooks:read")
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1, 2:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "try later")
		case 3:
			select { // longer than the attempt's timeout
			case <-release:
			case <-r.Context().Done():
			}
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	sub, _ := subscribe(t, dir, tn, rc.srv.URL, "customer.created")
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 1)
	var a map[string]any
	var log []map[string]any
	eventually(t, minEventually, "the delivery succeeds", func() bool {
		a, log = attemptsOf(t, s, tn, sub)
		return a != nil && a["state"] == "succeeded"
	})
	if len(log) != 4 || a["attempt_count"] != 4.0 {
		t.Fatalf("attempts %v", log)
	}
	want := []struct {
		status any
		reason any
	}{{500.0, "http_500"}, {500.0, "http_500"}, {nil, "timeout"}, {204.0, nil}}
	for i, w := range want {
		if log[i]["response_status"] != w.status || log[i]["failure_reason"] != w.reason {
			t.Errorf("attempt %d: %v, want status %v reason %v", i+1, log[i], w.status, w.reason)
		}
	}
	if log[0]["response_body"] != "try later" || log[0]["next_attempt_at"] == nil || log[3]["next_attempt_at"] != nil {
		t.Errorf("attempt log %v", log)
	}
}

// Retry-After is honoured: with a schedule of an hour, an endpoint that
// asks to be tried again after 1 second gets its retry then, and not
// before.
func TestOutboundWebhookHonoursRetryAfter(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.Test.OutboundWebhooks.Schedule = []time.Duration{time.Hour, time.Hour}
	})
	tn := newTenant(t, dir, "wh-retryafter.example.com", "agency", "webhooks:read")
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, _ := subscribe(t, dir, tn, rc.srv.URL, "customer.created")
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 1)
	eventually(t, minEventually, "the retry after Retry-After", func() bool { return len(rc.requests()) >= 2 })
	got := rc.requests()
	if gap := got[1].at.Sub(got[0].at); gap < 900*time.Millisecond {
		t.Errorf("retried %v after a Retry-After of 1 s", gap)
	}
	eventually(t, minEventually, "the success recorded", func() bool {
		a, _ := attemptsOf(t, s, tn, sub)
		return a != nil && a["state"] == "succeeded"
	})
}

// A redirect is a failed attempt and is never followed; 410 Gone
// disables the subscription: the events after it are held for it, not
// sent, and a recover delivers them once it is enabled again.
func TestOutboundWebhookRedirectFailsAndGoneDisables(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, fastWebhooks)
	tn := newTenant(t, dir, "wh-gone.example.com", "agency", "webhooks:read,webhooks:write")
	target := newReceiver(t, nil)
	var gone sync.Mutex
	isGone := true
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		gone.Lock()
		defer gone.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/moved"):
			http.Redirect(w, r, target.srv.URL+"/x", http.StatusFound)
		case isGone:
			w.WriteHeader(http.StatusGone)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	moved, _ := subscribe(t, dir, tn, rc.srv.URL+"/moved", "customer.created")
	sub, _ := subscribe(t, dir, tn, rc.srv.URL+"/gone", "customer.created")
	waitForToken(t, s, tn)
	t0 := time.Now().Add(-time.Second)
	postCustomers(t, s, tn, 1, 1)
	eventually(t, minEventually, "the redirect's attempt", func() bool {
		_, log := attemptsOf(t, s, tn, moved)
		return len(log) >= 1 && log[0]["failure_reason"] == "redirect" && log[0]["response_status"] == 302.0
	})
	eventually(t, minEventually, "410 holds the delivery", func() bool {
		list := deliveries(t, s, nil, tn.token, sub, "&filter[state]=held")
		return len(list) == 1
	})
	// The events after 410 are recorded for it, held, and never sent.
	postCustomers(t, s, tn, 2, 2)
	eventually(t, minEventually, "three held deliveries", func() bool {
		return len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=held")) == 3
	})
	for _, r := range rc.requests() {
		if strings.HasSuffix(string(r.body), "") && r.id != "" && r.typ != "customer.created" {
			t.Errorf("unexpected request %s", r.typ)
		}
	}
	if n := len(rc.requests()); n > 2+2*6 {
		t.Errorf("%d requests: the held events were sent", n)
	}
	if len(target.requests()) != 0 {
		t.Errorf("the redirect was followed")
	}
	// Recover is refused while disabled, then delivers all three once
	// the subscription is enabled.
	recoverBody := fmt.Sprintf(`{"data":{"attributes":{"since":%q}}}`, t0.UTC().Format(time.RFC3339Nano))
	h := map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"}
	if r := do(t, http.MethodPost, s.base+"/api/v1/webhook-subscriptions/"+sub+"/recover", []byte(recoverBody), h); r.status != http.StatusConflict {
		t.Fatalf("recover while disabled: %d %s", r.status, r.body)
	}
	gone.Lock()
	isGone = false
	gone.Unlock()
	enable := true
	withTestCore(t, dir, func(c *Core) {
		if _, err := c.Commands.UpdateWebhookSubscription(context.Background(), commands.UpdateWebhookSubscription{ShopID: tn.shopID,
			SubscriptionID: sub, Patch: domain.WebhookPatch{Enabled: &enable}}, testMeta()); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, minEventually, "recover accepted", func() bool {
		r := do(t, http.MethodPost, s.base+"/api/v1/webhook-subscriptions/"+sub+"/recover", []byte(recoverBody), h)
		return r.status == http.StatusAccepted && attrs(data(r, t))["queued"] == 3.0
	})
	eventually(t, minEventually, "the three delivered", func() bool {
		return len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded")) == 3
	})
}
