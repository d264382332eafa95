package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/ingest/whatsapp"
	"github.com/cgp-platform/cgp/limits/limitstest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// pixelBody is a storefront page view.
const pixelBody = `{"data":{"attributes":{"type":"page_view","url":"https://guard.example.com/p/mug","anonymous_id":"anon-guard-0001"}}}`

// behindProxy starts a server that believes X-Forwarded-For from the test
// client, so that each request may come from an address of its choosing,
// with the brute-force guard on clock (nil: the real one).
func behindProxy(t *testing.T, dir string, clock *limitstest.Clock) *testServer {
	t.Helper()
	return startServerWith(t, dir, func(c *Config) {
		c.TrustedProxies = []string{"127.0.0.1/32"}
		if clock != nil {
			c.Test.GuardNow = clock.Now
		}
	})
}

// TestPublicKeyDoesNotResetBruteForceCounters replays the attack of issue
// 14 point 5: bad admin tokens from one address, each ninth request a
// storefront call with the shop's public key (embedded in its pages, so
// every attacker has it) and an image-API call with a valid key. Neither
// success resets the address's counters: the eleventh failure is 429.
func TestPublicKeyDoesNotResetBruteForceCounters(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "guard.example.com", "agency", "customers:read")
	pk := cli(t, dir, "public-keys", "create", "--shop", tn.shopID)["token"].(string)
	img := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID)["token"].(string)
	bad := "copt_live_" + strings.Repeat("C", 32)
	const ip = "203.0.113.50"

	failures := 0
	var refused response
	for i := 1; i <= 108 && refused.status == 0; i++ {
		if i%9 == 0 {
			r := do(t, http.MethodPost, s.base+"/api/public/events", []byte(pixelBody),
				map[string]string{"X-Forwarded-For": ip, "X-Public-Key": pk, "Content-Type": "application/json"})
			v.ValidateResponse(t, r.req, r.resp, r.body)
			if r.status != 202 {
				t.Fatalf("request %d, public key: %d %s", i, r.status, r.body)
			}
			r = do(t, http.MethodGet, s.base+"/api/v1/usage", nil, map[string]string{"X-Forwarded-For": ip, "X-API-Key": img})
			if r.status != 200 {
				t.Fatalf("request %d, image-API key: %d %s", i, r.status, r.body)
			}
			continue
		}
		r := s.from(t, ip, bad)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		switch r.status {
		case 401:
			failures++
		case 429:
			refused = r
		default:
			t.Fatalf("request %d, bad token: %d %s", i, r.status, r.body)
		}
	}
	if refused.status != 429 || refused.errorCode(t) != "too_many_failed_attempts" || failures != 10 {
		t.Fatalf("after %d failures with public-key and image-key successes between them: %d %s, want 429 after the 10th",
			failures, refused.status, refused.body)
	}
	// An admin token's success still resets its address's counters.
	const other = "203.0.113.51"
	for range 9 {
		s.from(t, other, bad)
	}
	if r := s.from(t, other, tn.token); r.status != 200 {
		t.Fatalf("good token: %d %s", r.status, r.body)
	}
	for i := range 10 {
		if r := s.from(t, other, bad); r.status != 401 {
			t.Fatalf("failure %d after an admin token's success: %d (not reset)", i+1, r.status)
		}
	}
}

