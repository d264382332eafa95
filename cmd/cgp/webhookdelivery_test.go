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
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/webhooks"
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
	v := openapitest.NewValidator(t)
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
	// The receiver answered; the outcomes are recorded just after.
	eventually(t, minEventually, "three successes recorded", func() bool {
		return len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded")) == 3
	})
	list := deliveries(t, s, v, tn.token, sub, "")
	if len(list) != 3 {
		t.Fatalf("%d deliveries listed, want 3", len(list))
	}
	a := attrs(list[0])
	at := a["attempts"].([]any)[0].(map[string]any)
	if a["state"] != "succeeded" || a["attempt_count"] != 1.0 || at["response_status"] != 200.0 || at["response_body"] != `{"ok":true}` {
		t.Errorf("delivery %v", a)
	}
	// The CLI's twins: the attempt log, and a recover (nothing failed:
	// nothing is sent again).
	out := cli(t, dir, "webhooks", "deliveries", "--shop", tn.shopID, "--id", sub, "--state", "succeeded")
	if got := out["deliveries"].([]any); len(got) != 3 || got[0].(map[string]any)["attributes"].(map[string]any)["state"] != "succeeded" {
		t.Errorf("cgp webhooks deliveries: %v", out)
	}
	if out := cli(t, dir, "webhooks", "recover", "--shop", tn.shopID, "--id", sub, "--since", "2026-01-01T00:00:00Z"); out["position"] == nil {
		t.Errorf("cgp webhooks recover: %v", out)
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

// One endpoint that hangs holds up no other: while every attempt to it
// waits, another subscription of the same shop gets every event.
func TestOutboundWebhookHangingEndpointDelaysNoOther(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.Test.OutboundWebhooks.Timeout = 10 * time.Minute
	})
	defer s.stop()
	defer close(release)
	tn := newTenant(t, dir, "wh-hang.example.com", "agency", "webhooks:read")
	hanging := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	fine := newReceiver(t, nil)
	subscribe(t, dir, tn, hanging.srv.URL, "customer.created")
	subscribe(t, dir, tn, fine.srv.URL, "customer.created")
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 40)
	eventually(t, minEventually, "the other endpoint gets all 40", func() bool { return fine.distinct() == 40 })
	eventually(t, minEventually, "the hanging endpoint reached", func() bool { return len(hanging.requests()) > 0 })
	if n := len(hanging.requests()); n > 16 {
		t.Errorf("the hanging endpoint has %d requests open, want 16 at most", n)
	}
}

// After a rotation with an overlap, each delivery carries a signature a
// receiver with either secret verifies; after a rotation without one,
// only the new secret verifies.
func TestOutboundWebhookSecretRotationOverlap(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, fastWebhooks)
	tn := newTenant(t, dir, "wh-rotate.example.com", "agency", "webhooks:read")
	rc := newReceiver(t, nil)
	sub, first := subscribe(t, dir, tn, rc.srv.URL, "customer.created")
	rotate := func(overlap time.Duration) string {
		var secret string
		withTestCore(t, dir, func(c *Core) {
			res, err := c.Commands.RotateWebhookSecret(context.Background(), commands.RotateWebhookSecret{ShopID: tn.shopID,
				SubscriptionID: sub, Overlap: &overlap}, testMeta())
			if err != nil {
				t.Fatal(err)
			}
			secret = res.Secret
		})
		return secret
	}
	second := rotate(time.Hour)
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 1)
	eventually(t, minEventually, "the first delivery", func() bool { return len(rc.requests()) == 1 })
	got := rc.requests()[0]
	if !verifySignature(first, got.body, got.signature) || !verifySignature(second, got.body, got.signature) ||
		strings.Count(got.signature, "sha256=") != 2 {
		t.Fatalf("overlap: %q does not verify with both secrets", got.signature)
	}
	third := rotate(0)
	postCustomers(t, s, tn, 2, 1)
	eventually(t, minEventually, "the second delivery", func() bool { return len(rc.requests()) == 2 })
	got = rc.requests()[1]
	if !verifySignature(third, got.body, got.signature) || verifySignature(second, got.body, got.signature) ||
		verifySignature(first, got.body, got.signature) {
		t.Fatalf("no overlap: %q", got.signature)
	}
}

