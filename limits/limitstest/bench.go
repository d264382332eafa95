package limitstest

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/cgp-platform/cgp/limits"
)

// BenchLimiter benchmarks Allow on the limiters open returns (on the real
// clock): one key, keys spread over many tokens, and in parallel.
func BenchLimiter(b *testing.B, open func(b *testing.B) limits.Limiter) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("tok_%012d", i)
	}
	lim := limits.PerMinute(limits.DefaultEnterprisePerMinute)
	b.Run("OneKey", func(b *testing.B) {
		l := open(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Allow(context.Background(), keys[0], lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ManyKeys", func(b *testing.B) {
		l := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := l.Allow(context.Background(), keys[i%len(keys)], lim); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		l := open(b)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				if _, err := l.Allow(context.Background(), keys[int(i)%len(keys)], lim); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchGuard benchmarks the guard on the guards open returns (on the real
// clock): Check for clean addresses (every authenticated request), Check
// and Fail for an address being refused (a flood), Fail for fresh
// addresses (an attacker with many addresses).
func BenchGuard(b *testing.B, open func(b *testing.B) limits.Guard) {
	ctx := context.Background()
	addrs := make([]netip.Addr, 10_000)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
	}
	attacker := netip.MustParseAddr("203.0.113.9")
	b.Run("CheckClean", func(b *testing.B) {
		g := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := g.Check(ctx, addrs[i%len(addrs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("CheckRefused", func(b *testing.B) {
		g := open(b)
		for range 10 {
			if _, err := g.Fail(ctx, attacker); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.Check(ctx, attacker); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FailRefused", func(b *testing.B) {
		g := open(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.Fail(ctx, attacker); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FailManyAddresses", func(b *testing.B) {
		g := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 15: 1})
			if _, err := g.Fail(ctx, a); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("CheckParallel", func(b *testing.B) {
		g := open(b)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				if _, err := g.Check(ctx, addrs[int(i)%len(addrs)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
