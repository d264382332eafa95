package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// These tests drive the syncer through Config.syncHook, so they live in the
// package itself.

const waitLimit = 10 * time.Second

// syncGate is a syncHook. While armed, every fsync of the write-ahead log
// is held (the first one held signals entered) until release, which lets
// the held fsyncs go on or makes them fail with an error instead.
type syncGate struct {
	armed    atomic.Bool
	entered  chan struct{}
	open     chan struct{} // closed by release
	once     sync.Once
	failWith atomic.Pointer[error]
	// synced is set once a held fsync has completed (before the hook
	// returns to the syncer).
	synced atomic.Bool
}

func newSyncGate() *syncGate {
	return &syncGate{entered: make(chan struct{}, 1), open: make(chan struct{})}
}

func (g *syncGate) hook(sync func() error) error {
	if !g.armed.Load() {
		return sync()
	}
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	var err error
	if p := g.failWith.Load(); p != nil {
		err = *p
	} else {
		err = sync()
	}
	g.synced.Store(true)
	return err
}

// release disarms the gate and lets the held fsyncs go: they fail with err
// when it is not nil.
func (g *syncGate) release(err error) {
	g.armed.Store(false)
	if err != nil {
		g.failWith.Store(&err)
	}
	g.once.Do(func() { close(g.open) })
}

// openGated opens a log whose fsyncs go through g. Cleanup lets a held
// fsync go before closing the log, so a failed test does not hang.
func openGated(t *testing.T, g *syncGate, cfg Config) *Log {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "events.db")
	}
	cfg.syncHook = g.hook
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Cleanup(func() { g.release(nil) }) // runs first
	return l
}

func testEvent(typ string) eventlog.EventData {
	return eventlog.EventData{
		ID: uuid.New(), Type: typ, SchemaVersion: 1, ShopID: "shop_1",
		OccurredAt: time.Now().UTC(), Data: []byte(`{"k":"v"}`),
		Metadata: eventlog.Metadata{Source: "system", Actor: "system:test"},
	}
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("%s: not within %s", what, waitLimit)
	}
}

// ids lists the ids of evs.
func ids(evs []eventlog.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i := range evs {
		out[i] = evs[i].ID
	}
	return out
}