// TestRefusedRequestsDoNotBlockAddress: 110 bad requests within one
// instant are ten failures and a hundred refusals; the refusals are no
// authentication attempts, so the address is not blocked for an hour: a
// minute later its good clients are served. Sustained failures (one every
// six seconds, never refused) block it at the hundredth.
func TestRefusedRequestsDoNotBlockAddress(t *testing.T) {
	dir := t.TempDir()
	clock := limitstest.NewClock()
	s := behindProxy(t, dir, clock)
	tn := newTenant(t, dir, "burst.example.com", "agency", "customers:read")
	bad := "copt_live_" + strings.Repeat("D", 32)
	const office = "198.51.100.77"
	statuses := map[string]int{}
	for range 110 {
		r := s.from(t, office, bad)
		key := fmt.Sprint(r.status)
		if r.status == 429 {
			key += " " + r.errorCode(t)
		}
		statuses[key]++
	}
	if statuses["401"] != 10 || statuses["429 too_many_failed_attempts"] != 100 || len(statuses) != 2 {
		t.Fatalf("110 bad requests at once: %v, want 10 answered 401 and 100 too_many_failed_attempts", statuses)
	}
	clock.Advance(time.Minute)
	if r := s.from(t, office, tn.token); r.status != 200 {
		t.Fatalf("a good client behind the address a minute after the burst: %d %s", r.status, r.body)
	}

	const attacker = "192.0.2.99"
	for i := range 100 {
		if i > 0 {
			clock.Advance(6 * time.Second)
		}
		if r := s.from(t, attacker, bad); r.status != 401 {
			t.Fatalf("sustained failure %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := s.from(t, attacker, tn.token)
	if r.status != 429 || r.errorCode(t) != "ip_blocked" || r.header.Get("Retry-After") != "3600" {
		t.Fatalf("good token from the address after 100 sustained failures: %d %v %s", r.status, r.header, r.body)
	}
}

// TestTokenGuessesOnWebhookEndpointsAreFailures: wrong WhatsApp verify
// tokens and wrong provider callback tokens count in the brute-force
// guard, and a refused address gets the 429 before its guess is looked
// at (the right verify token too).
func TestTokenGuessesOnWebhookEndpointsAreFailures(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "guesses.example.com", "growth", "*")
	const verify = "verify-guesses-0001"
	cli(t, dir, "messaging", "connect", "--shop", tn.shopID, "--business-account-id", "4242",
		"--phone-number-id", "106540352242922", "--app-secret", "app-secret-guesses-0123456789", "--verify-token", verify)
	p := cli(t, dir, "messaging", "connect-provider", "--shop", tn.shopID, "--provider", "twilio")
	waitMessaging(t, messagingDB(t, dir), uint64(p["position"].(float64)))

	handshake := func(ip, token string) response {
		q := url.Values{"hub.mode": {"subscribe"}, "hub.challenge": {"1158201444"}, "hub.verify_token": {token}}
		r := do(t, http.MethodGet, s.base+whatsapp.Path+"?"+q.Encode(), nil, map[string]string{"X-Forwarded-For": ip})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	const a = "203.0.113.60"
	if r := handshake(a, verify); r.status != 200 {
		t.Fatalf("right verify token: %d %s", r.status, r.body)
	}
	for i := range 10 {
		if r := handshake(a, fmt.Sprintf("verify-guess-%d", i)); r.status != 403 || r.errorCode(t) != whatsapp.CodeVerificationFailed {
			t.Fatalf("verify guess %d: %d %s", i+1, r.status, r.body)
		}
	}
	if r := handshake(a, "verify-guess-10"); r.status != 429 || r.errorCode(t) != "too_many_failed_attempts" {
		t.Fatalf("11th verify guess: %d %s", r.status, r.body)
	}
	if r := handshake(a, verify); r.status != 429 {
		t.Fatalf("right verify token from the refused address: %d %s, want 429 before the token is looked at", r.status, r.body)
	}
	// The same counters as the admin API.
	if r := s.from(t, a, tn.token); r.status != 429 {
		t.Fatalf("admin token from the refused address: %d", r.status)
	}

	body := []byte(`{"statuses":[]}`)
	callback := func(ip, token string) response {
		r := do(t, http.MethodPost, s.base+"/webhooks/providers/twilio?token="+url.QueryEscape(token), body,
			map[string]string{"X-Forwarded-For": ip, "Content-Type": "application/json"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	const b = "203.0.113.61"
	for i := range 10 {
		if r := callback(b, fmt.Sprintf("cpt_%031dX", i)); r.status != 403 || r.errorCode(t) != "invalid_callback_token" {
			t.Fatalf("callback guess %d: %d %s", i+1, r.status, r.body)
		}
	}
	if r := callback(b, "cpt_"+strings.Repeat("Z", 32)); r.status != 429 || r.errorCode(t) != "too_many_failed_attempts" {
		t.Fatalf("11th callback guess: %d %s", r.status, r.body)
	}
	if r := callback(b, p["token"].(string)); r.status != 429 {
		t.Fatalf("right callback token from the refused address: %d %s, want 429", r.status, r.body)
	}
}

// TestCredentialWorksOnItsFirstRequest: a token is usable on the very next
// request after it is handed out, without X-Wait-For-Position, whether
// POST /api/v1/api-keys, a rotation or `cgp tokens create` (another
// process writing the same log) made it; the old token of a rotation
// fails at once. Each is tried several times: a single try could pass by
// luck without read-your-writes.
func TestCredentialWorksOnItsFirstRequest(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	ent := newTenant(t, dir, "fresh.example.com", "enterprise", "customers:read")
	master := cli(t, dir, "tokens", "create-master", "--account", ent.accountID)["token"].(string)
	post := func(token, path, body string) response {
		return do(t, http.MethodPost, s.base+path, []byte(body), map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"})
	}
	for i := range 5 {
		created := post(master, "/api/v1/api-keys", `{"data":{"attributes":{"shop_id":"`+ent.shopID+`","name":"k`+fmt.Sprint(i)+`","scopes":["*"],"environment":"test"}}}`)
		if created.status != 201 {
			t.Fatalf("create %d: %d %s", i, created.status, created.body)
		}
		d := created.json(t)["data"].(map[string]any)
		minted := d["attributes"].(map[string]any)["token"].(string)
		if r := s.get(t, "/api/v1/customers", minted); r.status != 200 {
			t.Fatalf("token %d on its first request after POST /api/v1/api-keys: %d %s", i, r.status, r.body)
		}
		rotated := post(minted, "/api/v1/api-keys/"+d["id"].(string)+"/rotate", "")
		if rotated.status != 200 {
			t.Fatalf("rotate %d: %d %s", i, rotated.status, rotated.body)
		}
		fresh := rotated.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["token"].(string)
		if r := s.get(t, "/api/v1/customers", fresh); r.status != 200 {
			t.Fatalf("new token %d on its first request after the rotation: %d %s", i, r.status, r.body)
		}
		if r := s.get(t, "/api/v1/customers", minted); r.status != 401 {
			t.Fatalf("old token %d after the rotation: %d", i, r.status)
		}
	}
	for i := range 5 {
		tok := cli(t, dir, "tokens", "create", "--shop", ent.shopID, "--scopes", "customers:read")["token"].(string)
		if r := s.get(t, "/api/v1/customers", tok); r.status != 200 {
			t.Fatalf("token %d printed by cgp tokens create, on its first request: %d %s", i, r.status, r.body)
		}
	}
}

// TestReadYourWritesWithoutHeader: the very next GET after a write by the
// same token sees the write, without X-Wait-For-Position.
func TestReadYourWritesWithoutHeader(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "ryw.example.com", "agency", "journeys:read,journeys:write")
	waitForToken(t, s, tn)
	h := map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"}
	for i := range 10 {
		r := do(t, http.MethodPost, s.base+"/api/v1/journeys", []byte(journeyBody(fmt.Sprint("ryw ", i), "orders/paid", "")), h)
		if r.status != 201 {
			t.Fatalf("create %d: %d %s", i, r.status, r.body)
		}
		id := r.json(t)["data"].(map[string]any)["id"].(string)
		if g := s.get(t, "/api/v1/journeys/"+id+"/enrollments", tn.token); g.status != 200 {
			t.Fatalf("enrollments of journey %d right after its creation: %d %s", i, g.status, g.body)
		}
	}
}

// TestWaitForPositionOnlyAfterAuthentication: a request that fails to
// authenticate is answered at once, however far the position it asks to
// wait for. The server's bound is ten minutes and the client gives up after
// half a minute: an answer at all, 401, proves the server did not wait.
func TestWaitForPositionOnlyAfterAuthentication(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.MaxWaitForPosition = 10 * time.Minute })
	newTenant(t, dir, "nowait.example.com", "agency", "customers:read")
	far := "900000000000"
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string, h map[string]string) (int, error) {
		method, body := http.MethodGet, []byte(nil)
		if path == "/api/public/events" {
			method, body = http.MethodPost, []byte(pixelBody)
		}
		req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Wait-For-Position", far)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for name, c := range map[string]struct {
		path string
		h    map[string]string
	}{
		"no token":              {"/api/v1/customers", nil},
		"unknown token":         {"/api/v1/customers", map[string]string{"Authorization": "Bearer copt_live_" + strings.Repeat("E", 32)}},
		"unknown image-API key": {"/api/v1/usage", map[string]string{"X-API-Key": "cik_live_" + strings.Repeat("E", 32)}},
		"unknown public key": {"/api/public/events", map[string]string{"X-Public-Key": "pk_live_" + strings.Repeat("E", 32),
			"Content-Type": "application/json"}},
	} {
		st, err := get(c.path, c.h)
		if errors.Is(err, context.DeadlineExceeded) || (err != nil && strings.Contains(err.Error(), "Timeout")) {
			t.Fatalf("%s: no answer within the client's 30 s: the server waited for the position before authenticating", name)
		}
		if err != nil || st != 401 {
			t.Fatalf("%s: %d %v, want 401 at once", name, st, err)
		}
	}
}

func TestMaxWaitForPositionConfig(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 5 * time.Second, 10 * time.Minute} {
		cfg := testConfig(t.TempDir())
		cfg.MaxWaitForPosition = d
		if err := cfg.Validate(); err != nil {
			t.Errorf("--max-wait-for-position %v: %v", d, err)
		}
	}
	for _, d := range []time.Duration{-time.Second, 10*time.Minute + time.Millisecond} {
		cfg := testConfig(t.TempDir())
		cfg.MaxWaitForPosition = d
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "max-wait-for-position") {
			t.Errorf("--max-wait-for-position %v: %v", d, err)
		}
	}
	if code, _, stderr := runCLI("serve", "--max-wait-for-position", "-1s", "--data-dir", t.TempDir()); code == 0 || !strings.Contains(stderr, "max-wait-for-position") {
		t.Errorf("serve --max-wait-for-position -1s: exit %d %q", code, stderr)
	}
	t.Setenv("CGP_MAX_WAIT_FOR_POSITION", "11m")
	if code, _, stderr := runCLI("serve", "--data-dir", t.TempDir()); code == 0 || !strings.Contains(stderr, "max-wait-for-position") {
		t.Errorf("serve with CGP_MAX_WAIT_FOR_POSITION=11m: exit %d %q", code, stderr)
	}
}

// TestMaxWaitForPositionBoundsTheWait: the server's bound applies to an
// authenticated request waiting for a position never reached: 503 with
// Retry-After once it ran out.
func TestMaxWaitForPositionBoundsTheWait(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, dir)
	tn := newTenant(t, dir, "bound.example.com", "agency", "customers:read")
	waitForToken(t, first, tn)
	first.stop() // the read models keep the token: no wait needed for it below
	s := startServerWith(t, dir, func(c *Config) { c.MaxWaitForPosition = 50 * time.Millisecond })
	r := s.get(t, "/api/v1/customers", tn.token, "X-Wait-For-Position", "900000000000")
	if r.status != 503 || r.errorCode(t) != "unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a position never reached: %d %v %s", r.status, r.header, r.body)
	}
}

// TestShopWorksOnItsFirstDelivery: a shop made by `cgp shops create` (another
// process writing the same log) while the server runs takes its very
// first signed delivery, sent at once: its webhook secret is a credential
// handed out like a token. Before, the delivery got 401 invalid_signature
// until the tenancy read model had folded the shop (seen once under load
// in the README quick-start test).
func TestShopWorksOnItsFirstDelivery(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	for i := range 5 {
		tn := newTenant(t, dir, fmt.Sprintf("first-delivery-%d.example.com", i), "agency", "customers:read")
		body := customerPayload(int64(7000+i), fmt.Sprintf("first%d@example.com", i), 0, "0.00", "2026-11-01T10:00:00Z")
		if r := s.webhook(t, tn, "customers/create", fmt.Sprintf("first-delivery-%d", i), body); r.status != 200 {
			t.Fatalf("shop %d on its first delivery: %d %s", i, r.status, r.body)
		}
	}
}
