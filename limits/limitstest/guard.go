package limitstest

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/limits"
)

// GuardSetup is what the suite asks of an adapter's guard.
type GuardSetup struct {
	// Now is the clock the guard must use.
	Now func() time.Time
	// Rules are the rules the guard must apply (the defaults: the
	// specification's values).
	Rules limits.GuardConfig
	// MaxEntries, when positive, bounds the client keys an in-process
	// guard keeps.
	MaxEntries int
}

// Sizer is implemented by in-process guards: Len is the number of client
// keys held, Cap the most they hold.
type Sizer interface {
	Len() int
	Cap() int
}

// RunGuard runs the brute-force guard contract against the guards open
// returns. open is called once per subtest and must return a guard with no
// state, on setup's clock and rules; it registers any cleanup with
// t.Cleanup.
func RunGuard(t *testing.T, open func(t *testing.T, setup GuardSetup) limits.Guard, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, g *guardT, c *Clock)
	}{
		{"MinuteLimit", testMinuteLimit},
		{"KeysIndependent", testGuardKeysIndependent},
		{"BlockAfterDayCount", testBlockAfterDayCount},
		{"FloodDoesNotBlock", testFloodDoesNotBlock},
		{"BlockCountsAdmittedFailuresOnly", testBlockCountsAdmittedOnly},
		{"AlertOnce", testAlertOnce},
		{"SucceedResets", testSucceedResets},
		{"SucceedKeepsBlock", testSucceedKeepsBlock},
		{"DayWindow", testDayWindow},
		{"ConcurrentFailures", testGuardConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock()
			g := open(t, GuardSetup{Now: c.Now})
			tc.fn(t, &guardT{t: t, g: g}, c)
		})
	}
	if o.inProcess {
		t.Run("BoundedMemory", func(t *testing.T) { testGuardBounded(t, open) })
		t.Run("EvictsBlockedLast", func(t *testing.T) { testGuardEvictsBlockedLast(t, open) })
	}
}

// guardT calls a guard and fails the test on an error.
type guardT struct {
	t *testing.T
	g limits.Guard
}

func (g *guardT) check(ip string) limits.Verdict {
	g.t.Helper()
	v, err := g.g.Check(context.Background(), netip.MustParseAddr(ip))
	if err != nil {
		g.t.Fatalf("Check(%s): %v", ip, err)
	}
	return v
}

func (g *guardT) fail(ip string) limits.Verdict {
	g.t.Helper()
	v, err := g.g.Fail(context.Background(), netip.MustParseAddr(ip))
	if err != nil {
		g.t.Fatalf("Fail(%s): %v", ip, err)
	}
	return v
}

func (g *guardT) succeed(ip string) {
	g.t.Helper()
	if err := g.g.Succeed(context.Background(), netip.MustParseAddr(ip)); err != nil {
		g.t.Fatalf("Succeed(%s): %v", ip, err)
	}
}

// attempt is what a caller does for a request with a bad credential:
// Check, then Fail if Check allowed.
func (g *guardT) attempt(ip string) limits.Verdict {
	g.t.Helper()
	if v := g.check(ip); !v.Allowed {
		return v
	}
	return g.fail(ip)
}

// sustain fails n times from ip, 6s apart, so that the minute window never
// fills and every failure is admitted. The clock stops at the last one.
func (g *guardT) sustain(c *Clock, ip string, n int) {
	g.t.Helper()
	for i := range n {
		if i > 0 {
			c.Advance(6 * time.Second)
		}
		wantAllowed(g.t, fmt.Sprintf("sustained failure %d", i+1), g.attempt(ip))
	}
}

func wantRefused(t *testing.T, what string, v limits.Verdict, code string, retry time.Duration) {
	t.Helper()
	if v.Allowed || v.Code != code || v.RetryAfter != retry {
		t.Fatalf("%s: got %+v, want refused with %s, retry after %v", what, v, code, retry)
	}
}

func wantAllowed(t *testing.T, what string, v limits.Verdict) {
	t.Helper()
	if !v.Allowed || v.Code != "" || v.RetryAfter != 0 {
		t.Fatalf("%s: got %+v, want allowed", what, v)
	}
}

const ip1, ip2 = "203.0.113.7", "198.51.100.20"

