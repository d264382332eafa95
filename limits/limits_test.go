package limits_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/limits"
)

func TestLimitNormalize(t *testing.T) {
	for _, tc := range []struct {
		in   limits.Limit
		want limits.Limit
		err  bool
	}{
		{in: limits.PerMinute(600), want: limits.Limit{Rate: 600, Period: time.Minute, Burst: 600}},
		{in: limits.Limit{Rate: 10}, want: limits.Limit{Rate: 10, Period: time.Minute, Burst: 10}},
		{in: limits.Limit{Rate: 10, Period: time.Second, Burst: 3}, want: limits.Limit{Rate: 10, Period: time.Second, Burst: 3}},
		{in: limits.Limit{}, err: true},
		{in: limits.Limit{Rate: -5}, err: true},
		{in: limits.Limit{Rate: 5, Burst: -1}, err: true},
		{in: limits.Limit{Rate: 5, Period: -time.Minute}, err: true},
		{in: limits.Limit{Rate: 1e9, Period: time.Second}, err: true},
	} {
		got, err := tc.in.Normalize()
		if tc.err {
			if !errors.Is(err, limits.ErrInvalidLimit) {
				t.Errorf("Normalize(%+v): error %v, want ErrInvalidLimit", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%+v) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestPlanLimits(t *testing.T) {
	p := limits.DefaultPlanLimits()
	for plan, want := range map[domain.Plan]int{domain.PlanAgency: 600, domain.PlanEnterprise: 3000} {
		if l, ok := p.For(plan); !ok || l.Rate != want || l.Period != time.Minute {
			t.Errorf("%s: %+v, %v; want %d per minute", plan, l, ok, want)
		}
	}
	if l, ok := p.For(domain.PlanGrowth); ok {
		t.Errorf("growth has a limit %+v; it has no admin API", l)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	p[domain.PlanAgency] = limits.Limit{}
	p[domain.PlanEnterprise] = limits.Limit{Rate: -1}
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "agency") || !strings.Contains(err.Error(), "enterprise") {
		t.Errorf("Validate with two bad limits: %v, want both named", err)
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7/32"},
		{"::ffff:203.0.113.7", "203.0.113.7/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::9%eth0", "2001:db8:1:2::/64"},
		{"::1", "::/64"},
	} {
		if got := limits.ClientKey(netip.MustParseAddr(tc.ip)); got.String() != tc.want {
			t.Errorf("ClientKey(%s) = %s, want %s", tc.ip, got, tc.want)
		}
	}
	if got := limits.ClientKey(netip.Addr{}); got != (netip.Prefix{}) {
		t.Errorf("ClientKey(invalid) = %v, want the zero Prefix", got)
	}
}

func TestGuardConfig(t *testing.T) {
	var c limits.GuardConfig
	c.SetDefaults()
	want := limits.GuardConfig{FailuresPerWindow: 10, Window: time.Minute, BlockAt: 100, BlockFor: time.Hour,
		AlertAt: 1000, DayWindow: 24 * time.Hour, DayBuckets: 24}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.Bucket() != time.Hour {
		t.Fatalf("Bucket() = %v, want 1h", c.Bucket())
	}
	bad := limits.GuardConfig{FailuresPerWindow: 2000, Window: time.Microsecond, BlockAt: -1, BlockFor: time.Hour,
		AlertAt: 1, DayWindow: time.Hour, DayBuckets: 7}
	err := bad.Validate()
	for _, name := range []string{"FailuresPerWindow", "Window", "BlockAt", "DayWindow"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate(%+v) = %v, want %s named", bad, err, name)
		}
	}
}

func TestResetUnix(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if got := (limits.Decision{Reset: at}).ResetUnix(); got != at.Unix() {
		t.Errorf("whole second: %d, want %d", got, at.Unix())
	}
	if got := (limits.Decision{Reset: at.Add(time.Nanosecond)}).ResetUnix(); got != at.Unix()+1 {
		t.Errorf("a nanosecond past: %d, want %d", got, at.Unix()+1)
	}
}

func TestUnavailable(t *testing.T) {
	cause := errors.New("connection refused")
	err := limits.Unavailable("rate-limit store", cause)
	if domain.ErrorCode(err) != domain.CodeUnavailable || !errors.Is(err, cause) {
		t.Fatalf("Unavailable: %v, want code unavailable wrapping the cause", err)
	}
}