// committedInFile reports whether another connection (as another process
// would) sees the event in the database file.
func committedInFile(t *testing.T, path string, id uuid.UUID) bool {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_query_only=1")
	if err != nil {
		t.Fatalf("open raw: %v", err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM events WHERE event_id = ?", id[:]).Scan(&n); err != nil {
		t.Fatalf("count in file: %v", err)
	}
	return n == 1
}

type appendResult struct {
	res    eventlog.AppendResult
	err    error
	synced bool // whether the held fsync had completed when Append returned
}

func TestCommittedBatchInvisibleUntilFsynced(t *testing.T) {
	g := newSyncGate()
	path := filepath.Join(t.TempDir(), "events.db")
	l := openGated(t, g, Config{Path: path})
	ctx := context.Background()

	e0 := testEvent("Durable")
	r0, err := l.Append(ctx, "visible-0", eventlog.NoStream(), e0)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	live, err := l.Subscribe(ctx, 0)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer live.Close()
	if e := receiveOne(t, live); e.ID != e0.ID {
		t.Fatalf("subscription delivered %s first, want %s", e.ID, e0.ID)
	}

	// Hold the next fsync: the batch of e1 is committed but not durable.
	g.armed.Store(true)
	e1 := testEvent("NotYetDurable")
	appended := make(chan appendResult, 1)
	go func() {
		r, err := l.Append(ctx, "visible-1", eventlog.NoStream(), e1)
		appended <- appendResult{res: r, err: err, synced: g.synced.Load()}
	}()
	waitSignal(t, g.entered, "the fsync of the second append")
	if !committedInFile(t, path, e1.ID) {
		t.Fatal("the held batch is not committed: the test does not cover the window it is about")
	}

	select {
	case r := <-appended:
		t.Fatalf("Append returned (%+v, %v) before its batch was fsynced", r.res, r.err)
	default:
	}
	all, err := l.ReadAll(ctx, 0, 10)
	if err != nil {
		t.Fatalf("read all: %v", err)
	}
	if len(all) != 1 || all[0].ID != e0.ID {
		t.Errorf("ReadAll before the fsync = %v, want only %s", ids(all), e0.ID)
	}
	if h, err := l.HeadPosition(ctx); err != nil || h != r0.Position {
		t.Errorf("HeadPosition before the fsync = %d, %v; want %d", h, err, r0.Position)
	}
	// The committed head already counts the batch waiting for its fsync.
	if h, err := l.CommittedHead(ctx); err != nil || h != r0.Position+1 {
		t.Errorf("CommittedHead before the fsync = %d, %v; want %d", h, err, r0.Position+1)
	}
	if evs, err := l.ReadStream(ctx, "visible-1", 0, 10); err != nil || len(evs) != 0 {
		t.Errorf("ReadStream before the fsync = %v, %v; want no events", ids(evs), err)
	}
	// A subscription's page read now (Subscribe reads with readAll) stops
	// before the batch (it would hold e1 right after e0 otherwise).
	first, err := l.readAll(ctx, 0, 512)
	if err != nil || len(first) != 1 || first[0].ID != e0.ID {
		t.Errorf("a subscription's first page before the fsync = %v, %v; want only %s", ids(first), err, e0.ID)
	}

	// Let the fsync go: everything shows up, and only now.
	g.release(nil)
	var r appendResult
	select {
	case r = <-appended:
	case <-time.After(waitLimit):
		t.Fatal("Append did not return after its fsync")
	}
	if r.err != nil || !r.synced {
		t.Fatalf("Append = %+v, %v (returned after the fsync: %v)", r.res, r.err, r.synced)
	}
	e := receiveOne(t, live)
	if e.ID != e1.ID || e.Position != r.res.Position {
		t.Errorf("subscription delivered %s at %d, want %s at %d", e.ID, e.Position, e1.ID, r.res.Position)
	}
	if next, err := l.readAll(ctx, e0Position(first), 512); err != nil || len(next) != 1 || next[0].ID != e1.ID {
		t.Errorf("the reader's next page = %v, %v; want %s", ids(next), err, e1.ID)
	}
	if h, err := l.HeadPosition(ctx); err != nil || h != r.res.Position {
		t.Errorf("HeadPosition after the fsync = %d, %v; want %d", h, err, r.res.Position)
	}
	if evs, err := l.ReadStream(ctx, "visible-1", 0, 10); err != nil || len(evs) != 1 {
		t.Errorf("ReadStream after the fsync = %v, %v; want e1", ids(evs), err)
	}
}

func receiveOne(t *testing.T, sub eventlog.Subscription) eventlog.Event {
	t.Helper()
	select {
	case e, ok := <-sub.Events():
		if !ok {
			t.Fatalf("subscription ended: %v", sub.Err())
		}
		return e
	case <-time.After(waitLimit):
		t.Fatalf("no event within %s", waitLimit)
	}
	panic("unreachable")
}

func TestFailedFsyncFailsTheLogClosed(t *testing.T) {
	g := newSyncGate()
	l := openGated(t, g, Config{})
	ctx := context.Background()
	e0 := testEvent("Durable")
	r0, err := l.Append(ctx, "failing-0", eventlog.NoStream(), e0)
	if err != nil {
		t.Fatalf("append: %v", err)
	}

	// Appends that are waiting for an fsync, or queued behind it, when it
	// fails.
	g.armed.Store(true)
	const waiting = 8
	errs := make(chan error, waiting)
	for i := range waiting {
		go func() {
			_, err := l.Append(ctx, fmt.Sprintf("failing-%d", i+1), eventlog.NoStream(), testEvent("Lost"))
			errs <- err
		}()
	}
	waitSignal(t, g.entered, "an fsync")
	injected := errors.New("injected fsync failure")
	g.release(injected)
	for range waiting {
		select {
		case err := <-errs:
			if !errors.Is(err, eventlog.ErrUnavailable) || !errors.Is(err, injected) {
				t.Errorf("append waiting on the failed fsync: %v, want ErrUnavailable wrapping the failure", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("an append waiting on the failed fsync was not answered")
		}
	}

	// The log takes no more appends.
	if _, err := l.Append(ctx, "failing-later", eventlog.NoStream(), testEvent("Refused")); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("append after the failed fsync: %v, want ErrUnavailable", err)
	}
	if err := l.SetStreamMetadata(ctx, "failing-0", map[string]string{"k": "v"}); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("set stream metadata after the failed fsync: %v, want ErrUnavailable", err)
	}
	// Reads still work, and show nothing whose fsync failed.
	all, err := l.ReadAll(ctx, 0, 100)
	if err != nil {
		t.Fatalf("read all: %v", err)
	}
	if len(all) != 1 || all[0].ID != e0.ID {
		t.Errorf("ReadAll after the failed fsync = %v, want only %s", ids(all), e0.ID)
	}
	if h, err := l.HeadPosition(ctx); err != nil || h != r0.Position {
		t.Errorf("HeadPosition after the failed fsync = %d, %v; want %d", h, err, r0.Position)
	}
}

func TestCheckpointsKeepTheWALBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	// A small threshold, so that a few thousand events go through many
	// checkpoint cycles.
	const threshold = 64
	l, err := Open(Config{Path: path, checkpointFrames: threshold})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	ctx := context.Background()
	const appenders, each = 16, 150
	payload := make([]byte, 1024)
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e := testEvent("Checkpointed")
				e.Data = payload
				if _, err := l.Append(ctx, fmt.Sprintf("ckpt-%d-%d", a, i/50), eventlog.Any(), e); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Without checkpoints the WAL would hold every page written: more than
	// one frame per 1 KB event. With them it restarts, holding about the
	// threshold plus what the writer adds while the checkpointer copies.
	info, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatalf("stat WAL: %v", err)
	}
	const frameSize = 4096 + 24
	if limit := int64(appenders * each / 2 * frameSize); info.Size() > limit {
		t.Errorf("WAL is %d bytes after %d events, want it restarted (under %d)", info.Size(), appenders*each, limit)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	l, err = Open(Config{Path: path})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer l.Close()
	var (
		after eventlog.Position
		n     int
	)
	v := eventlog.NewChainVerifier()
	for {
		page, err := l.ReadAll(ctx, after, 1000)
		if err != nil {
			t.Fatalf("read all: %v", err)
		}
		if len(page) == 0 {
			break
		}
		for i := range page {
			if err := v.Check(&page[i]); err != nil {
				t.Fatalf("chain: %v", err)
			}
		}
		n += len(page)
		after = page[len(page)-1].Position
	}
	if n != appenders*each {
		t.Errorf("reopened log holds %d events, want %d", n, appenders*each)
	}
}

// e0Position is the position of the first page's last event.
func e0Position(page []eventlog.Event) eventlog.Position {
	if len(page) == 0 {
		return 0
	}
	return page[len(page)-1].Position
}