func testMinuteLimit(t *testing.T, g *guardT, c *Clock) {
	if v := g.check(ip1); !v.Allowed || v.Failures {
		t.Fatalf("fresh address: got %+v, want allowed without failures", v)
	}
	for i := range 10 {
		wantAllowed(t, fmt.Sprintf("check before failure %d", i+1), g.check(ip1))
		v := g.fail(ip1)
		wantAllowed(t, fmt.Sprintf("failure %d", i+1), v)
		if !v.Failures || v.Alert {
			t.Fatalf("failure %d: got %+v, want failures on record and no alert", i+1, v)
		}
		if i < 9 {
			c.Advance(time.Second)
		}
	}
	// Ten failures from 0s to 9s: the first leaves the window at 60s.
	wantRefused(t, "check after 10 failures", g.check(ip1), limits.CodeTooManyFailedAttempts, 51*time.Second)
	wantRefused(t, "11th failure", g.fail(ip1), limits.CodeTooManyFailedAttempts, 51*time.Second)
	c.Advance(51*time.Second - time.Millisecond)
	wantRefused(t, "1ms before retry-after", g.check(ip1), limits.CodeTooManyFailedAttempts, time.Millisecond)
	c.Advance(time.Millisecond)
	wantAllowed(t, "check at retry-after", g.check(ip1))
	wantAllowed(t, "failure at retry-after", g.fail(ip1))
	// The window now holds the failures from 1s to 9s and the one at 60s.
	wantRefused(t, "check after it", g.check(ip1), limits.CodeTooManyFailedAttempts, time.Second)
}

func testGuardKeysIndependent(t *testing.T, g *guardT, _ *Clock) {
	for range 10 {
		g.fail(ip1)
	}
	wantRefused(t, ip1, g.check(ip1), limits.CodeTooManyFailedAttempts, time.Minute)
	wantRefused(t, "the same address IPv4-mapped", g.check("::ffff:"+ip1), limits.CodeTooManyFailedAttempts, time.Minute)
	if v := g.check(ip2); !v.Allowed || v.Failures {
		t.Fatalf("another address: got %+v, want allowed without failures", v)
	}

	for i := range 10 {
		// Ten addresses of one /64 count as one.
		g.fail(fmt.Sprintf("2001:db8:1:2::%x", i+1))
	}
	wantRefused(t, "another address of the same /64", g.check("2001:db8:1:2:ffff:ffff:ffff:ffff"), limits.CodeTooManyFailedAttempts, time.Minute)
	wantRefused(t, "the same address with a zone", g.check("2001:db8:1:2::1%eth0"), limits.CodeTooManyFailedAttempts, time.Minute)
	wantAllowed(t, "the next /64", g.check("2001:db8:1:3::1"))
	wantAllowed(t, "another IPv4 address", g.fail(ip2))
}

func testBlockAfterDayCount(t *testing.T, g *guardT, c *Clock) {
	// One failure every 6s never fills the minute window.
	for i := range 99 {
		wantAllowed(t, fmt.Sprintf("attempt %d", i+1), g.attempt(ip1))
		c.Advance(6 * time.Second)
	}
	v := g.attempt(ip1)
	wantAllowed(t, "the 100th failure (answered 401)", v)
	wantRefused(t, "check after 100 failures", g.check(ip1), limits.CodeIPBlocked, time.Hour)
	c.Advance(20 * time.Minute)
	wantRefused(t, "check 20 minutes into the block", g.check(ip1), limits.CodeIPBlocked, 40*time.Minute)
	wantRefused(t, "failure during the block", g.fail(ip1), limits.CodeIPBlocked, 40*time.Minute)
	wantAllowed(t, "another address", g.check(ip2))
	c.Advance(40 * time.Minute)
	// Block over; the day count is still at 100 or more, so the next
	// failure starts another hour.
	if v := g.check(ip1); !v.Allowed || !v.Failures {
		t.Fatalf("check after the block: got %+v, want allowed with failures on record", v)
	}
	wantAllowed(t, "failure after the block", g.fail(ip1))
	wantRefused(t, "check after that failure", g.check(ip1), limits.CodeIPBlocked, time.Hour)
	// A day and more later, the count is gone.
	c.Advance(26 * time.Hour)
	if v := g.check(ip1); !v.Allowed || v.Failures {
		t.Fatalf("check a day later: got %+v, want allowed without failures", v)
	}
	wantAllowed(t, "failure a day later", g.fail(ip1))
	wantAllowed(t, "check after it", g.check(ip1))
}

