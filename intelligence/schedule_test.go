package intelligence_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/intelligence"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	intelrm "github.com/cgp-platform/cgp/projections/intelligence"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

func TestParseDailyAt(t *testing.T) {
	for s, want := range map[string]time.Duration{"00:00": 0, "02:00": 2 * time.Hour, "23:59": 23*time.Hour + 59*time.Minute, "09:05": 9*time.Hour + 5*time.Minute} {
		at, on, err := intelligence.ParseDailyAt(s)
		if err != nil || !on || at != want {
			t.Errorf("%q = %v %v %v, want %v", s, at, on, err, want)
		}
	}
	for _, s := range []string{"off", ""} {
		if _, on, err := intelligence.ParseDailyAt(s); err != nil || on {
			t.Errorf("%q: on %v, %v", s, on, err)
		}
	}
	for _, s := range []string{"24:00", "2:00", "02:60", "0200", "02:0", "+1:00", "02:-1", "ab:cd", "02:00Z", "OFF", " 02:00"} {
		if _, _, err := intelligence.ParseDailyAt(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// FuzzParseDailyAt: what is accepted is a time of day that formats back to
// the input.
func FuzzParseDailyAt(f *testing.F) {
	for _, s := range []string{"02:00", "23:59", "24:00", "off", "", "+1:+1", "0x:10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, on, err := intelligence.ParseDailyAt(s)
		if err != nil || !on {
			if at != 0 || (err == nil && s != "" && s != "off") {
				t.Fatalf("%q: %v %v %v", s, at, on, err)
			}
			return
		}
		if at < 0 || at >= 24*time.Hour || at%time.Minute != 0 {
			t.Fatalf("%q: %v", s, at)
		}
		if back := fmt.Sprintf("%02d:%02d", int(at.Hours()), int(at.Minutes())%60); back != s {
			t.Fatalf("%q parsed to %v, formats back to %q", s, at, back)
		}
	})
}

// clock is the tests' settable clock, shared by the command handler and
// the scheduler.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// schedEnv is a core and its read side (tenancy, customers, commerce,
// intelligence) with installed shops.
type schedEnv struct {
	t     *testing.T
	core  *testenv.Core
	read  *testenv.ReadSide
	clock *clock
	logs  *strings.Builder
	mu    sync.Mutex
}

func newSchedEnv(t *testing.T, start time.Time) *schedEnv {
	t.Helper()
	c := &clock{now: start}
	core := testenv.New(t, c.Now)
	read := core.ReadSide(t, tenancy.Projector(core.Codec, nil), customers.Projector(core.Codec, nil), commerce.Projector(core.Codec),
		intelrm.Projector(core.Codec))
	return &schedEnv{t: t, core: core, read: read, clock: c, logs: &strings.Builder{}}
}

var testMeta = commands.Meta{Actor: "test", Source: "cli"}

func (e *schedEnv) shop(domainName string) string {
	e.t.Helper()
	ctx := context.Background()
	acc, err := e.core.Commands.CreateAccount(ctx, commands.CreateAccount{Name: "Account of " + domainName, Plan: "agency"}, testMeta)
	if err != nil {
		e.t.Fatal(err)
	}
	shop, err := e.core.Commands.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: domainName, Plan: "agency",
		WebhookSecret: "0123456789abcdef"}, testMeta)
	if err != nil {
		e.t.Fatal(err)
	}
	return shop.ID
}

func (e *schedEnv) uninstall(shop string) {
	e.t.Helper()
	if _, err := e.core.Commands.UninstallApp(context.Background(), commands.UninstallApp{Delivered: commands.Delivered{ShopID: shop,
		Topic: "app/uninstalled", EventID: uuid.New()}}, testMeta); err != nil {
		e.t.Fatal(err)
	}
}

func (e *schedEnv) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs.Write(p)
}

func (e *schedEnv) logged() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs.String()
}

