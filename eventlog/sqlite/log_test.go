package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/eventlogtest"
	"github.com/cgp-platform/cgp/eventlog/sqlite"
)

func openLog(t testing.TB, cfg sqlite.Config) *sqlite.Log {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "events.db")
	}
	l, err := sqlite.Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return l
}

func TestContract(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T) eventlog.Log {
		return openLog(t, sqlite.Config{})
	}, eventlogtest.GlobalEventIDs())
}

func BenchmarkLog(b *testing.B) {
	eventlogtest.Bench(b, func(b *testing.B) eventlog.Log {
		return openLog(b, sqlite.Config{})
	})
}

func newEvent(typ string) eventlog.EventData {
	return eventlog.EventData{
		ID: uuid.New(), Type: typ, SchemaVersion: 1, ShopID: "shop_1",
		OccurredAt: time.Now().UTC(), Data: []byte(`{"k":"v"}`),
		Metadata: eventlog.Metadata{Source: "system", Actor: "system:test"},
	}
}

func TestConfigValidate(t *testing.T) {
	err := sqlite.Config{MaxBatch: -1, PollInterval: -time.Second}.Validate()
	if err == nil {
		t.Fatal("Validate accepted an empty path and negative values")
	}
	for _, want := range []string{"path", "max batch", "poll interval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
	if err := (sqlite.Config{Path: "x.db"}).Validate(); err != nil {
		t.Errorf("Validate of a minimal config: %v", err)
	}
	if _, err := sqlite.Open(sqlite.Config{}); err == nil {
		t.Error("Open accepted a config without a path")
	}
}

func TestOpenFailureIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "events.db")
	_, err := sqlite.Open(sqlite.Config{Path: path})
	if !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("Open in a missing directory: %v, want ErrUnavailable", err)
	}
}

func TestNowIsInjected(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	l := openLog(t, sqlite.Config{Now: func() time.Time { return at }})
	e := newEvent("Clocked")
	e.OccurredAt = time.Time{}
	if _, err := l.Append(context.Background(), "clock-1", eventlog.NoStream(), e); err != nil {
		t.Fatalf("append: %v", err)
	}
	got, err := l.ReadStream(context.Background(), "clock-1", 0, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %v, %d events", err, len(got))
	}
	if !got[0].RecordedAt.Equal(at) || !got[0].OccurredAt.Equal(at) {
		t.Errorf("RecordedAt %s, OccurredAt %s; want both %s", got[0].RecordedAt, got[0].OccurredAt, at)
	}
	if err := eventlog.NewChainVerifier().Check(&got[0]); err != nil {
		t.Errorf("chain: %v", err)
	}
}

func TestReopenKeepsEventsAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	l, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	r, err := l.Append(context.Background(), "reopen-1", eventlog.NoStream(), newEvent("A"), newEvent("B"))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	l = openLog(t, sqlite.Config{Path: path})
	r2, err := l.Append(context.Background(), "reopen-1", eventlog.Exact(1), newEvent("C"))
	if err != nil {
		t.Fatalf("append after reopen: %v", err)
	}
	if r2.Position <= r.Position || r2.NextExpectedRevision != 2 {
		t.Errorf("append after reopen = %+v, want revision 2 after position %d", r2, r.Position)
	}
	db := openRaw(t, path)
	var versions, latest int
	if err := db.QueryRow("SELECT COUNT(*), MAX(version) FROM schema_version").Scan(&versions, &latest); err != nil {
		t.Fatalf("read schema_version: %v", err)
	}
	if versions != 1 || latest != 1 {
		t.Errorf("schema_version has %d rows, latest %d; want one row, version 1", versions, latest)
	}
}

func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatalf("open raw: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestTriggersRejectUpdateAndDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	l := openLog(t, sqlite.Config{Path: path})
	ctx := context.Background()
	if _, err := l.Append(ctx, "tamper-1", eventlog.NoStream(), newEvent("A"), newEvent("B")); err != nil {
		t.Fatalf("append: %v", err)
	}
	if err := l.SetStreamMetadata(ctx, "tamper-1", map[string]string{"k": "v"}); err != nil {
		t.Fatalf("set metadata: %v", err)
	}
	before, err := l.ReadAll(ctx, 0, 10)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	db := openRaw(t, path)
	statements := []string{
		"UPDATE events SET type = 'Forged' WHERE revision = 0",
		"UPDATE events SET data = x'00'",
		"DELETE FROM events WHERE revision = 1",
		"DELETE FROM events",
		"UPDATE stream_metadata SET metadata = '{}'",
		"DELETE FROM stream_metadata",
	}
	for _, stmt := range statements {
		_, err := db.Exec(stmt)
		if err == nil {
			t.Errorf("%s: succeeded, want the append-only trigger to abort it", stmt)
			continue
		}
		if !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only trigger's message", stmt, err)
		}
	}
	after, err := l.ReadAll(ctx, 0, 10)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(after) != len(before) {
		t.Fatalf("log holds %d events after tampering, had %d", len(after), len(before))
	}
	v := eventlog.NewChainVerifier()
	for i := range after {
		if after[i].Type != before[i].Type {
			t.Errorf("event %d type changed to %q", i, after[i].Type)
		}
		if err := v.Check(&after[i]); err != nil {
			t.Errorf("chain: %v", err)
		}
	}
	if m, err := l.StreamMetadata(ctx, "tamper-1"); err != nil || m["k"] != "v" {
		t.Errorf("metadata after tampering = %v, %v", m, err)
	}
}

func TestCloseFlushesQueuedAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	l, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	const appenders = 32
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		acked    = map[uuid.UUID]bool{}
		refused  = map[uuid.UUID]bool{}
		firstAck = make(chan struct{})
		once     sync.Once
	)
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				e := newEvent("Flushed")
				_, err := l.Append(context.Background(), fmt.Sprintf("flush-%d", a), eventlog.Any(), e)
				mu.Lock()
				switch {
				case err == nil:
					acked[e.ID] = true
				case errors.Is(err, eventlog.ErrClosed):
					refused[e.ID] = true
				default:
					t.Errorf("append: %v, want success or ErrClosed", err)
				}
				mu.Unlock()
				once.Do(func() { close(firstAck) })
				if err != nil {
					return
				}
			}
		}()
	}
	<-firstAck
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	wg.Wait() // every Append returned: none was left unanswered
	if len(refused) != appenders {
		t.Errorf("%d appenders were refused after Close, want all %d", len(refused), appenders)
	}
	l2 := openLog(t, sqlite.Config{Path: path})
	all := readAll(t, l2)
	found := map[uuid.UUID]int{}
	for _, e := range all {
		found[e.ID]++
	}
	for id := range acked {
		if found[id] != 1 {
			t.Errorf("acknowledged event %s found %d times", id, found[id])
		}
	}
	for id := range refused {
		if found[id] != 0 {
			t.Errorf("event %s refused with ErrClosed was written", id)
		}
	}
	if len(all) != len(acked) {
		t.Errorf("log holds %d events, %d were acknowledged", len(all), len(acked))
	}
}

func readAll(t *testing.T, l eventlog.Log) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	var after eventlog.Position
	for {
		page, err := l.ReadAll(context.Background(), after, 1000)
		if err != nil {
			t.Fatalf("read all: %v", err)
		}
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Position
	}
}

func TestGroupCommitBatchesConcurrentAppends(t *testing.T) {
	l := openLog(t, sqlite.Config{})
	const appenders, each = 32, 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				if _, err := l.Append(context.Background(), fmt.Sprintf("group-%d", a), eventlog.Any(), newEvent("G")); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	st := l.Stats()
	if st.Appends != appenders*each || st.Events != appenders*each {
		t.Errorf("stats %+v, want %d appends and events", st, appenders*each)
	}
	if st.Commits >= st.Appends {
		t.Errorf("%d commits for %d concurrent appends: no group commit", st.Commits, st.Appends)
	}
}

func TestMaxBatchLargerAppend(t *testing.T) {
	l := openLog(t, sqlite.Config{MaxBatch: 4})
	evs := make([]eventlog.EventData, 10)
	for i := range evs {
		evs[i] = newEvent("Big")
	}
	r, err := l.Append(context.Background(), "big-1", eventlog.NoStream(), evs...)
	if err != nil {
		t.Fatalf("append of more events than MaxBatch: %v", err)
	}
	if r.NextExpectedRevision != 9 {
		t.Errorf("next expected revision %d, want 9", r.NextExpectedRevision)
	}
}

func TestOtherWriterInvalidatesHeadCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	a := openLog(t, sqlite.Config{Path: path})
	b := openLog(t, sqlite.Config{Path: path})
	ctx := context.Background()
	if _, err := a.Append(ctx, "shared-1", eventlog.NoStream(), newEvent("A")); err != nil {
		t.Fatalf("append by a: %v", err)
	}
	if _, err := b.Append(ctx, "shared-1", eventlog.Exact(0), newEvent("B"), newEvent("B")); err != nil {
		t.Fatalf("append by b: %v", err)
	}
	// a's cached head (revision 0) is stale now.
	_, err := a.Append(ctx, "shared-1", eventlog.Exact(0), newEvent("A"))
	var wr *eventlog.WrongRevisionError
	if !errors.As(err, &wr) || wr.Actual != 2 {
		t.Fatalf("append by a with a stale expectation: %v, want wrong revision at 2", err)
	}
	r, err := a.Append(ctx, "shared-1", eventlog.Any(), newEvent("A"))
	if err != nil || r.NextExpectedRevision != 3 {
		t.Fatalf("append by a = %+v, %v; want revision 3", r, err)
	}
	v := eventlog.NewChainVerifier()
	for _, e := range readAll(t, b) {
		if err := v.Check(&e); err != nil {
			t.Errorf("chain across writers: %v", err)
		}
	}
}

func TestBusyStoreIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	l := openLog(t, sqlite.Config{Path: path})
	db := openRaw(t, path)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("conn: %v", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("take the write lock: %v", err)
	}
	_, err = l.Append(context.Background(), "busy-1", eventlog.Any(), newEvent("A"))
	if !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("append while another connection holds the write lock: %v, want ErrUnavailable", err)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatalf("release the write lock: %v", err)
	}
	if _, err := l.Append(context.Background(), "busy-1", eventlog.Any(), newEvent("A")); err != nil {
		t.Errorf("append after the lock is released: %v", err)
	}
}

func TestCloseEndsSubscriptionsWithErrClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	l, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	// More events than a subscription buffers, so one never read blocks.
	evs := make([]eventlog.EventData, 300)
	for i := range evs {
		evs[i] = newEvent("A")
	}
	if _, err := l.Append(context.Background(), "closing-1", eventlog.NoStream(), evs...); err != nil {
		t.Fatalf("append: %v", err)
	}
	live, err := l.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	blocked, err := l.Subscribe(context.Background(), 0) // never read
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	for range len(evs) {
		<-live.Events()
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, sub := range []eventlog.Subscription{live, blocked} {
		for range sub.Events() { // Close returned, so the channel is closed: this ends
		}
		if !errors.Is(sub.Err(), eventlog.ErrClosed) {
			t.Errorf("subscription ended with %v, want ErrClosed", sub.Err())
		}
		if err := sub.Close(); err != nil {
			t.Errorf("close subscription after the log: %v", err)
		}
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	l := openLog(t, sqlite.Config{})
	ctx := context.Background()
	noID := newEvent("A")
	noID.ID = uuid.Nil
	noType := newEvent("")
	badMeta := newEvent("A")
	badMeta.Metadata.Actor = "tok_\xff"
	cases := map[string]struct {
		stream string
		e      eventlog.EventData
	}{
		"empty stream":       {"", newEvent("A")},
		"nil event id":       {"bad-1", noID},
		"empty type":         {"bad-1", noType},
		"invalid UTF-8 meta": {"bad-1", badMeta},
	}
	for name, c := range cases {
		if _, err := l.Append(ctx, c.stream, eventlog.Any(), c.e); err == nil {
			t.Errorf("%s: append succeeded", name)
		}
	}
	if h, err := l.HeadPosition(ctx); err != nil || h != 0 {
		t.Errorf("head after rejected appends = %d, %v; want 0", h, err)
	}
}

// SubscribeTypes delivers every event in order, with the payload of the
// types asked only; the others are skeletons that still carry their
// position, identity and type. Live appends follow the same rule.
func TestSubscribeTypesSkimsOtherTypes(t *testing.T) {
	l := openLog(t, sqlite.Config{})
	ctx := t.Context()
	history := []eventlog.EventData{newEvent("Wanted"), newEvent("Other"), newEvent("Wanted"), newEvent("Other")}
	if _, err := l.Append(ctx, "skim-1", eventlog.NoStream(), history...); err != nil {
		t.Fatal(err)
	}
	sub, err := l.SubscribeTypes(ctx, 0, []string{"Wanted"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := l.Append(ctx, "skim-2", eventlog.NoStream(), newEvent("Other"), newEvent("Wanted")); err != nil {
		t.Fatal(err)
	}
	full, err := l.ReadAll(ctx, 0, 100)
	if err != nil || len(full) != 6 {
		t.Fatalf("ReadAll = %d events, %v", len(full), err)
	}
	for i, want := range full {
		var got eventlog.Event
		select {
		case got = <-sub.Events():
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not delivered", i)
		}
		if got.Position != want.Position || got.ID != want.ID || got.Type != want.Type || got.StreamID != want.StreamID ||
			got.Revision != want.Revision || !got.OccurredAt.Equal(want.OccurredAt) {
			t.Fatalf("event %d = %+v, want the header of %+v", i, got, want)
		}
		if want.Type == "Wanted" {
			if !bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Hash, want.Hash) || got.Metadata.Actor != want.Metadata.Actor {
				t.Fatalf("event %d (%s) lost its payload: %+v", i, want.Type, got)
			}
			continue
		}
		if got.Data != nil || got.Hash != nil {
			t.Fatalf("event %d (%s) carries a payload: %+v", i, want.Type, got)
		}
	}
}
