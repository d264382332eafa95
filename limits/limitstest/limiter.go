package limitstest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/limits"
)

// LimiterSetup is what the suite asks of an adapter's rate limiter.
type LimiterSetup struct {
	// Now is the clock the limiter must use.
	Now func() time.Time
	// MaxKeys, when positive, bounds the keys an in-process limiter keeps.
	MaxKeys int
}

// Option adds checks for guarantees only some adapters give.
type Option func(*options)

type options struct {
	inProcess bool
}

// InProcess runs the bounded-memory checks: the adapter keeps its state in
// this process and honours LimiterSetup.MaxKeys and GuardSetup.MaxEntries.
func InProcess() Option { return func(o *options) { o.inProcess = true } }

// RunLimiter runs the rate-limiter contract against the limiters open
// returns. open is called once per subtest and must return a limiter with
// no state, on setup's clock; it registers any cleanup with t.Cleanup.
func RunLimiter(t *testing.T, open func(t *testing.T, setup LimiterSetup) limits.Limiter, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, l limits.Limiter, c *Clock)
	}{
		{"LimitPerKey", testLimitPerKey},
		{"RetryAfter", testRetryAfter},
		{"FullRecovery", testFullRecovery},
		{"KeysIndependent", testKeysIndependent},
		{"LimitPerCall", testLimitPerCall},
		{"Burst", testBurst},
		{"SustainedRate", testSustainedRate},
		{"InvalidLimit", testInvalidLimit},
		{"Concurrent", testLimiterConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock()
			tc.fn(t, open(t, LimiterSetup{Now: c.Now}), c)
		})
	}
	if o.inProcess {
		t.Run("BoundedMemory", func(t *testing.T) {
			const maxKeys = 2000
			c := NewClock()
			l := open(t, LimiterSetup{Now: c.Now, MaxKeys: maxKeys})
			n := 0
			fill := func(count int) {
				for range count {
					allow(t, l, fmt.Sprintf("tok_%012d", n), limits.PerMinute(600))
					n++
				}
			}
			checkBoundedHeap(t, maxKeys, fill)
			runtime.KeepAlive(l) // measured with the limiter alive
		})
	}
}

// allow calls Allow and fails the test on an error.
func allow(t *testing.T, l limits.Limiter, key string, limit limits.Limit) limits.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key, limit)
	if err != nil {
		t.Fatalf("Allow(%q, %+v): %v", key, limit, err)
	}
	return d
}

func testLimitPerKey(t *testing.T, l limits.Limiter, c *Clock) {
	now := c.Now()
	prevReset := time.Time{}
	for i := range 5 {
		d := allow(t, l, "tok_a", limits.PerMinute(5))
		if !d.Allowed || d.Limit != 5 || d.Remaining != 4-i || d.RetryAfter != 0 {
			t.Fatalf("request %d: got %+v, want allowed, limit 5, remaining %d, no retry-after", i+1, d, 4-i)
		}
		if !d.Reset.After(now) || d.Reset.After(now.Add(time.Minute)) {
			t.Fatalf("request %d: reset %v, want within a minute after %v", i+1, d.Reset, now)
		}
		if d.Reset.Before(prevReset) {
			t.Fatalf("request %d: reset went back from %v to %v", i+1, prevReset, d.Reset)
		}
		prevReset = d.Reset
	}
	for i := range 3 {
		d := allow(t, l, "tok_a", limits.PerMinute(5))
		if d.Allowed || d.Remaining != 0 || d.Limit != 5 {
			t.Fatalf("request %d over the limit: got %+v, want refused with 0 remaining", 6+i, d)
		}
		// Five requests at once fill a minute; one more fits after a
		// fifth of it. A refused request is not counted.
		if d.RetryAfter != 12*time.Second {
			t.Fatalf("request %d over the limit: retry after %v, want 12s", 6+i, d.RetryAfter)
		}
		if !d.Reset.Equal(now.Add(time.Minute)) {
			t.Fatalf("request %d over the limit: reset %v, want %v", 6+i, d.Reset, now.Add(time.Minute))
		}
	}
}

func testRetryAfter(t *testing.T, l limits.Limiter, c *Clock) {
	lim := limits.PerMinute(3)
	for range 3 {
		allow(t, l, "tok_r", lim)
	}
	d := allow(t, l, "tok_r", lim)
	if d.Allowed || d.RetryAfter != 20*time.Second {
		t.Fatalf("over the limit: got %+v, want refused with retry after 20s", d)
	}
	c.Advance(d.RetryAfter - time.Millisecond)
	if d := allow(t, l, "tok_r", lim); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("1ms before retry-after: got %+v, want refused with retry after 1ms", d)
	}
	c.Advance(time.Millisecond)
	if d := allow(t, l, "tok_r", lim); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("at retry-after: got %+v, want allowed with 0 remaining", d)
	}
	if d := allow(t, l, "tok_r", lim); d.Allowed || d.RetryAfter != 20*time.Second {
		t.Fatalf("after the one request: got %+v, want refused with retry after 20s", d)
	}
}

