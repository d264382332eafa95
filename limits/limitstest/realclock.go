package limitstest

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/limits"
)

// CheckLimiterRealClock checks a limiter built on its default clock (the
// Redis adapter: the server's TIME): limits, remaining and reset agree with
// this machine's clock. l must hold no state for the key "tok_realclock".
func CheckLimiterRealClock(t *testing.T, l limits.Limiter) {
	t.Helper()
	lim := limits.PerMinute(2)
	before := time.Now()
	var last limits.Decision
	for i := range 3 {
		d, err := l.Allow(context.Background(), "tok_realclock", lim)
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		if want := i < 2; d.Allowed != want || d.Limit != 2 || d.Remaining != max(1-i, 0) {
			t.Fatalf("request %d: got %+v, want allowed=%v, limit 2, remaining %d", i+1, d, want, max(1-i, 0))
		}
		last = d
	}
	// Generous bounds: the store's clock may be a little off this one.
	if last.Reset.Before(before.Add(50*time.Second)) || last.Reset.After(time.Now().Add(70*time.Second)) {
		t.Fatalf("reset %v, want about a minute after %v", last.Reset, before)
	}
	if last.RetryAfter < 20*time.Second || last.RetryAfter > 30*time.Second {
		t.Fatalf("retry after %v, want about 30s", last.RetryAfter)
	}
}

// CheckGuardRealClock checks a guard built on its default clock: ten
// failures refuse the address for about a minute. g must hold no state for
// 192.0.2.77.
func CheckGuardRealClock(t *testing.T, g limits.Guard) {
	t.Helper()
	ctx := context.Background()
	ip := netip.MustParseAddr("192.0.2.77")
	for i := range 10 {
		v, err := g.Fail(ctx, ip)
		if err != nil {
			t.Fatalf("Fail: %v", err)
		}
		if !v.Allowed {
			t.Fatalf("failure %d: got %+v, want admitted", i+1, v)
		}
	}
	v, err := g.Check(ctx, ip)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if v.Allowed || v.Code != limits.CodeTooManyFailedAttempts || v.RetryAfter < 50*time.Second || v.RetryAfter > time.Minute {
		t.Fatalf("check after 10 failures: got %+v, want too_many_failed_attempts for about a minute", v)
	}
	if err := g.Succeed(ctx, ip); err != nil {
		t.Fatalf("Succeed: %v", err)
	}
	if v, err := g.Check(ctx, ip); err != nil || !v.Allowed {
		t.Fatalf("check after a success: got %+v, %v, want allowed", v, err)
	}
}
