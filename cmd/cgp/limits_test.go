package main

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/limits/limitstest"
)

// from sends a request as the client at ip (through a trusted proxy).
func (s *testServer) from(t *testing.T, ip, token string) response {
	t.Helper()
	h := map[string]string{"X-Forwarded-For": ip}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return do(t, http.MethodGet, s.base+"/api/v1/customers", nil, h)
}

func TestBruteForceProtectionPerClientAddress(t *testing.T) {
	dir := t.TempDir()
	clock := limitstest.NewClock()
	s := behindProxy(t, dir, clock)
	tn := newTenant(t, dir, "brute.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	bad := "copt_live_" + strings.Repeat("B", 32)

	// Ten failures are answered 401; the eleventh within the minute is 429.
	for i := 0; i < 10; i++ {
		if r := s.from(t, "203.0.113.7", bad); r.status != 401 {
			t.Fatalf("failure %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := s.from(t, "203.0.113.7", bad)
	if r.status != 429 || r.errorCode(t) != "too_many_failed_attempts" {
		t.Fatalf("11th failure: %d %s", r.status, r.body)
	}
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Even a good token waits from that address; other addresses are not
	// affected.
	if r := s.from(t, "203.0.113.7", tn.token); r.status != 429 {
		t.Errorf("good token from the throttled address: %d", r.status)
	}
	if r := s.from(t, "198.51.100.1", tn.token); r.status != 200 {
		t.Errorf("good token from another address: %d %s", r.status, r.body)
	}
	// A success resets the counters of its address.
	for i := 0; i < 5; i++ {
		s.from(t, "198.51.100.2", bad)
	}
	if r := s.from(t, "198.51.100.2", tn.token); r.status != 200 {
		t.Fatalf("success: %d", r.status)
	}
	for i := 0; i < 10; i++ {
		if r := s.from(t, "198.51.100.2", bad); r.status != 401 {
			t.Fatalf("failure %d after a success: %d (counters not reset)", i+1, r.status)
		}
	}
	// 100 failures within 24 hours (sustained: one every six seconds, so
	// that none is refused) block the address for an hour; 1000 attempts,
	// refused ones included, raise an alert.
	for i := 0; i < 100; i++ {
		if i > 0 {
			clock.Advance(6 * time.Second)
		}
		if r := s.from(t, "192.0.2.99", bad); r.status != 401 {
			t.Fatalf("sustained failure %d: %d %s", i+1, r.status, r.body)
		}
	}
	var blocked response
	for i := 100; i < 1000; i++ {
		blocked = s.from(t, "192.0.2.99", bad)
	}
	if blocked.status != 429 || blocked.errorCode(t) != "ip_blocked" {
		t.Fatalf("after 1000 attempts: %d %s", blocked.status, blocked.body)
	}
	if ra, _ := strconv.Atoi(blocked.header.Get("Retry-After")); ra < 3000 || ra > 3600 {
		t.Fatalf("block Retry-After %q", blocked.header.Get("Retry-After"))
	}
	if r := s.from(t, "192.0.2.99", tn.token); r.status != 429 {
		t.Errorf("good token from a blocked address: %d", r.status)
	}
	s.stop()
	if n := strings.Count(s.logs.String(), `"alert":"brute_force"`); n != 1 {
		t.Fatalf("%d brute-force alerts logged, want 1", n)
	}
	if strings.Contains(s.logs.String(), "192.0.2.99") {
		t.Fatal("the client address reached the logs")
	}
}

func TestRateLimitPerToken(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.RateAgency = 5 })
	tn := newTenant(t, dir, "rate.example.com", "agency", "customers:read")
	other := newTenant(t, dir, "rate2.example.com", "agency", "customers:read")
	waitForToken(t, s, other) // made after tn: tn is known too
	var last response
	remaining := []string{}
	for i := 0; i < 5; i++ {
		last = s.get(t, "/api/v1/customers", tn.token)
		if last.status != 200 {
			t.Fatalf("request %d: %d %s", i+1, last.status, last.body)
		}
		remaining = append(remaining, last.header.Get("X-RateLimit-Remaining"))
		if last.header.Get("X-RateLimit-Limit") != "5" {
			t.Fatalf("X-RateLimit-Limit %q", last.header.Get("X-RateLimit-Limit"))
		}
	}
	if strings.Join(remaining, ",") != "4,3,2,1,0" {
		t.Errorf("remaining %v", remaining)
	}
	r := s.get(t, "/api/v1/customers", tn.token)
	if r.status != 429 || r.errorCode(t) != "rate_limited" || r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("over the limit: %d %v %s", r.status, r.header, r.body)
	}
	reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil || reset <= 0 {
		t.Fatalf("X-RateLimit-Reset %q", r.header.Get("X-RateLimit-Reset"))
	}
	// Another token is not affected.
	if r := s.get(t, "/api/v1/customers", other.token); r.status != 200 {
		t.Fatalf("other token: %d", r.status)
	}
}

func TestOversizedInputIsA4xx(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "big.example.com", "agency", "*")
	waitForToken(t, s, tn)
	if r := s.get(t, "/api/v1/customers", tn.token, "X-Padding", strings.Repeat("x", 200<<10)); r.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("200 KiB of headers: %d", r.status)
	}
	big := []byte(`{"data":{"attributes":{"tags":["` + strings.Repeat("x", 2<<20) + `"]}}}`)
	r := do(t, http.MethodPatch, s.base+"/api/v1/customers/cus_x", big, map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
	if r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != "payload_too_large" {
		t.Errorf("2 MiB PATCH: %d %.200s", r.status, r.body)
	}
	r = do(t, http.MethodPost, s.base+"/api/public/events", big, map[string]string{"X-Shop-Domain": "big.example.com", "Origin": "https://big.example.com", "Content-Type": "application/json"})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB pixel event: %d %.200s", r.status, r.body)
	}
	if r := s.get(t, "/api/v1/customers?"+strings.Repeat("a", 100<<10)+"=1", tn.token); r.status >= 500 || r.status < 400 {
		t.Errorf("100 KiB query: %d", r.status)
	}
}

// With --redis-url the counters and idempotency records live in Redis (the
// adapters' own suites test Redis in depth; this checks the wiring).
func TestServerOnRedis(t *testing.T) {
	url := os.Getenv("CGP_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.RedisURL = url })
	tn := newTenant(t, dir, "redis.example.com", "agency", "*")
	waitForToken(t, s, tn)
	w := s.webhook(t, tn, "customers/create", "dlv-redis", customerPayload(5, "r@example.com", 1, "1.00", "2026-10-01T10:00:00Z"))
	r := s.get(t, "/api/v1/customers", tn.token, "X-Wait-For-Position", w.position(t))
	if r.status != 200 || r.header.Get("X-RateLimit-Limit") != "600" {
		t.Fatalf("list on Redis limits: %d %v", r.status, r.header)
	}
	id := domain.CustomerIDFromExternal(tn.shopID, "5")
	patch := func() response {
		return do(t, http.MethodPatch, s.base+"/api/v1/customers/"+id, []byte(`{"data":{"attributes":{"tags":["r"]}}}`),
			map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json", "Idempotency-Key": "redis-" + tn.shopID})
	}
	if first := patch(); first.status != 200 {
		t.Fatalf("patch: %d %s", first.status, first.body)
	}
	if again := patch(); again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay through Redis: %d %v", again.status, again.header)
	}
}