func testFullRecovery(t *testing.T, l limits.Limiter, c *Clock) {
	lim := limits.PerMinute(4)
	for range 6 {
		allow(t, l, "tok_f", lim)
	}
	c.Advance(30 * time.Second)
	if d := allow(t, l, "tok_f", lim); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("half a minute later: got %+v, want allowed with 1 remaining", d)
	}
	c.Advance(time.Minute)
	d := allow(t, l, "tok_f", lim)
	if !d.Allowed || d.Remaining != 3 || !d.Reset.Equal(c.Now().Add(15*time.Second)) {
		t.Fatalf("a minute later: got %+v, want allowed with 3 remaining, reset in 15s", d)
	}
}

func testKeysIndependent(t *testing.T, l limits.Limiter, _ *Clock) {
	lim := limits.PerMinute(3)
	for range 4 {
		allow(t, l, "tok_x", lim)
	}
	if d := allow(t, l, "tok_x", lim); d.Allowed {
		t.Fatalf("tok_x over its limit: got %+v, want refused", d)
	}
	for i := range 3 {
		if d := allow(t, l, "tok_y", lim); !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("tok_y request %d: got %+v, want allowed with %d remaining (tok_x must not count)", i+1, d, 2-i)
		}
	}
}

func testLimitPerCall(t *testing.T, l limits.Limiter, _ *Clock) {
	agency, enterprise := limits.PerMinute(2), limits.PerMinute(4)
	count := func(key string, lim limits.Limit) int {
		n := 0
		for range 10 {
			if allow(t, l, key, lim).Allowed {
				n++
			}
		}
		return n
	}
	if n := count("tok_agency", agency); n != 2 {
		t.Errorf("agency token: %d allowed, want 2", n)
	}
	if n := count("tok_enterprise", enterprise); n != 4 {
		t.Errorf("enterprise token: %d allowed, want 4", n)
	}
}

func testBurst(t *testing.T, l limits.Limiter, c *Clock) {
	lim := limits.Limit{Rate: 60, Period: time.Minute, Burst: 3}
	for i := range 3 {
		if d := allow(t, l, "tok_b", lim); !d.Allowed || d.Limit != 3 || d.Remaining != 2-i {
			t.Fatalf("burst request %d: got %+v, want allowed, limit 3, remaining %d", i+1, d, 2-i)
		}
	}
	d := allow(t, l, "tok_b", lim)
	if d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("after the burst: got %+v, want refused with retry after 1s", d)
	}
	c.Advance(time.Second)
	if d := allow(t, l, "tok_b", lim); !d.Allowed {
		t.Fatalf("a second later: got %+v, want allowed", d)
	}
}

func testSustainedRate(t *testing.T, l limits.Limiter, c *Clock) {
	lim := limits.PerMinute(600)
	allowed := 0
	for range 700 {
		if allow(t, l, "tok_s", lim).Allowed {
			allowed++
		}
	}
	if allowed != 600 {
		t.Fatalf("700 requests at once: %d allowed, want 600", allowed)
	}
	// Then one request per 100ms, and no more.
	for step := range 30 {
		c.Advance(100 * time.Millisecond)
		if d := allow(t, l, "tok_s", lim); !d.Allowed {
			t.Fatalf("step %d: first request refused: %+v", step, d)
		}
		if d := allow(t, l, "tok_s", lim); d.Allowed || d.RetryAfter != 100*time.Millisecond {
			t.Fatalf("step %d: second request: got %+v, want refused with retry after 100ms", step, d)
		}
	}
}

func testInvalidLimit(t *testing.T, l limits.Limiter, _ *Clock) {
	for _, lim := range []limits.Limit{{}, {Rate: -1}, {Rate: 5, Burst: -2}, {Rate: 5, Period: -time.Second}} {
		if _, err := l.Allow(context.Background(), "tok_i", lim); !errors.Is(err, limits.ErrInvalidLimit) {
			t.Errorf("Allow with %+v: error %v, want ErrInvalidLimit", lim, err)
		}
	}
}

func testLimiterConcurrent(t *testing.T, l limits.Limiter, _ *Clock) {
	const workers = 64
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed int
		errs    []error
	)
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := l.Allow(context.Background(), "tok_c", limits.PerMinute(10))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if d.Allowed {
				allowed++
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d concurrent calls failed, first: %v", len(errs), workers, errs[0])
	}
	if allowed != 10 {
		t.Fatalf("%d concurrent requests: %d allowed, want exactly 10", workers, allowed)
	}
}

// checkBoundedHeap fails the test when the heap keeps growing with the
// number of keys: fill(max) fills the structure, then fill(10*max) more
// keys must grow the heap by less than the first fill did.
func checkBoundedHeap(t *testing.T, max int, fill func(count int)) {
	t.Helper()
	h0 := heapAlloc()
	fill(max)
	h1 := heapAlloc()
	fill(10 * max)
	h2 := heapAlloc()
	first, more := h1-h0, h2-h1
	t.Logf("heap: +%d bytes for the first %d keys (%d bytes a key), %+d bytes for %d more", first, max, first/int64(max), more, 10*max)
	if first <= 0 {
		t.Fatalf("filling %d keys did not grow the heap (%d bytes): the check cannot tell", max, first)
	}
	if more >= first {
		t.Fatalf("memory is not bounded: %d more keys grew the heap by %d bytes, after %d bytes for the first %d", 10*max, more, first, max)
	}
}

func heapAlloc() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