func testFloodDoesNotBlock(t *testing.T, g *guardT, c *Clock) {
	// A flood at one instant: ten failures are admitted, the rest are
	// refused and are no authentication attempts, so the address is not
	// blocked: a minute later its clients may try again.
	for i := range 10 {
		wantAllowed(t, fmt.Sprintf("attempt %d", i+1), g.attempt(ip1))
	}
	for i := 10; i < 110; i++ {
		wantRefused(t, fmt.Sprintf("attempt %d", i+1), g.attempt(ip1), limits.CodeTooManyFailedAttempts, time.Minute)
	}
	// Refused Fails (a request that was past Check when the window
	// filled) do not count towards the block either.
	for i := range 100 {
		wantRefused(t, fmt.Sprintf("refused failure %d", i+1), g.fail(ip1), limits.CodeTooManyFailedAttempts, time.Minute)
	}
	c.Advance(time.Minute)
	wantAllowed(t, "check a minute after the flood", g.check(ip1))
	wantAllowed(t, "failure a minute after the flood", g.fail(ip1))
}

func testBlockCountsAdmittedOnly(t *testing.T, g *guardT, c *Clock) {
	// Each minute: ten admitted failures, then a flood the guard refuses.
	// Nine minutes give 90 admitted failures among 990 attempts: no block.
	for m := range 9 {
		for i := range 10 {
			wantAllowed(t, fmt.Sprintf("minute %d, failure %d", m+1, i+1), g.attempt(ip1))
		}
		for range 100 {
			if v := g.attempt(ip1); v.Code != limits.CodeTooManyFailedAttempts {
				t.Fatalf("minute %d, flood: got %+v, want too_many_failed_attempts", m+1, v)
			}
		}
		c.Advance(time.Minute)
	}
	for i := range 9 {
		wantAllowed(t, fmt.Sprintf("admitted failure %d", 91+i), g.attempt(ip1))
	}
	wantAllowed(t, "check before the 100th admitted failure", g.check(ip1))
	wantAllowed(t, "the 100th admitted failure (answered 401)", g.fail(ip1))
	wantRefused(t, "check after it", g.check(ip1), limits.CodeIPBlocked, time.Hour)
}

func testAlertOnce(t *testing.T, g *guardT, c *Clock) {
	flood := func(n int) (alerts []int) {
		for i := range n {
			if g.attempt(ip1).Alert {
				alerts = append(alerts, i+1)
			}
		}
		return alerts
	}
	if a := flood(2000); len(a) != 1 || a[0] != 1000 {
		t.Fatalf("2000 attempts: alerts at attempts %v, want at 1000 only", a)
	}
	c.Advance(time.Hour)
	if a := flood(1000); len(a) != 0 {
		t.Fatalf("1000 more attempts within the day: alerts at %v, want none", a)
	}
	// A success resets the counts and the alert (not the block).
	g.succeed(ip1)
	if a := flood(1000); len(a) != 1 || a[0] != 1000 {
		t.Fatalf("1000 attempts after a success: alerts at attempts %v, want at 1000 only", a)
	}
	// A day later, an attack still going on alerts again.
	c.Advance(24*time.Hour + time.Hour)
	if a := flood(1000); len(a) != 1 || a[0] != 1000 {
		t.Fatalf("1000 attempts a day later: alerts at attempts %v, want at 1000 only", a)
	}
}

func testSucceedResets(t *testing.T, g *guardT, _ *Clock) {
	g.succeed(ip2) // an address with nothing on record
	for range 9 {
		g.fail(ip1)
	}
	g.succeed(ip1)
	if v := g.check(ip1); !v.Allowed || v.Failures {
		t.Fatalf("check after a success: got %+v, want allowed without failures", v)
	}
	for i := range 10 {
		wantAllowed(t, fmt.Sprintf("failure %d after the success", i+1), g.fail(ip1))
	}
	wantRefused(t, "11th failure after the success", g.fail(ip1), limits.CodeTooManyFailedAttempts, time.Minute)
	g.succeed(ip1)
	wantAllowed(t, "check after a second success", g.check(ip1))
}

func testSucceedKeepsBlock(t *testing.T, g *guardT, c *Clock) {
	g.sustain(c, ip1, 100)
	wantRefused(t, "after 100 failures", g.check(ip1), limits.CodeIPBlocked, time.Hour)
	g.succeed(ip1) // a request that was already past Check
	if v := g.check(ip1); v.Allowed || v.Code != limits.CodeIPBlocked {
		t.Fatalf("check after a success during the block: got %+v, want still blocked", v)
	}
	c.Advance(time.Hour)
	// The counts were reset: a failure after the block does not block.
	wantAllowed(t, "check after the block", g.check(ip1))
	wantAllowed(t, "failure after the block", g.fail(ip1))
	wantAllowed(t, "check after that failure", g.check(ip1))
}

