package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/lastuse"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/limits/memory"
)

// flaky is the real SQLite store whose saves fail while fail is set.
type flaky struct {
	*lastuse.Store
	fail  atomic.Bool
	saves atomic.Int64
}

var errInjected = errors.New("injected save failure")

func (f *flaky) SaveUses(ctx context.Context, uses []auth.Use, counts []auth.RequestCount) error {
	f.saves.Add(1)
	if f.fail.Load() {
		return errInjected
	}
	return f.Store.SaveUses(ctx, uses, counts)
}

func openStore(t testing.TB) *flaky {
	t.Helper()
	s, err := lastuse.Open(filepath.Join(t.TempDir(), "lastuse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &flaky{Store: s}
}

// requests returns the requests per token of shop in period, as usage reads them.
func requests(t testing.TB, l *auth.LastUsed, s auth.UseReader, shop string, p auth.Period) map[string]int64 {
	t.Helper()
	us, err := l.ShopUsage(context.Background(), s, shop, p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, u := range us {
		out[u.TokenID] = u.Requests
	}
	return out
}

func TestPeriod(t *testing.T) {
	p := auth.PeriodOf(time.Date(2026, 12, 31, 23, 59, 59, 0, time.FixedZone("x", -3600)))
	if p != 202701 || p.String() != "2027-01" {
		t.Fatalf("period of 2026-12-31T23:59:59-01:00: %d %s", p, p)
	}
	if !p.Start().Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || !p.End().Equal(time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("start %v end %v", p.Start(), p.End())
	}
	if auth.PeriodOf(p.End()) != 202702 || auth.PeriodOf(p.End().Add(-time.Nanosecond)) != p {
		t.Fatal("period bounds")
	}
}

// Many goroutines count at once, flushes run meanwhile: every read of the
// usage is between what was counted before it started and after it ended
// (a batch being flushed is never missed nor read twice), and the final
// totals are exact, before and after the last flush.
func TestCountConcurrentExact(t *testing.T) {
	l, s := auth.NewLastUsed(), openStore(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const workers, each = 16, 500
	var counted atomic.Int64 // requests of shop_a in November counted so far
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := fmt.Sprintf("tok_%d", g%4)
			for i := 0; i < each; i++ {
				l.Count("shop_a", tok, now)
				counted.Add(1)
				l.Count("shop_b", tok, now)                   // another shop
				l.Count("shop_a", tok, now.AddDate(0, -1, 0)) // another period
				l.Record(tok, now.Add(time.Duration(i)*time.Second), netip.MustParseAddr("192.0.2.1"))
			}
		}()
	}
	stop := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				flushed <- nil
				return
			default:
			}
			if err := l.Flush(context.Background(), s); err != nil {
				flushed <- err
				return
			}
		}
	}()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for counted.Load() < workers*each {
			before := counted.Load()
			var sum int64
			for _, n := range requests(t, l, s, "shop_a", 202611) {
				sum += n
			}
			// A worker increments counted just after it counts: at most
			// one request per worker is counted but not yet in after.
			after := counted.Load() + workers
			if sum < before || sum > after {
				t.Errorf("read %d requests while %d to %d were counted", sum, before, after)
				return
			}
		}
	}()
	wg.Wait()
	<-readDone
	close(stop)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		for shop, p := range map[string]auth.Period{"shop_a": 202611, "shop_b": 202611} {
			got := requests(t, l, s, shop, p)
			for i := 0; i < 4; i++ {
				if n := got[fmt.Sprintf("tok_%d", i)]; n != workers/4*each {
					t.Errorf("%s: %s tok_%d in %d: %d, want %d", when, shop, i, p, n, workers/4*each)
				}
			}
		}
		if got := requests(t, l, s, "shop_a", 202610); len(got) != 4 || got["tok_0"] != workers/4*each {
			t.Errorf("%s: October %v", when, got)
		}
		if got := requests(t, l, s, "shop_b", 202610); len(got) != 0 {
			t.Errorf("%s: shop_b October %v", when, got)
		}
	}
	check("pending")
	if err := l.Flush(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	// Everything is in the store now: a fresh recorder reads the same.
	if got := requests(t, auth.NewLastUsed(), s, "shop_a", 202611); got["tok_3"] != workers/4*each {
		t.Errorf("stored only: %v", got)
	}
	us, _ := l.ShopUsage(context.Background(), s, "shop_a", 202611)
	if want := now.Add((each - 1) * time.Second); !us[0].LastUsedAt.Equal(want) {
		t.Errorf("last used %v, want %v", us[0].LastUsedAt, want)
	}
}

