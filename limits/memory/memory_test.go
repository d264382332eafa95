package memory_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/limits/limitstest"
	"github.com/cgp-platform/cgp/limits/memory"
)

func TestLimiterContract(t *testing.T) {
	limitstest.RunLimiter(t, func(t *testing.T, s limitstest.LimiterSetup) limits.Limiter {
		l, err := memory.NewLimiter(memory.LimiterConfig{Now: s.Now, MaxKeys: s.MaxKeys})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}, limitstest.InProcess())
}

func TestGuardContract(t *testing.T) {
	limitstest.RunGuard(t, func(t *testing.T, s limitstest.GuardSetup) limits.Guard {
		g, err := memory.NewGuard(memory.GuardConfig{Rules: s.Rules, Now: s.Now, MaxEntries: s.MaxEntries})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}, limitstest.InProcess())
}

func TestGuardConfigRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  memory.GuardConfig
		want string
	}{
		{"negative entries", memory.GuardConfig{MaxEntries: -1}, "MaxEntries"},
		{"sub-millisecond window", memory.GuardConfig{Rules: limits.GuardConfig{Window: 1500 * time.Microsecond}}, "Window"},
		{"uneven buckets", memory.GuardConfig{Rules: limits.GuardConfig{DayWindow: time.Hour, DayBuckets: 7}}, "buckets"},
		{"window longer than the day", memory.GuardConfig{Rules: limits.GuardConfig{Window: 2 * time.Hour, DayWindow: time.Hour}}, "DayWindow"},
		{"negative threshold", memory.GuardConfig{Rules: limits.GuardConfig{BlockAt: -1}}, "BlockAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memory.NewGuard(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewGuard(%+v): error %v, want one naming %s", tc.cfg, err, tc.want)
			}
		})
	}
	if _, err := memory.NewLimiter(memory.LimiterConfig{MaxKeys: -1}); err == nil {
		t.Fatal("NewLimiter with negative MaxKeys: no error")
	}
}

func TestGuardRealClock(t *testing.T) {
	g, err := memory.NewGuard(memory.GuardConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Cap() != memory.DefaultMaxEntries {
		t.Fatalf("Cap() = %d, want %d", g.Cap(), memory.DefaultMaxEntries)
	}
	limitstest.CheckGuardRealClock(t, g)
}

func TestLimiterRealClock(t *testing.T) {
	l, err := memory.NewLimiter(memory.LimiterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	limitstest.CheckLimiterRealClock(t, l)
}

func BenchmarkLimiter(b *testing.B) {
	limitstest.BenchLimiter(b, func(b *testing.B) limits.Limiter {
		l, err := memory.NewLimiter(memory.LimiterConfig{})
		if err != nil {
			b.Fatal(err)
		}
		return l
	})
}

func BenchmarkGuard(b *testing.B) {
	limitstest.BenchGuard(b, func(b *testing.B) limits.Guard {
		g, err := memory.NewGuard(memory.GuardConfig{})
		if err != nil {
			b.Fatal(err)
		}
		return g
	})
}
