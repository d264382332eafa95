package limits_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/limits/memory"
)

// The rate limit of a token and the headers of the answer.
func ExampleLimiter() {
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	limiter, err := memory.NewLimiter(memory.LimiterConfig{Now: now})
	if err != nil {
		panic(err)
	}
	limit, _ := limits.DefaultPlanLimits().For(domain.PlanAgency)
	for range 2 {
		d, err := limiter.Allow(context.Background(), "tok_123", limit)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v X-RateLimit-Limit=%d X-RateLimit-Remaining=%d X-RateLimit-Reset=%d\n",
			d.Allowed, d.Limit, d.Remaining, d.ResetUnix())
	}
	// Output:
	// allowed=true X-RateLimit-Limit=600 X-RateLimit-Remaining=599 X-RateLimit-Reset=1777636801
	// allowed=true X-RateLimit-Limit=600 X-RateLimit-Remaining=598 X-RateLimit-Reset=1777636801
}

// How a caller drives the guard around authentication.
func ExampleGuard() {
	guard, err := memory.NewGuard(memory.GuardConfig{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	ip := netip.MustParseAddr("203.0.113.7")
	authenticate := func(valid bool) string {
		v, err := guard.Check(ctx, ip)
		if err != nil {
			return "503 unavailable"
		}
		if !v.Allowed {
			return "429 " + v.Code
		}
		if valid {
			if v.Failures {
				_ = guard.Succeed(ctx, ip)
			}
			return "200"
		}
		v, err = guard.Fail(ctx, ip)
		if err != nil {
			return "503 unavailable"
		}
		// v.Alert: emit the alert (event, log line, notification).
		if !v.Allowed {
			return "429 " + v.Code
		}
		return "401 invalid_token"
	}
	for range 10 {
		authenticate(false)
	}
	fmt.Println(authenticate(false))
	// Even a valid token waits: the address is refused before any
	// credential is looked at.
	fmt.Println(authenticate(true))
	// Output:
	// 429 too_many_failed_attempts
	// 429 too_many_failed_attempts
}