// scheduler is a Scheduler of the environment, as a server builds it: a
// new one is a restarted (or another) server.
func (e *schedEnv) scheduler() *intelligence.Scheduler {
	db := e.read.DB()
	return &intelligence.Scheduler{
		Runner: &intelligence.Runner{Commands: e.core.Commands, Customers: customers.NewQueries(db), Commerce: commerce.NewQueries(db),
			Intelligence: intelrm.NewQueries(db), Now: e.clock.Now},
		Shops: tenancy.NewQueries(db),
		At:    2 * time.Hour,
		CatchUp: func(ctx context.Context) error {
			head, err := e.core.Log.HeadPosition(ctx)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, testenv.WaitTimeout)
			defer cancel()
			return e.read.Runtime.WaitFor(ctx, head)
		},
		Logger: zerolog.New(e),
	}
}

func (e *schedEnv) due(s *intelligence.Scheduler, now time.Time) []string {
	e.t.Helper()
	if err := s.CatchUp(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	got, err := s.Due(context.Background(), now)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *schedEnv) runDue(s *intelligence.Scheduler, now time.Time) intelligence.Pass {
	e.t.Helper()
	e.clock.set(now)
	p, err := s.RunDue(context.Background(), now)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range p.Ran {
		if r.Err != nil {
			e.t.Fatalf("run of %s: %v", r.Shop, r.Err)
		}
	}
	return p
}

func (e *schedEnv) run(shop, day string) domain.DecisionRun {
	e.t.Helper()
	r, err := e.core.Commands.DecisionRun(context.Background(), shop, domain.ScheduledRunID(shop, day))
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// starts counts the DecisionRunStarted events of the log per shop.
func (e *schedEnv) starts() map[string]int {
	e.t.Helper()
	evs, err := e.core.Log.ReadAll(context.Background(), 0, 100_000)
	if err != nil {
		e.t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		if ev.Type == "DecisionRunStarted" {
			n[ev.ShopID]++
		}
	}
	return n
}

func ranShops(p intelligence.Pass) []string {
	var out []string
	for _, r := range p.Ran {
		out = append(out, r.Shop)
	}
	return out
}

func sorted(s ...string) []string { return slices.Sorted(slices.Values(s)) }

var day0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func TestSchedulerDue(t *testing.T) {
	e := newSchedEnv(t, day0)
	a, b, gone := e.shop("a.example.com"), e.shop("b.example.com"), e.shop("gone.example.com")
	e.uninstall(gone)
	s := e.scheduler()

	// Before the daily time nothing is due; from it every installed shop
	// (the uninstalled one is skipped).
	if got := e.due(s, day0.Add(time.Hour+59*time.Minute)); len(got) != 0 {
		t.Fatalf("due at 01:59: %v", got)
	}
	if got := e.due(s, day0.Add(2*time.Hour)); !slices.Equal(got, sorted(a, b)) {
		t.Fatalf("due at 02:00: %v, want %v", got, sorted(a, b))
	}
	p := e.runDue(s, day0.Add(2*time.Hour))
	if !slices.Equal(ranShops(p), sorted(a, b)) || len(p.Elsewhere) != 0 || len(p.Abandoned) != 0 {
		t.Fatalf("first pass: %+v", p)
	}
	for _, r := range p.Ran {
		if r.Status != domain.RunCompleted || r.RunID != domain.ScheduledRunID(r.Shop, "2026-11-20") || r.Duration <= 0 {
			t.Errorf("ran %+v", r)
		}
		if st := e.run(r.Shop, "2026-11-20"); st.Status != domain.RunCompleted || st.Trigger != domain.TriggerSchedule {
			t.Errorf("run of %s: %+v", r.Shop, st)
		}
	}
	for _, want := range []string{`"shop_id":"` + a + `"`, `"run_id":"` + domain.ScheduledRunID(a, "2026-11-20") + `"`, `"recommendations":0`, `"duration_ms":`} {
		if !strings.Contains(e.logged(), want) {
			t.Errorf("log lacks %s: %s", want, e.logged())
		}
	}

	// Already ran today: nothing is due, for this scheduler or a restarted
	// one (which learns it from the log), later that day.
	for _, sch := range []*intelligence.Scheduler{s, e.scheduler()} {
		if got := e.due(sch, day0.Add(23*time.Hour)); len(got) != 0 {
			t.Fatalf("due again the same day: %v", got)
		}
		if p := e.runDue(sch, day0.Add(23*time.Hour)); len(p.Ran)+len(p.Elsewhere)+len(p.Abandoned) != 0 {
			t.Fatalf("second pass the same day: %+v", p)
		}
	}
	// The next day: due again from its daily time only.
	if got := e.due(s, day0.Add(25*time.Hour)); len(got) != 0 {
		t.Fatalf("due next day at 01:00: %v", got)
	}
	if got := e.due(s, day0.Add(26*time.Hour)); !slices.Equal(got, sorted(a, b)) {
		t.Fatalf("due next day at 02:00: %v", got)
	}
	if n := e.starts(); n[a] != 1 || n[b] != 1 || n[gone] != 0 {
		t.Fatalf("starts per shop: %v", n)
	}
}

// TestSchedulerCatchUp: a server down over several daily times runs each
// shop once at start-up when the day's time has passed (not one run per
// missed day), and not before it.
func TestSchedulerCatchUp(t *testing.T) {
	e := newSchedEnv(t, day0)
	a := e.shop("a.example.com")
	e.runDue(e.scheduler(), day0.Add(3*time.Hour)) // the last run before the downtime
	// Back three days later before the daily time: nothing yet.
	late := day0.AddDate(0, 0, 3)
	if got := e.due(e.scheduler(), late.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("due before the daily time after downtime: %v", got)
	}
	// Back three days later after it: the shop runs at once, once.
	s := e.scheduler()
	if p := e.runDue(s, late.Add(9*time.Hour)); !slices.Equal(ranShops(p), []string{a}) {
		t.Fatalf("catch-up pass: %+v", p)
	}
	if p := e.runDue(s, late.Add(9*time.Hour+time.Minute)); len(p.Ran) != 0 {
		t.Fatalf("second catch-up pass: %+v", p)
	}
	if n := e.starts(); n[a] != 2 {
		t.Fatalf("%d runs of the shop, want 2 (day 0 and the catch-up)", n[a])
	}
	if e.run(a, "2026-11-23").Status != domain.RunCompleted || e.run(a, "2026-11-21").Status != "" {
		t.Fatal("the catch-up run is not the day's, or a missed day was back-filled")
	}
	// A shop created after the daily time runs the same day.
	b := e.shop("b.example.com")
	if p := e.runDue(s, late.Add(15*time.Hour)); !slices.Equal(ranShops(p), []string{b}) {
		t.Fatalf("pass after a new install: %+v", p)
	}
}

// TestSchedulerStaleRun: a run started but never finished (its server
// stopped mid-run) blocks the day's run (not re-run), and once
// StaleAfter has passed since its start it is recorded as failed, once;
// the next day runs as usual.
func TestSchedulerStaleRun(t *testing.T) {
	e := newSchedEnv(t, day0.Add(2*time.Hour))
	a := e.shop("a.example.com")
	runID := domain.ScheduledRunID(a, "2026-11-20")
	if _, _, err := e.core.Commands.StartDecisionRun(context.Background(), commands.StartDecisionRun{ShopID: a, Trigger: domain.TriggerSchedule,
		Day: "2026-11-20"}, testMeta); err != nil { // the crashed server's start
		t.Fatal(err)
	}
	s := e.scheduler()
	if p := e.runDue(s, day0.Add(2*time.Hour+30*time.Minute)); len(p.Ran)+len(p.Elsewhere)+len(p.Abandoned) != 0 {
		t.Fatalf("pass while the run may still be running: %+v", p)
	}
	if st := e.run(a, "2026-11-20"); st.Status != domain.RunRunning {
		t.Fatalf("run: %+v", st)
	}
	p := e.runDue(s, day0.Add(3*time.Hour))
	if !slices.Equal(p.Abandoned, []string{runID}) || len(p.Ran) != 0 {
		t.Fatalf("pass after StaleAfter: %+v", p)
	}
	if st := e.run(a, "2026-11-20"); st.Status != domain.RunFailed {
		t.Fatalf("stale run: %+v", st)
	}
	e.read.WaitFor(t, mustHead(t, e))
	got, err := intelrm.NewQueries(e.read.DB()).Run(context.Background(), a, runID)
	if err != nil || got.Reason != intelligence.StaleRunReason || got.Trigger != domain.TriggerSchedule {
		t.Fatalf("stale run read back: %+v %v", got, err)
	}
	if p := e.runDue(e.scheduler(), day0.Add(4*time.Hour)); len(p.Ran)+len(p.Abandoned) != 0 {
		t.Fatalf("pass after the stale run failed: %+v", p)
	}
	if p := e.runDue(s, day0.Add(26*time.Hour)); !slices.Equal(ranShops(p), []string{a}) || len(p.Abandoned) != 0 {
		t.Fatalf("next day: %+v", p)
	}

	// Yesterday's run left running is found after midnight too.
	b := e.shop("b.example.com")
	if _, _, err := e.core.Commands.StartDecisionRun(context.Background(), commands.StartDecisionRun{ShopID: b, Trigger: domain.TriggerSchedule,
		Day: "2026-11-21"}, testMeta); err != nil {
		t.Fatal(err)
	}
	if p := e.runDue(e.scheduler(), day0.Add(49*time.Hour)); !slices.Equal(p.Abandoned, []string{domain.ScheduledRunID(b, "2026-11-21")}) {
		t.Fatalf("pass after midnight: %+v", p)
	}
}

func mustHead(t *testing.T, e *schedEnv) uint64 {
	t.Helper()
	h, err := e.core.Log.HeadPosition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSchedulersRacing: two servers' schedulers on one log pass at the
// same moment: every shop runs once, no start is recorded twice, and the
// scheduler that lost a shop computed nothing for it.
func TestSchedulersRacing(t *testing.T) {
	e := newSchedEnv(t, day0.Add(2*time.Hour))
	var shops []string
	for i := range 6 {
		shops = append(shops, e.shop(fmt.Sprintf("race-%d.example.com", i)))
	}
	one, two := e.scheduler(), e.scheduler()
	var wg sync.WaitGroup
	passes := make([]intelligence.Pass, 2)
	for i, s := range []*intelligence.Scheduler{one, two} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.RunDue(context.Background(), day0.Add(2*time.Hour))
			if err != nil {
				t.Error(err)
			}
			passes[i] = p
		}()
	}
	wg.Wait()
	t.Logf("ran %d+%d, elsewhere %d+%d", len(passes[0].Ran), len(passes[1].Ran), len(passes[0].Elsewhere), len(passes[1].Elsewhere))
	ran := append(ranShops(passes[0]), ranShops(passes[1])...)
	if !slices.Equal(sorted(ran...), sorted(shops...)) {
		t.Fatalf("shops run by the two schedulers: %v, want each of %v once", ran, shops)
	}
	for i, p := range passes {
		for _, r := range p.Ran {
			if r.Err != nil || r.Status != domain.RunCompleted {
				t.Errorf("scheduler %d: %+v", i, r)
			}
		}
		if len(p.Ran)+len(p.Elsewhere) > len(shops) {
			t.Errorf("scheduler %d: %+v", i, p)
		}
	}
	n := e.starts()
	for _, s := range shops {
		if n[s] != 1 {
			t.Fatalf("starts per shop: %v", n)
		}
	}
	completed := 0
	evs, _ := e.core.Log.ReadAll(context.Background(), 0, 100_000)
	for _, ev := range evs {
		if ev.Type == "DecisionRunCompleted" {
			completed++
		}
	}
	if completed != len(shops) {
		t.Fatalf("%d runs completed, want %d", completed, len(shops))
	}
}

// TestSchedulerStopsOnContext: a pass whose context ended runs no shop.
func TestSchedulerStopsOnContext(t *testing.T) {
	e := newSchedEnv(t, day0.Add(2*time.Hour))
	e.shop("a.example.com")
	s := e.scheduler()
	s.CatchUp = nil
	e.read.WaitFor(t, mustHead(t, e))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := s.RunDue(ctx, day0.Add(2*time.Hour))
	if err == nil || len(p.Ran) != 0 {
		t.Fatalf("cancelled pass: %+v %v", p, err)
	}
	if n := e.starts(); len(n) != 0 {
		t.Fatalf("starts: %v", n)
	}
}