func testDayWindow(t *testing.T, g *guardT, c *Clock) {
	rules := limits.GuardConfig{}
	rules.SetDefaults()
	start := c.Now()
	for i := range 99 {
		wantAllowed(t, fmt.Sprintf("failure %d", i+1), g.attempt(ip1))
		wantAllowed(t, fmt.Sprintf("failure %d of the other address", i+1), g.attempt(ip2))
		c.Advance(6 * time.Second)
	}
	// 23 hours later the 99 failures still count: one more blocks.
	c.Advance(23*time.Hour - c.Now().Sub(start))
	wantAllowed(t, "failure 23 hours later", g.attempt(ip1))
	wantRefused(t, "check after it", g.check(ip1), limits.CodeIPBlocked, time.Hour)
	// A full window and a bucket later they are gone.
	c.Advance(rules.DayWindow + rules.Bucket() - 23*time.Hour)
	wantAllowed(t, "failure a window later", g.attempt(ip2))
	wantAllowed(t, "check after it", g.check(ip2))
}

func testGuardConcurrent(t *testing.T, g *guardT, _ *Clock) {
	const workers, each = 64, 20
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		admitted, alerts int
		errs             []error
	)
	start := make(chan struct{})
	ip := netip.MustParseAddr(ip1)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				v, err := g.g.Fail(context.Background(), ip)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case v.Allowed:
					admitted++
				}
				if v.Alert {
					alerts++
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d concurrent failures returned an error, first: %v", len(errs), workers*each, errs[0])
	}
	if admitted != 10 || alerts != 1 {
		t.Fatalf("%d concurrent failures: %d admitted and %d alerts, want exactly 10 and 1", workers*each, admitted, alerts)
	}
	// Only the ten admitted failures count towards the block.
	wantRefused(t, "check after them", g.check(ip1), limits.CodeTooManyFailedAttempts, time.Minute)
}

func testGuardBounded(t *testing.T, open func(t *testing.T, setup GuardSetup) limits.Guard) {
	const maxEntries = 2000
	c := NewClock()
	g := &guardT{t: t, g: open(t, GuardSetup{Now: c.Now, MaxEntries: maxEntries})}
	sizer, ok := g.g.(Sizer)
	if !ok {
		t.Fatalf("an in-process guard must implement limitstest.Sizer")
	}
	if sizer.Cap() < maxEntries || sizer.Cap() > maxEntries*11/10 {
		t.Fatalf("Cap() = %d, want about %d", sizer.Cap(), maxEntries)
	}
	// Every address of one /64 is one entry.
	for i := range 5000 {
		g.fail(fmt.Sprintf("2001:db8:aa:bb:%x:%x::1", i>>8, i&0xff))
	}
	if n := sizer.Len(); n != 1 {
		t.Fatalf("5000 addresses of one /64 hold %d entries, want 1", n)
	}
	n := 0
	fill := func(count int) {
		for range count {
			g.fail(fmt.Sprintf("2001:db8:%x:%x::1", n>>16, n&0xffff))
			n++
		}
	}
	checkBoundedHeap(t, maxEntries, fill)
	runtime.KeepAlive(g) // measured with the guard alive
	if l := sizer.Len(); l > sizer.Cap() {
		t.Fatalf("after %d /64s: %d entries, more than Cap() = %d", n, l, sizer.Cap())
	}
}

func testGuardEvictsBlockedLast(t *testing.T, open func(t *testing.T, setup GuardSetup) limits.Guard) {
	const maxEntries = 256
	c := NewClock()
	g := &guardT{t: t, g: open(t, GuardSetup{Now: c.Now, MaxEntries: maxEntries})}
	g.sustain(c, ip1, 100)
	wantRefused(t, "blocked address", g.check(ip1), limits.CodeIPBlocked, time.Hour)
	// An attacker with many /64s fails from each to push the block out.
	for i := range 20 * maxEntries {
		g.fail(fmt.Sprintf("2001:db8:%x::1", i))
	}
	wantRefused(t, "blocked address after many others", g.check(ip1), limits.CodeIPBlocked, time.Hour)
}
