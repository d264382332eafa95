package redis_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/idempotency/idempotencytest"
	idemredis "github.com/cgp-platform/cgp/idempotency/redis"
)

const defaultURL = "redis://127.0.0.1:6379/0"

// redisOptions parses CGP_TEST_REDIS_URL (or the default) and skips the
// test, with one line, when the server does not answer.
func redisOptions(tb testing.TB) *goredis.Options {
	tb.Helper()
	url := os.Getenv("CGP_TEST_REDIS_URL")
	if url == "" {
		url = defaultURL
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		tb.Fatalf("CGP_TEST_REDIS_URL is not a Redis URL: %v", err)
	}
	c := goredis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Skipf("Redis unreachable at %s (set CGP_TEST_REDIS_URL): %v", opts.Addr, err)
	}
	return opts
}

// newBackend makes a unique prefix, opens clients on demand and deletes
// every key under the prefix when the test ends.
func newBackend(tb testing.TB, opts *goredis.Options, cfg idemredis.Config) (prefix string, open func() *idemredis.Store, admin *goredis.Client) {
	tb.Helper()
	prefix = "cgptest:idempotency:" + strings.ToLower(rand.Text()) + ":"
	admin = goredis.NewClient(opts)
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := admin.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("scan test keys: %v", err)
		}
		if len(keys) > 0 {
			if err := admin.Del(ctx, keys...).Err(); err != nil {
				tb.Errorf("delete test keys: %v", err)
			}
		}
		_ = admin.Close()
	})
	open = func() *idemredis.Store {
		c := goredis.NewClient(opts)
		tb.Cleanup(func() { _ = c.Close() })
		cfg := cfg
		cfg.Client, cfg.Prefix = c, prefix
		s, err := idemredis.New(cfg)
		if err != nil {
			tb.Fatalf("new store: %v", err)
		}
		return s
	}
	return prefix, open, admin
}

func opener(tb testing.TB, cfg idempotencytest.Config) idempotencytest.Backend {
	opts := redisOptions(tb)
	_, open, _ := newBackend(tb, opts, idemredis.Config{Lease: cfg.Lease, Window: cfg.Window})
	return idempotencytest.Backend{
		Open:     func() idempotency.Store { return open() },
		RealTime: true,
	}
}

func TestContract(t *testing.T) { idempotencytest.Run(t, opener) }

func BenchmarkStore(b *testing.B) { idempotencytest.Benchmark(b, opener) }

// TestExpiries checks what Redis purges by itself: the record lives for the
// window from the first claim (completing does not extend it), the lease
// key for the lease, and no key name holds the idempotency key.
func TestExpiries(t *testing.T) {
	opts := redisOptions(t)
	const lease, window = 30 * time.Second, 2 * time.Hour
	prefix, open, admin := newBackend(t, opts, idemredis.Config{Lease: lease, Window: window})
	s := open()
	ctx := context.Background()
	const key = "order-7f3a-visible-key"
	c, err := s.Begin(ctx, "tok_a", key, idempotency.Fingerprint(http.MethodPost, "/x", nil))
	if err != nil || c.Outcome != idempotency.Started {
		t.Fatalf("Begin = %v, %v", c.Outcome, err)
	}
	record, leaseKey := s.Keys("tok_a", key)
	ttl := func(k string) time.Duration {
		t.Helper()
		d, err := admin.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := ttl(record); d <= window-time.Minute || d > window {
		t.Errorf("record TTL = %v, want about %v", d, window)
	}
	if d := ttl(leaseKey); d <= 0 || d > lease {
		t.Errorf("lease TTL = %v, want at most %v", d, lease)
	}
	keys, err := admin.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Errorf("keys under the prefix = %d, want 2 (record and lease)", len(keys))
	}
	for _, k := range keys {
		if strings.Contains(k, key) {
			t.Errorf("Redis key name holds the idempotency key")
		}
	}
	before := ttl(record)
	if err := s.Complete(ctx, c, idempotency.Response{Status: http.StatusCreated}); err != nil {
		t.Fatal(err)
	}
	if d := ttl(record); d <= 0 || d > before {
		t.Errorf("record TTL after Complete = %v, want at most %v (the window counts from the claim)", d, before)
	}
	if n, err := admin.Exists(ctx, leaseKey).Result(); err != nil || n != 0 {
		t.Errorf("lease key after Complete exists = %d, %v; want deleted", n, err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := idemredis.New(idemredis.Config{Lease: time.Microsecond}); err == nil {
		t.Fatal("New accepted a nil client and a sub-millisecond lease")
	}
}