// POST …/test sends a signed ping and answers with its attempt; a token
// without webhooks:write may not, and another shop's token finds nothing.
func TestOutboundWebhookTestPing(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, fastWebhooks)
	tn := newTenant(t, dir, "wh-ping.example.com", "agency", "webhooks:read,webhooks:write")
	other := newTenant(t, dir, "wh-ping-other.example.com", "agency", "webhooks:read,webhooks:write")
	reader := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "webhooks:read")
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "pong")
	})
	sub, secret := subscribe(t, dir, tn, rc.srv.URL, "order.created")
	waitForToken(t, s, other)
	h := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	r := do(t, http.MethodPost, s.base+"/api/v1/webhook-subscriptions/"+sub+"/test", nil, h(tn.token))
	if r.status != http.StatusOK {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	openapitest.NewValidator(t).ValidateResponse(t, r.req, r.resp, r.body)
	a := attrs(data(r, t))
	at := a["attempts"].([]any)[0].(map[string]any)
	if a["event_type"] != "ping" || a["state"] != "succeeded" || at["response_status"] != 202.0 || at["response_body"] != "pong" {
		t.Errorf("ping delivery %v", a)
	}
	got := rc.requests()
	if len(got) != 1 || got[0].typ != "ping" || !verifySignature(secret, got[0].body, got[0].signature) {
		t.Fatalf("ping received: %+v", got)
	}
	if r := do(t, http.MethodPost, s.base+"/api/v1/webhook-subscriptions/"+sub+"/test", nil, h(reader["token"].(string))); r.status != http.StatusForbidden {
		t.Errorf("read-only token: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/test", "/recover", "/deliveries/" + attrs(data(r, t))["subscription_id"].(string) + "/retry"} {
		if r := do(t, http.MethodPost, s.base+"/api/v1/webhook-subscriptions/"+sub+path, []byte(`{"data":{"attributes":{"since":"2026-01-01T00:00:00Z"}}}`),
			map[string]string{"Authorization": "Bearer " + other.token, "Content-Type": "application/json"}); r.status != http.StatusNotFound {
			t.Errorf("another shop's %s: %d %s", path, r.status, r.body)
		}
	}
	if len(rc.requests()) != 1 {
		t.Errorf("another shop's requests reached the endpoint")
	}
}

// The guard refuses loopback at connect time when the operator option is
// off, by address and by a name resolving to it: the endpoint never
// receives anything, and the attempt's reason is the coarse
// address_refused.
func TestOutboundWebhookGuardAtConnectTime(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.OutboundAllowPrivate = false
	})
	tn := newTenant(t, dir, "wh-guard.example.com", "agency", "webhooks:read")
	rc := newReceiver(t, nil)
	_, port, _ := strings.Cut(strings.TrimPrefix(rc.srv.URL, "http://"), ":")
	var subs []string
	for _, u := range []string{"https://127.0.0.1:" + port + "/h", "https://localhost:" + port + "/h", "https://[::1]:" + port + "/h"} {
		id, _ := subscribe(t, dir, tn, u, "customer.created") // recorded as an operator's CLI with the option would
		subs = append(subs, id)
	}
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 1)
	for _, sub := range subs {
		eventually(t, minEventually, "the refused attempt", func() bool {
			_, log := attemptsOf(t, s, tn, sub)
			return len(log) >= 1 && log[0]["failure_reason"] == "address_refused"
		})
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the loopback endpoint received %d requests", n)
	}
	if strings.Contains(s.logs.String(), ":"+port) {
		t.Errorf("the logs name the port")
	}
}

// auditOf lists the shop's events of one type from the audit history.
func auditOf(t *testing.T, s *testServer, token, typ string) []map[string]any {
	t.Helper()
	r := s.get(t, "/api/v1/audit-events?limit=100&filter[type]="+typ, token)
	if r.status != http.StatusOK {
		t.Fatalf("audit-events: %d %s", r.status, r.body)
	}
	var out []map[string]any
	for _, d := range r.json(t)["data"].([]any) {
		out = append(out, attrs(d.(map[string]any)))
	}
	return out
}

// An endpoint that fails for the whole auto-disable period is warned
// twice, then disabled, by the delivery side as its actor; a success
// before then ends the failing period.
func TestOutboundWebhookAutoDisable(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.Test.OutboundWebhooks.Schedule = slices.Repeat([]time.Duration{100 * time.Millisecond}, 11)
		c.Test.OutboundWebhooks.DisableAfter = 2 * time.Second
	})
	tn := newTenant(t, dir, "wh-disable.example.com", "agency", "webhooks:read,audit:read")
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(http.StatusBadGateway) })
	sub, _ := subscribe(t, dir, tn, rc.srv.URL, "customer.created")
	waitForToken(t, s, tn)
	// Events keep coming while it fails, as they would in a shop.
	i := 1
	eventually(t, minEventually, "the subscription disabled", func() bool {
		postCustomers(t, s, tn, i, 1)
		i++
		return len(auditOf(t, s, tn.token, "WebhookSubscriptionDisabled")) == 1
	})
	dis := auditOf(t, s, tn.token, "WebhookSubscriptionDisabled")[0]
	if dis["actor"] != "system:webhook_delivery" || dis["data"].(map[string]any)["reason"] != "failing" {
		t.Errorf("disabled: %v", dis)
	}
	warns := auditOf(t, s, tn.token, "WebhookSubscriptionFailing")
	if len(warns) != 2 || warns[0]["data"].(map[string]any)["level"] != 1.0 || warns[1]["data"].(map[string]any)["level"] != 2.0 {
		t.Fatalf("warnings: %v", warns)
	}
	// Nothing is lost: the events after the disabling are held for it.
	before := len(rc.requests())
	postCustomers(t, s, tn, 1000, 2)
	eventually(t, minEventually, "the new events held", func() bool {
		return len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=held")) >= 2
	})
	if after := len(rc.requests()); after > before+16 {
		t.Errorf("%d requests after the disabling", after-before)
	}
}

