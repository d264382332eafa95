package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/postgres"
)

const waitLimit = 15 * time.Second

func newEvent(typ string) eventlog.EventData {
	return eventlog.EventData{
		ID: uuid.New(), Type: typ, SchemaVersion: 1, ShopID: "shop_1",
		OccurredAt: time.Now().UTC(), Data: []byte(`{"k":"v"}`),
		Metadata: eventlog.Metadata{Source: "system", Actor: "system:test"},
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

func table(schema, name string) string { return pgx.Identifier{schema, name}.Sanitize() }

func TestConfigValidate(t *testing.T) {
	err := postgres.Config{Schema: "Bad-Name", MaxBatch: -1, PollInterval: -time.Second}.Validate()
	if err == nil {
		t.Fatal("Validate accepted an empty URL, a bad schema and negative values")
	}
	for _, want := range []string{"URL", "schema", "max batch", "poll interval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
	secret := "postgres://u:hunter2@[::1"
	if err := (postgres.Config{URL: secret}).Validate(); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Validate of an unparsable URL = %v; want an error without the password", err)
	}
	if err := (postgres.Config{URL: testURL()}).Validate(); err != nil {
		t.Errorf("Validate of a minimal config: %v", err)
	}
	if _, err := postgres.Open(context.Background(), postgres.Config{}); err == nil {
		t.Error("Open accepted a config without a URL")
	}
}

// The schema comes from the URL's search_path when Config.Schema is empty.
func TestSchemaFromSearchPath(t *testing.T) {
	schema := newSchema(t)
	sep := "?"
	if strings.Contains(testURL(), "?") {
		sep = "&"
	}
	ctx := context.Background()
	l, err := postgres.Open(ctx, postgres.Config{URL: testURL() + sep + "search_path=" + schema})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ctx, "sp-1", eventlog.NoStream(), newEvent("A")); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := connect(t).QueryRow(ctx, "SELECT count(*) FROM "+table(schema, "events")).Scan(&n); err != nil || n != 1 {
		t.Fatalf("events in schema %s: %d, %v; want 1", schema, n, err)
	}
}

func TestOpenUnreachableIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := postgres.Open(ctx, postgres.Config{URL: "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", Schema: "unused"})
	if !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("Open of an unreachable server: %v, want ErrUnavailable", err)
	}
}

func TestNowIsInjected(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6007, time.UTC) // nanoseconds survive
	l := openLog(t, postgres.Config{Now: func() time.Time { return at }})
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
	schema := newSchema(t)
	ctx := context.Background()
	l, err := postgres.Open(ctx, postgres.Config{URL: testURL(), Schema: schema})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	r, err := l.Append(ctx, "reopen-1", eventlog.NoStream(), newEvent("A"), newEvent("B"))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	l = openLog(t, postgres.Config{Schema: schema})
	r2, err := l.Append(ctx, "reopen-1", eventlog.Exact(1), newEvent("C"))
	if err != nil {
		t.Fatalf("append after reopen: %v", err)
	}
	if r2.Position != r.Position+1 || r2.NextExpectedRevision != 2 {
		t.Errorf("append after reopen = %+v, want revision 2 at position %d", r2, r.Position+1)
	}
	var versions, latest int
	if err := connect(t).QueryRow(ctx, "SELECT count(*), max(version) FROM "+table(schema, "schema_version")).Scan(&versions, &latest); err != nil {
		t.Fatalf("read schema_version: %v", err)
	}
	if versions != 1 || latest != 1 {
		t.Errorf("schema_version has %d rows, latest %d; want one row, version 1", versions, latest)
	}
}

// Processes opening a new schema at the same moment take turns migrating.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	schema := newSchema(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := postgres.Open(context.Background(), postgres.Config{URL: testURL(), Schema: schema})
			if err != nil {
				t.Errorf("open: %v", err)
				return
			}
			_ = l.Close()
		}()
	}
	wg.Wait()
}