// A failed flush puts the counts back: the next successful one saves
// them once, with what was counted meanwhile; reads never lose them.
func TestFlushFailurePutsCountsBack(t *testing.T) {
	l, s := auth.NewLastUsed(), openStore(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		l.Count("shop_a", "tok_a", now)
	}
	l.Record("tok_a", now, netip.Addr{})
	s.fail.Store(true)
	if err := l.Flush(context.Background(), s); !errors.Is(err, errInjected) {
		t.Fatalf("flush: %v", err)
	}
	l.Count("shop_a", "tok_a", now)
	if got := requests(t, l, s, "shop_a", 202611)["tok_a"]; got != 4 {
		t.Fatalf("after a failed flush: %d, want 4", got)
	}
	if err := l.Flush(context.Background(), s); !errors.Is(err, errInjected) {
		t.Fatalf("second flush: %v", err)
	}
	s.fail.Store(false)
	if err := l.Flush(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Store.RequestCounts(context.Background(), "shop_a", 202611); got["tok_a"] != 4 {
		t.Fatalf("stored %v, want tok_a 4", got)
	}
	if u, ok, _ := s.Store.Get(context.Background(), "tok_a"); !ok || !u.At.Equal(now) {
		t.Fatalf("last use %v %v", u, ok)
	}
	// Nothing is left pending: another flush saves nothing more.
	saves := s.saves.Load()
	if err := l.Flush(context.Background(), s); err != nil || s.saves.Load() != saves {
		t.Fatalf("empty flush: %v, %d saves", err, s.saves.Load()-saves)
	}
	if got := requests(t, l, s, "shop_a", 202611)["tok_a"]; got != 4 {
		t.Fatalf("after the flush: %d, want 4", got)
	}
}

// Run's last flush on shutdown saves what was counted.
func TestRunFlushesOnShutdown(t *testing.T) {
	l, s := auth.NewLastUsed(), openStore(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l.Count("shop_a", "tok_a", now)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx, s, time.Hour, func(err error) { t.Error(err) }); close(done) }()
	cancel()
	<-done
	if got, _ := s.Store.RequestCounts(context.Background(), "shop_a", 202611); got["tok_a"] != 1 {
		t.Fatalf("stored %v after shutdown", got)
	}
}

// Only admitted requests count: a 403 for the scope and a 429 for the
// rate limit do not (though the 403s, being authenticated, use the
// token's rate-limit budget).
func TestAdmittedRequestsCount(t *testing.T) {
	raw, _ := domain.NewAdminToken("live")
	limiter, err := memory.NewLimiter(memory.LimiterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := auth.New(auth.Config{
		Tokens: tokens{domain.HashToken(raw): {ID: "tok_1", ShopID: "shop_1", Hash: domain.HashToken(raw),
			Scopes: []domain.Scope{"customers:read"}, ShopPlan: domain.PlanAgency}},
		Limits: limiter, Plans: limits.PlanLimits{domain.PlanAgency: limits.PerMinute(3)},
		Now: func() time.Time { return now },
	})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
	call := func(h http.Handler) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+raw)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	var got []int
	for i := 0; i < 2; i++ {
		got = append(got, call(a.Require("orders:read", ok)))
	}
	for i := 0; i < 4; i++ {
		got = append(got, call(a.Require("customers:read", ok)))
	}
	if fmt.Sprint(got) != "[403 403 204 429 429 429]" {
		t.Fatalf("statuses %v", got)
	}
	s := openStore(t)
	if n := requests(t, a.LastUsed, s, "shop_1", 202611)["tok_1"]; n != 1 {
		t.Fatalf("counted %d requests, want the 1 admitted", n)
	}
	if lim, ok := a.PlanLimit(domain.PlanAgency); !ok || lim.Rate != 3 {
		t.Fatalf("agency limit %v %v", lim, ok)
	}
	if _, ok := a.PlanLimit(domain.PlanPro); ok {
		t.Fatal("pro has no admin API, so no limit")
	}
}

// Counting a request of a token already counted this period allocates
// nothing, also after a flush (the maps are cleared, not replaced).
func TestCountAllocationFree(t *testing.T) {
	l, s := auth.NewLastUsed(), openStore(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ip := netip.MustParseAddr("192.0.2.1")
	l.Count("shop_a", "tok_a", now)
	l.Record("tok_a", now, ip)
	if err := l.Flush(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		l.Count("shop_a", "tok_a", now)
		l.Record("tok_a", now, ip)
	}); n != 0 {
		t.Fatalf("%v allocations per counted request", n)
	}
}

func BenchmarkCount(b *testing.B) {
	l := auth.NewLastUsed()
	now := time.Now()
	ip := netip.MustParseAddr("192.0.2.1")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l.Record("tok_a", now, ip)
		l.Count("shop_a", "tok_a", now)
	}
}

func BenchmarkCountParallel(b *testing.B) {
	l := auth.NewLastUsed()
	now := time.Now()
	ip := netip.MustParseAddr("192.0.2.1")
	toks := make([]string, 64)
	for i := range toks {
		toks[i] = fmt.Sprintf("tok_%d", i)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		tok := toks[next.Add(1)%int64(len(toks))]
		for pb.Next() {
			l.Record(tok, now, ip)
			l.Count("shop_a", tok, now)
		}
	})
}