// SIGKILL of the server while 1,000 events are being delivered: after a
// restart every event recorded reaches the receiver at least once, none
// is skipped (counted per event id).
func TestOutboundWebhooksSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	env := "CGP_OUTBOUND_ALLOW_PRIVATE=true"
	p := startBinary(t, dir, env)
	s := &testServer{t: t, base: p.base}
	tn := binaryTenant(t, dir, "wh-kill.example.com")
	rc := newReceiver(t, nil)
	subscribe(t, dir, tn, rc.srv.URL, "customer.created")
	waitForToken(t, s, tn)

	const total, killAt = 1000, 200
	var killed sync.Once
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(base string, i int) bool {
		body := customerPayload(int64(i+1), fmt.Sprintf("k%d@example.com", i), 0, "0.00", "2026-11-01T10:00:00Z")
		req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/events", strings.NewReader(string(body)))
		for k, v := range webhookHeaders(tn, "customers/create", fmt.Sprintf("kill-%d", i), body) {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				n := i
				i++
				next.Unlock()
				if n >= total || !post(p.base, n) {
					return
				}
				if rc.distinct() >= killAt {
					killed.Do(func() { p.cmd.Process.Signal(syscall.SIGKILL) })
				}
			}
		}()
	}
	wg.Wait()
	killed.Do(func() { p.cmd.Process.Signal(syscall.SIGKILL) })
	<-p.exited
	delivered := rc.distinct()

	// Restart; the events not recorded before the kill are posted again,
	// so that the log holds 1,000 customers.
	p2 := startBinary(t, dir, env)
	for n := 0; n < total; n++ {
		if !post(p2.base, n) {
			t.Fatalf("post %d after the restart failed", n)
		}
	}
	want := map[string]bool{}
	for _, e := range readLog(t, dir) {
		if e.Type == "CustomerCreated" && e.ShopID == tn.shopID {
			want[webhooks.EventID(e.ID.String())] = true
		}
	}
	if len(want) != total {
		t.Fatalf("%d customers in the log, want %d", len(want), total)
	}
	eventually(t, 2*minEventually, "every event delivered", func() bool { return rc.distinct() >= total })
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id := range want {
		if rc.perID[id] == 0 {
			t.Errorf("event %s never delivered", id)
		}
	}
	if len(rc.perID) != total {
		t.Errorf("%d distinct events received, want %d", len(rc.perID), total)
	}
	t.Logf("%d events delivered before SIGKILL; %d requests for %d events in all", delivered, len(rc.got), total)
}

// A delivery that failed every attempt of the schedule is failed for
// good; POST …/retry makes it due again and it is delivered.
func TestOutboundWebhookRetryOneDelivery(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.Test.OutboundWebhooks.Schedule = []time.Duration{50 * time.Millisecond}
	})
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "wh-retry-one.example.com", "agency", "webhooks:read,webhooks:write")
	var mu sync.Mutex
	up := false
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, _ := subscribe(t, dir, tn, rc.srv.URL, "customer.created")
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 1)
	var failed map[string]any
	eventually(t, minEventually, "the delivery failed", func() bool {
		list := deliveries(t, s, v, tn.token, sub, "&filter[state]=failed")
		if len(list) == 1 {
			failed = list[0]
		}
		return len(list) == 1
	})
	if a := attrs(failed); a["attempt_count"] != 2.0 || a["next_attempt_at"] != nil {
		t.Fatalf("failed delivery %v", a)
	}
	mu.Lock()
	up = true
	mu.Unlock()
	h := map[string]string{"Authorization": "Bearer " + tn.token}
	base := s.base + "/api/v1/webhook-subscriptions/" + sub + "/deliveries/"
	r := do(t, http.MethodPost, base+failed["id"].(string)+"/retry", nil, h)
	v.ValidateResponse(t, r.req, r.resp, r.body)
	// The answer is the delivery once the request is recorded: pending, or
	// already succeeded when the dispatcher was quicker than the answer.
	if st := attrs(data(r, t))["state"]; r.status != http.StatusAccepted || (st != "pending" && st != "succeeded") {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodPost, base+"whd_unknown/retry", nil, h); r.status != http.StatusNotFound {
		t.Errorf("retry of an unknown delivery: %d %s", r.status, r.body)
	}
	eventually(t, minEventually, "the retried delivery succeeds", func() bool {
		return len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded")) == 1
	})
}
