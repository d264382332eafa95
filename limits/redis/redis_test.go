package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/limits/limitstest"
	"github.com/cgp-platform/cgp/limits/redis"
)

const envURL = "CGP_TEST_REDIS_URL"

func testURL() string {
	if s := os.Getenv(envURL); s != "" {
		return s
	}
	return "redis://127.0.0.1:6379/0"
}

// client returns a client of the test server, or skips the test when the
// server cannot be reached (and only then).
func client(t testing.TB) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(testURL())
	if err != nil {
		t.Fatalf("parse %s: %v", envURL, err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err = c.Ping(ctx).Err()
	var netErr net.Error
	switch {
	case err == nil:
	case errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded):
		t.Skipf("Redis unreachable at %s (set %s): %v", opts.Addr, envURL, err)
	default:
		t.Fatalf("Redis at %s (%s): %v", opts.Addr, envURL, err)
	}
	return c
}

// prefix returns a key prefix unique to this test and deletes every key
// under it when the test ends.
func prefix(t testing.TB, c *goredis.Client) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	p := "cgptest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := keysUnder(ctx, c, p)
		if err == nil && len(keys) > 0 {
			err = c.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("clean up %s*: %v", p, err)
		}
	})
	return p
}

func keysUnder(ctx context.Context, c *goredis.Client, p string) ([]string, error) {
	var keys []string
	iter := c.Scan(ctx, 0, p+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

var secret = []byte("test-secret-0123456789abcdef")

func TestLimiterContract(t *testing.T) {
	c := client(t)
	limitstest.RunLimiter(t, func(t *testing.T, s limitstest.LimiterSetup) limits.Limiter {
		l, err := redis.NewLimiter(c, redis.LimiterConfig{Prefix: prefix(t, c), Now: s.Now})
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}

func TestGuardContract(t *testing.T) {
	c := client(t)
	limitstest.RunGuard(t, func(t *testing.T, s limitstest.GuardSetup) limits.Guard {
		g, err := redis.NewGuard(c, redis.GuardConfig{Rules: s.Rules, Prefix: prefix(t, c), Secret: secret, Now: s.Now})
		if err != nil {
			t.Fatal(err)
		}
		return g
	})
}

// The server's clock (TIME) is the default; it must agree with this one.
func TestServerClock(t *testing.T) {
	c := client(t)
	l, err := redis.NewLimiter(c, redis.LimiterConfig{Prefix: prefix(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	limitstest.CheckLimiterRealClock(t, l)
	g, err := redis.NewGuard(c, redis.GuardConfig{Prefix: prefix(t, c), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	limitstest.CheckGuardRealClock(t, g)
}

// Two servers sharing Redis share the counts; the keys name no address and
// expire.
func TestGuardKeys(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	clock := limitstest.NewClock()
	open := func() *redis.Guard {
		g, err := redis.NewGuard(c, redis.GuardConfig{Prefix: p, Secret: secret, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	a, b := open(), open()
	ctx := context.Background()
	ip := netip.MustParseAddr("203.0.113.45")
	for i := range 10 {
		g := a
		if i%2 == 1 {
			g = b
		}
		if v, err := g.Fail(ctx, ip); err != nil || !v.Allowed {
			t.Fatalf("failure %d: %+v, %v", i+1, v, err)
		}
	}
	if v, err := b.Check(ctx, ip); err != nil || v.Code != limits.CodeTooManyFailedAttempts {
		t.Fatalf("check on the second server after 10 failures across both: %+v, %v", v, err)
	}
	keys, err := keysUnder(ctx, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Fatalf("keys %v, want a hash and a list", keys)
	}
	for _, k := range keys {
		// The test's own prefix is random and may hold "203" by chance:
		// only what the guard adds after it must not name the address.
		if rest := strings.TrimPrefix(k, p); strings.Contains(rest, "203") || strings.Contains(rest, ip.String()) {
			t.Errorf("key %q names the address", k)
		}
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 {
			t.Errorf("key %q: expiry %v, %v; want one", k, ttl, err)
		}
	}
	// Another secret gives other keys: nothing is shared.
	other, err := redis.NewGuard(c, redis.GuardConfig{Prefix: p, Secret: []byte("another-secret-0123456789"), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := other.Check(ctx, ip); err != nil || !v.Allowed {
		t.Fatalf("check with another secret: %+v, %v", v, err)
	}
}

// The store rounds expiries down to whole seconds; the limiter's margin
// keeps a key at least as long as its state matters, never shorter.
func TestLimiterKeysExpire(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	l, err := redis.NewLimiter(c, redis.LimiterConfig{Prefix: p})
	if err != nil {
		t.Fatal(err)
	}
	allow := func(key string, lim limits.Limit) {
		if _, err := l.Allow(context.Background(), key, lim); err != nil {
			t.Fatal(err)
		}
	}
	// A first request creates the key (set-if-not-exists); its state
	// matters for 1.5s.
	allow("tok_new", limits.Limit{Rate: 1, Period: 1500 * time.Millisecond})
	// A second one updates it (compare-and-swap); its state then matters
	// for 3.5s.
	allow("tok_cas", limits.Limit{Rate: 2, Period: 3500 * time.Millisecond})
	allow("tok_cas", limits.Limit{Rate: 2, Period: 3500 * time.Millisecond})
	for key, state := range map[string]time.Duration{"tok_new": 1500 * time.Millisecond, "tok_cas": 3500 * time.Millisecond} {
		ttl, err := c.PTTL(context.Background(), p+"rl:"+key).Result()
		if err != nil || ttl < state || ttl > state+time.Second {
			t.Errorf("expiry of %s: %v, %v; want between %v (the state) and a second more", key, ttl, err, state)
		}
	}
}

func TestUnavailable(t *testing.T) {
	// A server that does not answer: a closed port on the loopback.
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", DialTimeout: time.Second, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	l, err := redis.NewLimiter(c, redis.LimiterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Allow(context.Background(), "tok_u", limits.PerMinute(10))
	if domain.ErrorCode(err) != domain.CodeUnavailable {
		t.Fatalf("Allow with Redis down: %v, want code unavailable", err)
	}
	g, err := redis.NewGuard(c, redis.GuardConfig{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Check(context.Background(), netip.MustParseAddr("192.0.2.1"))
	if domain.ErrorCode(err) != domain.CodeUnavailable {
		t.Fatalf("Check with Redis down: %v, want code unavailable", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c2 := client(t)
	g2, err := redis.NewGuard(c2, redis.GuardConfig{Prefix: prefix(t, c2), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Fail(ctx, netip.MustParseAddr("192.0.2.1")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Fail with a canceled context: %v, want context.Canceled", err)
	}
}

func TestGuardConfigRejected(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { c.Close() })
	_, err := redis.NewGuard(c, redis.GuardConfig{Secret: []byte("short"), Rules: limits.GuardConfig{Window: -time.Second}})
	if err == nil || !strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "Window") {
		t.Fatalf("NewGuard with a short secret and a negative window: %v, want both reported", err)
	}
	if _, err := redis.NewLimiter(nil, redis.LimiterConfig{}); err == nil {
		t.Fatal("NewLimiter without a client: no error")
	}
}

func BenchmarkLimiter(b *testing.B) {
	c := client(b)
	limitstest.BenchLimiter(b, func(b *testing.B) limits.Limiter {
		l, err := redis.NewLimiter(c, redis.LimiterConfig{Prefix: prefix(b, c)})
		if err != nil {
			b.Fatal(err)
		}
		return l
	})
}

func BenchmarkGuard(b *testing.B) {
	c := client(b)
	limitstest.BenchGuard(b, func(b *testing.B) limits.Guard {
		g, err := redis.NewGuard(c, redis.GuardConfig{Prefix: prefix(b, c), Secret: secret})
		if err != nil {
			b.Fatal(err)
		}
		return g
	})
}

func Example() {
	opts, _ := goredis.ParseURL("redis://127.0.0.1:6379/0")
	client := goredis.NewClient(opts)
	defer client.Close()
	guard, err := redis.NewGuard(client, redis.GuardConfig{Secret: []byte("derive-me-from-the-master-key")})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = guard // guard.Check before authenticating, Fail or Succeed after
	fmt.Println("ok")
	// Output: ok
}