// The append-only rule is the database's: a raw UPDATE, DELETE or
// TRUNCATE of either table fails, whoever runs it.
func TestTriggersRejectUpdateAndDelete(t *testing.T) {
	schema := newSchema(t)
	l := openLog(t, postgres.Config{Schema: schema})
	ctx := context.Background()
	if _, err := l.Append(ctx, "tamper-1", eventlog.NoStream(), newEvent("A"), newEvent("B")); err != nil {
		t.Fatalf("append: %v", err)
	}
	if err := l.SetStreamMetadata(ctx, "tamper-1", map[string]string{"k": "v"}); err != nil {
		t.Fatalf("set metadata: %v", err)
	}
	before := readAll(t, l)
	conn := connect(t)
	events, meta := table(schema, "events"), table(schema, "stream_metadata")
	statements := []string{
		"UPDATE " + events + " SET type = 'Forged' WHERE revision = 0",
		"UPDATE " + events + " SET data = '\\x00'",
		"DELETE FROM " + events + " WHERE revision = 1",
		"DELETE FROM " + events,
		"DELETE FROM " + events + " WHERE false",
		"TRUNCATE " + events,
		"UPDATE " + meta + " SET metadata = '{}'",
		"DELETE FROM " + meta,
		"TRUNCATE " + meta,
	}
	for _, stmt := range statements {
		_, err := conn.Exec(ctx, stmt)
		if err == nil {
			t.Errorf("%s: succeeded, want the append-only trigger to refuse it", stmt)
			continue
		}
		if !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only trigger's message", stmt, err)
		}
	}
	after := readAll(t, l)
	if len(after) != len(before) {
		t.Fatalf("log holds %d events after tampering, had %d", len(after), len(before))
	}
	v := eventlog.NewChainVerifier()
	for i := range after {
		if after[i].Type != before[i].Type || !bytes.Equal(after[i].Data, before[i].Data) {
			t.Errorf("event %d changed: %+v", i, after[i])
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
	schema := newSchema(t)
	l, err := postgres.Open(context.Background(), postgres.Config{URL: testURL(), Schema: schema})
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
			for {
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
	all := readAll(t, openLog(t, postgres.Config{Schema: schema}))
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

func TestGroupCommitBatchesConcurrentAppends(t *testing.T) {
	l := openLog(t, postgres.Config{})
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
	l := openLog(t, postgres.Config{MaxBatch: 4})
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

// Two logs on one schema are two processes sharing the log: each sees the
// other's appends in its expected revisions, its reads and its
// subscriptions, woken by the notification well before its poll.
func TestTwoLogsShareOneSchema(t *testing.T) {
	schema := newSchema(t)
	a := openLog(t, postgres.Config{Schema: schema, PollInterval: time.Hour})
	b := openLog(t, postgres.Config{Schema: schema, PollInterval: time.Hour})
	ctx := context.Background()
	sub, err := a.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := a.Append(ctx, "shared-1", eventlog.NoStream(), newEvent("A")); err != nil {
		t.Fatalf("append by a: %v", err)
	}
	if _, err := b.Append(ctx, "shared-1", eventlog.Exact(0), newEvent("B"), newEvent("B")); err != nil {
		t.Fatalf("append by b: %v", err)
	}
	_, err = a.Append(ctx, "shared-1", eventlog.Exact(0), newEvent("A"))
	var wr *eventlog.WrongRevisionError
	if !errors.As(err, &wr) || wr.Actual != 2 {
		t.Fatalf("append by a with a stale expectation: %v, want wrong revision at 2", err)
	}
	// An append of no events checks the expectation against the
	// database, not against what a knew.
	if _, err := a.Append(ctx, "shared-1", eventlog.Exact(1)); !errors.As(err, &wr) || wr.Actual != 2 {
		t.Fatalf("empty append by a with a stale expectation: %v, want wrong revision at 2", err)
	}
	if _, err := b.Append(ctx, "shared-1", eventlog.Exact(2), newEvent("B")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, "shared-1", eventlog.Exact(2)); !errors.As(err, &wr) || wr.Actual != 3 {
		t.Fatalf("empty append by a after b appended: %v, want wrong revision at 3", err)
	}
	deadline := time.After(waitLimit)
	for want := eventlog.Position(1); want <= 4; want++ {
		select {
		case e := <-sub.Events():
			if e.Position != want {
				t.Fatalf("subscription delivered position %d, want %d", e.Position, want)
			}
		case <-deadline:
			t.Fatalf("the other log's append (position %d) did not wake the subscription", want)
		}
	}
	v := eventlog.NewChainVerifier()
	for _, e := range readAll(t, a) {
		if err := v.Check(&e); err != nil {
			t.Errorf("chain across writers: %v", err)
		}
	}
}

// A subscription finds an event whose notification never came (written
// here behind the log's back, without pg_notify) by polling.
func TestSubscriptionPollsWithoutNotification(t *testing.T) {
	schema := newSchema(t)
	l := openLog(t, postgres.Config{Schema: schema, PollInterval: 50 * time.Millisecond})
	ctx := context.Background()
	r, err := l.Append(ctx, "poll-1", eventlog.NoStream(), newEvent("A"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := l.Subscribe(ctx, r.Position)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	id := uuid.New()
	_, err = connect(t).Exec(ctx, "INSERT INTO "+table(schema, "events")+` (position, event_id, stream, revision, type,
		schema_version, shop_id, occurred_at, recorded_at, data, metadata, hash)
		VALUES ($1, $2, 'poll-2', 0, 'Quiet', 1, '', 0, 0, '', '{}', '\x00')`, int64(r.Position)+1, id.String())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-sub.Events():
		if e.ID != id {
			t.Fatalf("delivered %s, want %s", e.ID, id)
		}
	case <-time.After(waitLimit):
		t.Fatal("an event without notification was not found by polling")
	}
}

// Readers only ever see a prefix of the log: while two logs (processes)
// append concurrently, every page a reader gets starts right after the
// position it asked for and has no hole, since positions have no gaps.
func TestReadersNeverSeeAGap(t *testing.T) {
	schema := newSchema(t)
	logs := []*postgres.Log{openLog(t, postgres.Config{Schema: schema}), openLog(t, postgres.Config{Schema: schema})}
	const appenders, each = 8, 25
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := logs[i%2]
			for range each {
				evs := []eventlog.EventData{newEvent("G")}
				if i%3 == 0 {
					evs = append(evs, newEvent("G"))
				}
				if _, err := l.Append(ctx, fmt.Sprintf("gap-%d", i), eventlog.Any(), evs...); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()
	var after eventlog.Position
	done := false
	for !done {
		select {
		case <-writing:
			done = true // one last read below
		default:
		}
		page, err := logs[0].ReadAll(ctx, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if e.Position != after+1 {
				t.Fatalf("read position %d right after %d: a gap", e.Position, after)
			}
			after = e.Position
		}
		if done && len(page) > 0 {
			done = false // drain
		}
	}
	if h, err := logs[1].HeadPosition(ctx); err != nil || h != after {
		t.Fatalf("head %d, %v; the reader reached %d", h, err, after)
	}
}

// WriteHealth follows the store: while the database refuses writes (here
// a trigger the operator added, as a read-only or full server would) it
// reports the failure, probing each time; once writes pass it is healthy.
// A wrong expected revision is a client's error and leaves it healthy.
func TestWriteHealthFollowsTheStore(t *testing.T) {
	schema := newSchema(t)
	l := openLog(t, postgres.Config{Schema: schema})
	ctx := context.Background()
	if _, err := l.Append(ctx, "s-1", eventlog.NoStream(), newEvent("A")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, "s-1", eventlog.NoStream(), newEvent("A")); !errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		t.Fatalf("second NoStream append: %v", err)
	}
	if err := l.WriteHealth(ctx); err != nil {
		t.Fatalf("healthy log: %v", err)
	}
	conn := connect(t)
	fn := table(schema, "refuse_writes")
	mustExec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	mustExec("CREATE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'writes refused'; END $$")
	mustExec("CREATE TRIGGER refuse BEFORE INSERT ON " + table(schema, "events") + " FOR EACH STATEMENT EXECUTE FUNCTION " + fn + "()")
	mustExec("CREATE TRIGGER refuse BEFORE INSERT ON " + table(schema, "stream_metadata") + " FOR EACH STATEMENT EXECUTE FUNCTION " + fn + "()")
	if _, err := l.Append(ctx, "s-1", eventlog.Any(), newEvent("A")); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("append while writes are refused: %v, want ErrUnavailable", err)
	}
	for range 2 {
		if err := l.WriteHealth(ctx); !errors.Is(err, eventlog.ErrUnavailable) {
			t.Fatalf("write health while writes are refused: %v", err)
		}
	}
	mustExec("DROP TRIGGER refuse ON " + table(schema, "events"))
	mustExec("DROP TRIGGER refuse ON " + table(schema, "stream_metadata"))
	if err := l.WriteHealth(ctx); err != nil {
		t.Fatalf("write health once writes pass: %v", err)
	}
	if _, err := l.Append(ctx, "s-1", eventlog.Exact(0), newEvent("After")); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	if err := l.WriteHealth(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCloseEndsSubscriptionsWithErrClosed(t *testing.T) {
	schema := newSchema(t)
	l, err := postgres.Open(context.Background(), postgres.Config{URL: testURL(), Schema: schema})
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
	l := openLog(t, postgres.Config{})
	ctx := context.Background()
	noID := newEvent("A")
	noID.ID = uuid.Nil
	badMeta := newEvent("A")
	badMeta.Metadata.Actor = "tok_\xff"
	nulMeta := newEvent("A")
	nulMeta.Metadata.KeyIDs = []string{"a\x00b"}
	nulType := newEvent("A\x00")
	nulShop := newEvent("A")
	nulShop.ShopID = "shop\x00"
	cases := map[string]struct {
		stream string
		e      eventlog.EventData
	}{
		"empty stream":       {"", newEvent("A")},
		"NUL in stream":      {"bad\x00", newEvent("A")},
		"nil event id":       {"bad-1", noID},
		"empty type":         {"bad-1", newEvent("")},
		"NUL in type":        {"bad-1", nulType},
		"NUL in shop id":     {"bad-1", nulShop},
		"invalid UTF-8 meta": {"bad-1", badMeta},
		"NUL in key ids":     {"bad-1", nulMeta},
	}
	for name, c := range cases {
		if _, err := l.Append(ctx, c.stream, eventlog.Any(), c.e); err == nil {
			t.Errorf("%s: append succeeded", name)
		}
	}
	if h, err := l.HeadPosition(ctx); err != nil || h != 0 {
		t.Errorf("head after rejected appends = %d, %v; want 0", h, err)
	}
	if err := l.SetStreamMetadata(ctx, "bad-1", map[string]string{"k": "v\x00"}); err == nil {
		t.Error("metadata with a NUL byte was accepted")
	}
	// The log still works.
	if _, err := l.Append(ctx, "bad-1", eventlog.NoStream(), newEvent("A")); err != nil {
		t.Fatal(err)
	}
}

// SubscribeTypes delivers every event in order, with the payload of the
// types asked only; the others are skeletons that still carry their
// position, identity and type. Live appends follow the same rule.
func TestSubscribeTypesSkimsOtherTypes(t *testing.T) {
	l := openLog(t, postgres.Config{})
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
		case <-time.After(waitLimit):
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

// The writer reads under the append lock what was committed while it
// waited for it, whatever isolation level the URL makes the default.
func TestWriterIgnoresDefaultIsolation(t *testing.T) {
	schema := newSchema(t)
	sep := "?"
	if strings.Contains(testURL(), "?") {
		sep = "&"
	}
	url := testURL() + sep + "default_transaction_isolation=serializable"
	logs := []*postgres.Log{openLog(t, postgres.Config{URL: url, Schema: schema}), openLog(t, postgres.Config{URL: url, Schema: schema})}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 15 {
				if _, err := logs[i%2].Append(ctx, fmt.Sprintf("iso-%d", j%3), eventlog.Any(), newEvent("I")); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	all := readAll(t, logs[0])
	if len(all) != 8*15 {
		t.Fatalf("%d events, want %d", len(all), 8*15)
	}
	v := eventlog.NewChainVerifier()
	for i := range all {
		if err := v.Check(&all[i]); err != nil {
			t.Fatal(err)
		}
	}
}
