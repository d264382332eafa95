package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/idempotency/idempotencytest"
	"github.com/cgp-platform/cgp/idempotency/sqlite"
)

// opener gives each backend its own file; every instance is a separate
// connection pool on it, as a separate process would have.
func opener(tb testing.TB, cfg idempotencytest.Config) idempotencytest.Backend {
	path := filepath.Join(tb.TempDir(), "idempotency.db")
	var mu sync.Mutex
	return idempotencytest.Backend{
		Open: func() idempotency.Store {
			mu.Lock()
			defer mu.Unlock()
			s, err := sqlite.Open(sqlite.Config{Path: path, Lease: cfg.Lease, Window: cfg.Window, Now: cfg.Now})
			if err != nil {
				tb.Fatalf("open: %v", err)
			}
			tb.Cleanup(func() {
				if err := s.Close(); err != nil {
					tb.Errorf("close: %v", err)
				}
			})
			return s
		},
	}
}

func TestContract(t *testing.T) { idempotencytest.Run(t, opener) }

func BenchmarkStore(b *testing.B) { idempotencytest.Benchmark(b, opener) }

func TestPurge(t *testing.T) {
	clock := idempotencytest.NewClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "idempotency.db")
	s, err := sqlite.Open(sqlite.Config{Path: path, Window: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	fp := idempotency.Fingerprint("POST", "/x", nil)
	const old = 40
	for i := range old {
		c, err := s.Begin(ctx, "tok_a", key(i), fp)
		if err != nil || c.Outcome != idempotency.Started {
			t.Fatalf("Begin = %v, %v", c.Outcome, err)
		}
		if i%2 == 0 {
			if err := s.Complete(ctx, c, idempotency.Response{Status: 201, Body: []byte("secret-body")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	clock.Advance(30 * time.Minute)
	young, err := s.Begin(ctx, "tok_a", "young", fp)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, young, idempotency.Response{Status: 201}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("Purge within the window = %d, %v; want 0", n, err)
	}
	clock.Advance(30 * time.Minute)
	// A claim that writes purges a few expired records on the way.
	if _, err := s.Begin(ctx, "tok_a", "new", fp); err != nil {
		t.Fatal(err)
	}
	n, err := s.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(old - 16); n != want {
		t.Fatalf("Purge = %d, want %d (the %d old records less the 16 the claim purged)", n, want, old)
	}
	c, err := s.Begin(ctx, "tok_a", "young", fp)
	if err != nil || c.Outcome != idempotency.Replay {
		t.Fatalf("the young record after Purge: %v, %v; want replay", c.Outcome, err)
	}
}

func key(i int) string { return "key-" + string(rune('a'+i%26)) + string(rune('a'+i/26)) }

func TestOpenRejectsBadConfig(t *testing.T) {
	if _, err := sqlite.Open(sqlite.Config{Lease: -1}); err == nil {
		t.Fatal("Open accepted an empty path and a negative lease")
	}
	if _, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "missing", "x.db")}); err == nil {
		t.Fatal("Open accepted a path in a missing directory")
	}
}
