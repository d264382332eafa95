package projections_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/eventlog"
	eventsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

const waitLimit = 15 * time.Second

// secret is put in every payload; no log line may contain it.
const secret = "secret-payload-do-not-log"

type env struct {
	dir   string
	log   *eventsqlite.Log
	store *rmsqlite.Store
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	l, err := eventsqlite.Open(eventsqlite.Config{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		t.Fatalf("open event log: %v", err)
	}
	e := &env{dir: dir, log: l}
	e.store = e.openStore(t)
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close event log: %v", err)
		}
	})
	return e
}

func (e *env) openStore(t testing.TB) *rmsqlite.Store {
	t.Helper()
	s, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(e.dir, "readmodels.db")})
	if err != nil {
		t.Fatalf("open read-model store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// add appends one event per type to stream and returns the last position.
func (e *env) add(t testing.TB, stream string, types ...string) eventlog.Position {
	t.Helper()
	var last eventlog.Position
	for _, typ := range types {
		res, err := e.log.Append(context.Background(), stream, eventlog.Any(), eventlog.EventData{
			ID: uuid.New(), Type: typ, SchemaVersion: 1, ShopID: "shop_1",
			OccurredAt: time.Now().UTC(), Data: []byte(typ + ":" + secret),
		})
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		last = res.Position
	}
	return last
}

// syncBuffer is a log sink safe for the runtime's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	rt   *projections.Runtime
	reg  *prometheus.Registry
	logs *syncBuffer
}

func newRuntime(t testing.TB, e *env, store readmodel.Store, ps ...projections.Projector) *harness {
	t.Helper()
	return newRuntimeWith(t, e, store, nil, ps...)
}

// newRuntimeWith lets tweak change the test configuration.
func newRuntimeWith(t testing.TB, e *env, store readmodel.Store, tweak func(*projections.Config), ps ...projections.Projector) *harness {
	t.Helper()
	h := &harness{reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	cfg := projections.Config{
		Log:                  e.log,
		Store:                store,
		Logger:               zerolog.New(h.logs).Level(zerolog.DebugLevel),
		Registry:             h.reg,
		MaxRetries:           2,
		RetryInitialInterval: time.Millisecond,
		RetryMaxInterval:     5 * time.Millisecond,
		RedeliveryBackoff:    5 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	rt, err := projections.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, p := range ps {
		if err := rt.Register(p); err != nil {
			t.Fatalf("Register(%s): %v", p.Name, err)
		}
	}
	h.rt = rt
	return h
}

// start runs the runtime until the test ends (or stop is called) and waits
// until it runs.
func (h *harness) start(t testing.TB) (stop func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.rt.Run(context.Background()) }()
	select {
	case <-h.rt.Running():
	case err := <-done:
		t.Fatalf("Run returned before running: %v", err)
	case <-time.After(waitLimit):
		t.Fatal("runtime not running within the deadline")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := h.rt.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(waitLimit):
				t.Error("Run still running after Close returned")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (h *harness) waitFor(t testing.TB, pos eventlog.Position, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.rt.WaitFor(ctx, pos, names...); err != nil {
		t.Logf("logs:\n%s", h.logs)
		t.Fatalf("WaitFor(%d, %v): %v", pos, names, err)
	}
}

// itemsProjector keeps one row per ItemAdded event and counts its calls.
func itemsProjector(name string, calls *atomic.Int64) projections.Projector {
	return projections.Projector{
		Name: name,
		Migrations: []readmodel.Migration{{Version: 1, SQL: fmt.Sprintf(
			`CREATE TABLE %s (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, type TEXT NOT NULL)`, table(name))}},
		Handle: func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
			if calls != nil {
				calls.Add(1)
			}
			if e.Type == "Ignored" {
				return nil
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (position, stream, type) VALUES (?, ?, ?)`, table(name)),
				int64(e.Position), e.StreamID, e.Type)
			return err
		},
	}
}

func table(projector string) string { return strings.ReplaceAll(projector, "-", "_") + "_rows" }

func rows(t testing.TB, s readmodel.Store, projector string) []string {
	t.Helper()
	rs, err := s.DB().Query(fmt.Sprintf(`SELECT type FROM %s ORDER BY position`, table(projector)))
	if err != nil {
		t.Fatalf("query %s: %v", projector, err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var typ string
		if err := rs.Scan(&typ); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestProjectorBuildsTable(t *testing.T) {
	e := newEnv(t)
	e.add(t, "item-1", "Added", "Ignored") // history before the start
	h := newRuntime(t, e, e.store, itemsProjector("items", nil))
	h.start(t)
	last := e.add(t, "item-2", "Added", "Renamed") // live
	h.waitFor(t, last)

	if got := rows(t, e.store, "items"); strings.Join(got, ",") != "Added,Added,Renamed" {
		t.Fatalf("rows = %v", got)
	}
	if cp, err := e.store.Checkpoint(t.Context(), "items"); err != nil || cp != last {
		t.Fatalf("stored checkpoint = %d, %v; want %d", cp, err, last)
	}
	if cp := h.rt.Checkpoints()["items"]; cp != last {
		t.Fatalf("Checkpoints()[items] = %d, want %d", cp, last)
	}
}

func TestRestartResumesFromCheckpoint(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	h := newRuntime(t, e, e.store, itemsProjector("items", &calls))
	stop := h.start(t)
	first := e.add(t, "item-1", "A", "B", "C")
	h.waitFor(t, first)
	stop()

	last := e.add(t, "item-2", "D", "E") // while stopped
	// A new process: new store handle, new runtime, same files. Version 1
	// of the migrations (a plain CREATE TABLE) must not run again.
	store := e.openStore(t)
	calls.Store(0)
	h2 := newRuntime(t, e, store, itemsProjector("items", &calls))
	h2.start(t)
	h2.waitFor(t, last)
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times after restart, want 2 (only the new events)", n)
	}
	if got := rows(t, store, "items"); strings.Join(got, ",") != "A,B,C,D,E" {
		t.Fatalf("rows = %v", got)
	}
}

func TestPoisonEventsAreParked(t *testing.T) {
	e := newEnv(t)
	var poisonTries atomic.Int64
	fragile := itemsProjector("fragile", nil)
	handle := fragile.Handle
	fragile.Handle = func(ctx context.Context, tx *sql.Tx, ev eventlog.Event) error {
		switch ev.Type {
		case "Poison":
			poisonTries.Add(1)
			// Write first: the failed attempt must leave no row behind.
			if err := handle(ctx, tx, ev); err != nil {
				return err
			}
			return errors.New("cannot fold poison")
		case "Panic":
			var m map[string]int
			m["boom"]++ // nil map write: a runtime panic
		}
		return handle(ctx, tx, ev)
	}
	h := newRuntime(t, e, e.store, fragile, itemsProjector("steady", nil))
	h.start(t)
	last := e.add(t, "thing-1", "OK1", "Poison", "OK2", "Panic", "OK3")
	h.waitFor(t, last) // both projectors, past the poison

	if got := rows(t, e.store, "fragile"); strings.Join(got, ",") != "OK1,OK2,OK3" {
		t.Fatalf("fragile rows = %v", got)
	}
	if got := rows(t, e.store, "steady"); strings.Join(got, ",") != "OK1,Poison,OK2,Panic,OK3" {
		t.Fatalf("steady rows = %v", got)
	}
	if n := poisonTries.Load(); n != 3 {
		t.Fatalf("poison event tried %d times, want 1 + MaxRetries (2)", n)
	}
	parked, err := e.store.Parked(t.Context(), "fragile")
	if err != nil {
		t.Fatal(err)
	}
	if len(parked) != 2 || parked[0].Type != "Poison" || parked[1].Type != "Panic" {
		t.Fatalf("parked = %+v, want Poison then Panic", parked)
	}
	if !strings.Contains(parked[0].Error, "cannot fold poison") || !strings.Contains(parked[1].Error, "panic") {
		t.Fatalf("parked errors = %q, %q", parked[0].Error, parked[1].Error)
	}
	if steadyParked, _ := e.store.Parked(t.Context(), "steady"); len(steadyParked) != 0 {
		t.Fatalf("steady parked %d events", len(steadyParked))
	}
	if v := counterValue(t, h.reg, projections.MetricParked, "fragile"); v != 2 {
		t.Fatalf("%s{fragile} = %v, want 2", projections.MetricParked, v)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "event parked") || !strings.Contains(logs, `"projector":"fragile"`) {
		t.Fatalf("no parking in the logs:\n%s", logs)
	}
	if strings.Contains(logs, secret) {
		t.Fatal("a payload reached the logs")
	}
}

func TestWaitFor(t *testing.T) {
	e := newEnv(t)
	gate := make(chan struct{})
	gated := itemsProjector("gated", nil)
	handle := gated.Handle
	gated.Handle = func(ctx context.Context, tx *sql.Tx, ev eventlog.Event) error {
		if ev.Type == "Gated" {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return handle(ctx, tx, ev)
	}
	h := newRuntime(t, e, e.store, gated, itemsProjector("plain", nil))
	stop := h.start(t)

	first := e.add(t, "thing-1", "A")
	h.waitFor(t, first)
	h.waitFor(t, first, "plain") // reached: returns at once
	h.waitFor(t, 0)

	// Nothing will reach a position beyond the log: WaitFor ends with ctx.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	err := h.rt.WaitFor(ctx, first+1)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor beyond the log = %v, want DeadlineExceeded", err)
	}

	// A waiter is woken by the checkpoint moving once the event is
	// appended and its handler is let through.
	woken := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		woken <- h.rt.WaitFor(ctx, first+1, "gated")
	}()
	if pos := e.add(t, "thing-1", "Gated"); pos != first+1 {
		t.Fatalf("appended at %d, want %d", pos, first+1)
	}
	close(gate)
	select {
	case err := <-woken:
		if err != nil {
			t.Fatalf("WaitFor after release: %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("WaitFor not woken by the checkpoint")
	}
	if got := rows(t, e.store, "gated"); strings.Join(got, ",") != "A,Gated" {
		t.Fatalf("gated rows = %v", got)
	}

	if err := h.rt.WaitFor(t.Context(), 1, "nobody"); !errors.Is(err, projections.ErrUnknownProjector) {
		t.Fatalf("WaitFor(nobody) = %v, want ErrUnknownProjector", err)
	}

	// Closing the runtime releases waiters.
	closed := make(chan error, 1)
	go func() { closed <- h.rt.WaitFor(context.Background(), first+100) }()
	stop()
	select {
	case err := <-closed:
		if !errors.Is(err, projections.ErrClosed) {
			t.Fatalf("WaitFor on close = %v, want ErrClosed", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("WaitFor not released by Close")
	}
}

func TestHungHandlerTimesOutAndIsParked(t *testing.T) {
	e := newEnv(t)
	hung := itemsProjector("hung", nil)
	handle := hung.Handle
	hung.Handle = func(ctx context.Context, tx *sql.Tx, ev eventlog.Event) error {
		if ev.Type == "Hang" {
			<-ctx.Done() // holds the store's writer until the attempt times out
			return ctx.Err()
		}
		return handle(ctx, tx, ev)
	}
	h := newRuntimeWith(t, e, e.store, func(c *projections.Config) {
		c.MaxRetries = 1
		c.HandleTimeout = 20 * time.Millisecond
	}, hung, itemsProjector("other", nil))
	h.start(t)
	last := e.add(t, "thing-1", "A", "Hang", "B")
	h.waitFor(t, last)
	if got := rows(t, e.store, "hung"); strings.Join(got, ",") != "A,B" {
		t.Fatalf("hung rows = %v", got)
	}
	if got := rows(t, e.store, "other"); strings.Join(got, ",") != "A,Hang,B" {
		t.Fatalf("other rows = %v", got)
	}
	parked, err := e.store.Parked(t.Context(), "hung")
	if err != nil || len(parked) != 1 || parked[0].Type != "Hang" {
		t.Fatalf("parked = %+v, %v; want the Hang event", parked, err)
	}
}

// flakyStore fails the first Apply calls as an unavailable store would.
type flakyStore struct {
	readmodel.Store
	failures atomic.Int64
}

func (f *flakyStore) Apply(ctx context.Context, projector string, pos eventlog.Position, fn func(tx *sql.Tx) error) (bool, error) {
	if f.failures.Add(-1) >= 0 {
		return false, errors.New("disk I/O error")
	}
	return f.Store.Apply(ctx, projector, pos, fn)
}

func TestStoreFailureIsRetriedNotParked(t *testing.T) {
	e := newEnv(t)
	store := &flakyStore{Store: e.store}
	// More failures than one delivery's attempts (1 + MaxRetries = 3).
	store.failures.Store(5)
	h := newRuntime(t, e, store, itemsProjector("items", nil))
	h.start(t)
	last := e.add(t, "item-1", "A", "B")
	h.waitFor(t, last)
	if got := rows(t, e.store, "items"); strings.Join(got, ",") != "A,B" {
		t.Fatalf("rows = %v, want both events despite the store failures", got)
	}
	if parked, err := e.store.Parked(t.Context(), "items"); err != nil || len(parked) != 0 {
		t.Fatalf("parked = %+v, %v; a store failure must not park the event", parked, err)
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	h := newRuntime(t, e, e.store, itemsProjector("items", nil))
	stop := h.start(t)
	last := e.add(t, "item-1", "A", "B", "C")
	h.waitFor(t, last)
	if v := gaugeValue(t, h.reg, projections.MetricLag, "items"); v != 0 {
		t.Fatalf("lag after catching up = %v, want 0", v)
	}
	stop()
	e.add(t, "item-1", "D", "E") // the projector is stopped: 2 behind
	if v := gaugeValue(t, h.reg, projections.MetricLag, "items"); v != 2 {
		t.Fatalf("lag = %v, want 2", v)
	}
	if v := gaugeValue(t, h.reg, projections.MetricCheckpoint, "items"); v != float64(last) {
		t.Fatalf("checkpoint gauge = %v, want %d", v, last)
	}
	if v := counterValue(t, h.reg, projections.MetricProjected, "items"); v != 3 {
		t.Fatalf("projected = %v, want 3", v)
	}
	m := metric(t, h.reg, projections.MetricDelay, "items")
	if m == nil || m.GetHistogram().GetSampleCount() != 3 {
		t.Fatalf("delay histogram = %v, want 3 samples", m)
	}
}

func TestRunEndsWithContext(t *testing.T) {
	e := newEnv(t)
	h := newRuntime(t, e, e.store, itemsProjector("items", nil))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.rt.Run(ctx) }()
	select {
	case <-h.rt.Running():
	case <-time.After(waitLimit):
		t.Fatal("not running")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after ctx end = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after ctx ended")
	}
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRunAgainResumesFromTheCheckpoints: a Run that returned (its ctx
// ended: a job whose lease was lost) may be followed by another, which
// goes on from where the first stopped; a second Run while one is under
// way is refused, and a Reload between the two runs at once.
func TestRunAgainResumesFromTheCheckpoints(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	h := newRuntime(t, e, e.store, itemsProjector("items", &calls))
	runUntil := func(ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() { done <- h.rt.Run(ctx) }()
		return done
	}
	returned := func(done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("Run did not return after its ctx ended")
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := runUntil(ctx)
	h.waitFor(t, e.add(t, "item-1", "A", "B"))
	if err := h.rt.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "under way") {
		t.Fatalf("a second Run while one is under way = %v, want refused", err)
	}
	cancel()
	returned(done)

	last := e.add(t, "item-2", "C") // while stopped
	reloaded := false
	if err := h.rt.Reload(t.Context(), func(context.Context) error { reloaded = true; return nil }); err != nil || !reloaded {
		t.Fatalf("Reload while stopped = %v (ran %v), want fn run at once", err, reloaded)
	}
	calls.Store(0)
	ctx, cancel = context.WithCancel(t.Context())
	done = runUntil(ctx)
	h.waitFor(t, last)
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times in the second Run, want 1 (only the new event)", n)
	}
	if got := rows(t, e.store, "items"); strings.Join(got, ",") != "A,B,C" {
		t.Fatalf("rows = %v", got)
	}
	cancel()
	returned(done)
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.Run(t.Context()); !errors.Is(err, projections.ErrClosed) {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}

func TestGoroutinesExitOnClose(t *testing.T) {
	e := newEnv(t)
	baseline := runtime.NumGoroutine()
	h := newRuntime(t, e, e.store, itemsProjector("one", nil), itemsProjector("two", nil))
	stop := h.start(t)
	h.waitFor(t, e.add(t, "item-1", "A", "B"))
	stop()
	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before Run:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// brokenCheckpoints cannot read checkpoints.
type brokenCheckpoints struct{ readmodel.Store }

func (brokenCheckpoints) Checkpoint(context.Context, string) (eventlog.Position, error) {
	return 0, errors.New("checkpoint table unreadable")
}

func TestRunFailsWhenCheckpointUnreadable(t *testing.T) {
	e := newEnv(t)
	h := newRuntime(t, e, brokenCheckpoints{e.store}, itemsProjector("items", nil))
	err := h.rt.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "checkpoint table unreadable") {
		t.Fatalf("Run = %v, want the checkpoint failure", err)
	}
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRunWithoutProjectors(t *testing.T) {
	e := newEnv(t)
	h := newRuntime(t, e, e.store)
	stop := h.start(t)
	h.waitFor(t, 0)
	stop()
}

func TestRunFailsOnBadMigration(t *testing.T) {
	e := newEnv(t)
	bad := itemsProjector("bad", nil)
	bad.Migrations = []readmodel.Migration{{Version: 1, SQL: `NOT SQL`}}
	h := newRuntime(t, e, e.store, bad)
	if err := h.rt.Run(t.Context()); err == nil {
		t.Fatal("Run succeeded with a broken migration")
	}
}

func TestRegisterRejects(t *testing.T) {
	e := newEnv(t)
	h := newRuntime(t, e, e.store, itemsProjector("items", nil))
	for name, p := range map[string]projections.Projector{
		"duplicate name": itemsProjector("items", nil),
		"empty name":     itemsProjector("", nil),
		"upper case":     itemsProjector("Items", nil),
		"no handler":     {Name: "nohandler"},
		"bad migrations": {Name: "m", Handle: itemsProjector("m", nil).Handle, Migrations: []readmodel.Migration{{Version: 2}, {Version: 1}}},
	} {
		if err := h.rt.Register(p); err == nil {
			t.Errorf("%s: Register succeeded", name)
		}
	}
	h.start(t)
	if err := h.rt.Register(itemsProjector("late", nil)); err == nil {
		t.Fatal("Register after Run succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	_, err := projections.New(projections.Config{MaxRetries: -1, RetryInitialInterval: time.Second, RetryMaxInterval: time.Millisecond})
	if err == nil {
		t.Fatal("New accepted an invalid config")
	}
	for _, want := range []string{"Log", "Store", "MaxRetries", "RetryMaxInterval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	cfg := projections.Config{Log: e.log, Store: e.store, Registry: reg}
	if _, err := projections.New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := projections.New(cfg); err == nil {
		t.Fatal("a second runtime registered the same metrics on one registry")
	}
}

func metric(t testing.TB, reg *prometheus.Registry, name, projector string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "projector" && l.GetValue() == projector {
					return m
				}
			}
		}
	}
	return nil
}

func gaugeValue(t testing.TB, reg *prometheus.Registry, name, projector string) float64 {
	t.Helper()
	m := metric(t, reg, name, projector)
	if m == nil {
		t.Fatalf("no %s{projector=%q}", name, projector)
	}
	return m.GetGauge().GetValue()
}

func counterValue(t testing.TB, reg *prometheus.Registry, name, projector string) float64 {
	t.Helper()
	m := metric(t, reg, name, projector)
	if m == nil {
		t.Fatalf("no %s{projector=%q}", name, projector)
	}
	return m.GetCounter().GetValue()
}

// TestTypedProjectorPassesOverOtherTypes: a projector that names its types
// sees only those; WaitFor still reaches the positions of the others, the
// store's checkpoint follows them in the background, and after a restart
// nothing is handled twice or passed over again.
func TestTypedProjectorPassesOverOtherTypes(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	typed := func() projections.Projector {
		p := itemsProjector("typed", &calls)
		p.Types = []string{"A", "C"}
		return p
	}
	h := newRuntimeWith(t, e, e.store, func(c *projections.Config) { c.FlushInterval = 10 * time.Millisecond }, typed())
	stop := h.start(t)
	last := e.add(t, "item-1", "A", "B", "C", "B", "B")
	h.waitFor(t, last, "typed")
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2 (A and C only)", n)
	}
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		cp, err := e.store.Checkpoint(context.Background(), "typed")
		if err != nil {
			t.Fatal(err)
		}
		if cp == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored checkpoint %d, want %d (the passed-over events flushed)", cp, last)
		}
		<-tick.C
	}
	stop()
	more := e.add(t, "item-2", "B", "C")
	calls.Store(0)
	h2 := newRuntimeWith(t, e, e.openStore(t), nil, typed())
	h2.start(t)
	h2.waitFor(t, more, "typed")
	if n := calls.Load(); n != 1 {
		t.Fatalf("after restart the handler ran %d times, want 1 (the new C)", n)
	}
	if got := rows(t, e.store, "typed"); strings.Join(got, ",") != "A,C,C" {
		t.Fatalf("rows = %v", got)
	}
}

// countingStore counts the transactions Apply opens.
type countingStore struct {
	readmodel.Store
	applies atomic.Int64
}

func (c *countingStore) Apply(ctx context.Context, projector string, pos eventlog.Position, fn func(tx *sql.Tx) error) (bool, error) {
	c.applies.Add(1)
	return c.Store.Apply(ctx, projector, pos, fn)
}

// TestBatchesShareTransactions: events already in the log when a projector
// starts are applied several to a transaction, with the same rows.
func TestBatchesShareTransactions(t *testing.T) {
	e := newEnv(t)
	types := make([]string, 200)
	for i := range types {
		types[i] = fmt.Sprintf("T%03d", i)
	}
	last := e.add(t, "item-1", types...)
	store := &countingStore{Store: e.store}
	h := newRuntime(t, e, store, itemsProjector("items", nil))
	h.start(t)
	h.waitFor(t, last)
	if got := rows(t, e.store, "items"); strings.Join(got, ",") != strings.Join(types, ",") {
		t.Fatalf("rows = %v", got)
	}
	if n := store.applies.Load(); n >= 200 {
		t.Fatalf("%d transactions for 200 waiting events: no batching", n)
	}
}

// TestPoisonEventInsideABatch: an event that fails inside a batch is
// retried and parked alone; the events before and after it are applied.
func TestPoisonEventInsideABatch(t *testing.T) {
	e := newEnv(t)
	last := e.add(t, "item-1", "A", "B", "Poison", "C", "Panic", "D")
	p := itemsProjector("items", nil)
	inner := p.Handle
	var poisonTries atomic.Int64
	p.Handle = func(ctx context.Context, tx *sql.Tx, ev eventlog.Event) error {
		switch ev.Type {
		case "Poison":
			poisonTries.Add(1)
			return errors.New("cannot fold this")
		case "Panic":
			var m map[string]int
			m["x"]++
		}
		return inner(ctx, tx, ev)
	}
	h := newRuntime(t, e, e.store, p)
	h.start(t)
	h.waitFor(t, last)
	if got := rows(t, e.store, "items"); strings.Join(got, ",") != "A,B,C,D" {
		t.Fatalf("rows = %v, want A,B,C,D", got)
	}
	parked, err := e.store.Parked(t.Context(), "items")
	if err != nil || len(parked) != 2 || parked[0].Type != "Poison" || parked[1].Type != "Panic" {
		t.Fatalf("parked = %+v, %v; want Poison and Panic", parked, err)
	}
	if n := poisonTries.Load(); n != 3 {
		t.Fatalf("poison event tried %d times, want 1 + MaxRetries (2)", n)
	}
}

func TestUpkeepRunsAtStartAndEveryInterval(t *testing.T) {
	e := newEnv(t)
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := itemsProjector("ticking", nil)
	p.Migrations = append(p.Migrations, readmodel.Migration{Version: 2, SQL: `CREATE TABLE upkeep (at INTEGER NOT NULL)`})
	p.UpkeepEvery = 5 * time.Millisecond
	p.Upkeep = func(ctx context.Context, tx *sql.Tx, now time.Time) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO upkeep (at) VALUES (?)`, now.Unix())
		return err
	}
	h := newRuntimeWith(t, e, e.store, func(c *projections.Config) { c.Now = func() time.Time { return clock } }, p)
	stop := h.start(t)
	count := func() (n int, at int64) {
		if err := e.store.DB().QueryRow(`SELECT COUNT(*), COALESCE(MAX(at), 0) FROM upkeep`).Scan(&n, &at); err != nil {
			t.Fatal(err)
		}
		return n, at
	}
	deadline := time.Now().Add(waitLimit)
	for n, _ := count(); n < 3; n, _ = count() {
		if time.Now().After(deadline) {
			t.Fatalf("upkeep ran %d times within the deadline, want at least 3", n)
		}
		runtime.Gosched()
	}
	if _, at := count(); at != clock.Unix() {
		t.Fatalf("upkeep saw now = %d, want the runtime's clock %d", at, clock.Unix())
	}
	stop()
	n, _ := count()
	if again, _ := count(); again != n {
		t.Fatalf("upkeep ran after Run returned (%d then %d)", n, again)
	}
	if cp, err := e.store.Checkpoint(t.Context(), "ticking"); err != nil || cp != 0 {
		t.Fatalf("upkeep moved the checkpoint to %d (%v)", cp, err)
	}
}

// TestBatchHandlerFoldsSeveralEventsPerCall: a projector with HandleBatch
// gets the waiting events in calls of several; an event that fails inside
// a batch is parked alone and the others are applied.
func TestBatchHandlerFoldsSeveralEventsPerCall(t *testing.T) {
	e := newEnv(t)
	types := []string{"A", "B", "Poison", "C", "Panic", "D"}
	for i := range 50 {
		types = append(types, fmt.Sprintf("T%02d", i))
	}
	last := e.add(t, "item-1", types...)
	p := itemsProjector("items", nil)
	inner := p.Handle
	var calls, largest atomic.Int64
	p.HandleBatch = func(ctx context.Context, tx *sql.Tx, events []eventlog.Event) error {
		calls.Add(1)
		if n := int64(len(events)); n > largest.Load() {
			largest.Store(n)
		}
		for _, ev := range events {
			switch ev.Type {
			case "Poison":
				return errors.New("cannot fold this")
			case "Panic":
				var m map[string]int
				m["x"]++
			}
			if err := inner(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	}
	p.Handle = func(context.Context, *sql.Tx, eventlog.Event) error {
		return errors.New("Handle called although HandleBatch is set")
	}
	h := newRuntime(t, e, e.store, p)
	h.start(t)
	h.waitFor(t, last)
	want := []string{"A", "B", "C", "D"}
	want = append(want, types[6:]...)
	if got := rows(t, e.store, "items"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("rows = %v, want %v", got, want)
	}
	parked, err := e.store.Parked(t.Context(), "items")
	if err != nil || len(parked) != 2 || parked[0].Type != "Poison" || parked[1].Type != "Panic" {
		t.Fatalf("parked = %+v, %v; want Poison and Panic", parked, err)
	}
	if largest.Load() < 2 {
		t.Fatalf("HandleBatch got at most %d events per call", largest.Load())
	}
}
