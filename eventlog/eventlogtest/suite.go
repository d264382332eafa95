package eventlogtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// waitTimeout bounds every wait of the suite (a subscription delivering, a
// subscription ending). It is generous so a loaded machine does not fail a
// correct adapter; a broken one still fails instead of hanging.
const waitTimeout = 15 * time.Second

// Run runs the contract suite against the adapter that open returns. open is
// called once per subtest and must return a fresh, empty log; it registers
// the log's cleanup (Close) with t.Cleanup. Closing a log twice must be
// harmless, because one subtest closes its log itself.
//
// Options add checks for guarantees only some adapters give.
func Run(t *testing.T, open func(t *testing.T) eventlog.Log, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, l eventlog.Log)
	}{
		{"ExpectedRevision/Any", testExpectAny},
		{"ExpectedRevision/NoStream", testExpectNoStream},
		{"ExpectedRevision/StreamExists", testExpectStreamExists},
		{"ExpectedRevision/Exact", testExpectExact},
		{"FailedAppendWritesNothing", testFailedAppendWritesNothing},
		{"MultiEventAppend", testMultiEventAppend},
		{"MultiEventAppendConcurrent", testMultiEventAppendConcurrent},
		{"Idempotent", testIdempotent},
		{"ReadStream", testReadStream},
		{"ReadAll", testReadAll},
		{"HeadPosition", testHeadPosition},
		{"Envelope", testEnvelope},
		{"HashChain", testHashChain},
		{"ConcurrentExact", testConcurrentExact},
		{"CanceledAppend", testCanceledAppend},
		{"Subscribe/HistoryThenLive", testSubscribeHistoryThenLive},
		{"Subscribe/FromMiddle", testSubscribeFromMiddle},
		{"Subscribe/Close", testSubscribeClose},
		{"Subscribe/CloseUnderBackpressure", testSubscribeCloseBackpressure},
		{"Subscribe/ContextCancel", testSubscribeContextCancel},
		{"StreamMetadata", testStreamMetadata},
		{"ClosedLog", testClosedLog},
	}
	if o.globalIDs {
		tests = append(tests, struct {
			name string
			fn   func(t *testing.T, l eventlog.Log)
		}{"GlobalEventIDs", testGlobalEventIDs})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// Option adds optional checks to Run.
type Option func(*options)

type options struct {
	globalIDs bool
}

// GlobalEventIDs checks that an event id is unique across the whole log:
// appending an id already used in another stream fails and writes nothing.
// The port promises idempotency within a stream only; the SQLite adapter
// also enforces global uniqueness, EventStoreDB cannot.
func GlobalEventIDs() Option { return func(o *options) { o.globalIDs = true } }

// occurred returns a timestamp with the precision every adapter must keep.
func occurred() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// event returns a new event of type typ with a fresh id.
func event(typ string) eventlog.EventData {
	return eventlog.EventData{
		ID:            uuid.New(),
		Type:          typ,
		SchemaVersion: 1,
		ShopID:        "shop_test",
		OccurredAt:    occurred(),
		Data:          []byte(`{"n":1}`),
		Metadata:      eventlog.Metadata{CorrelationID: "req_test", Actor: "system:test", Source: "system"},
	}
}

// events returns n new events of type typ.
func events(n int, typ string) []eventlog.EventData {
	out := make([]eventlog.EventData, n)
	for i := range out {
		out[i] = event(typ)
		out[i].Data = fmt.Appendf(nil, `{"i":%d}`, i)
	}
	return out
}

func mustAppend(t testing.TB, l eventlog.Log, stream string, exp eventlog.ExpectedRevision, evs ...eventlog.EventData) eventlog.AppendResult {
	t.Helper()
	res, err := l.Append(context.Background(), stream, exp, evs...)
	if err != nil {
		t.Fatalf("append %d events to %s (expected %s): %v", len(evs), stream, exp, err)
	}
	return res
}

// readStream returns every event of stream.
func readStream(t testing.TB, l eventlog.Log, stream string) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for {
		page, err := l.ReadStream(context.Background(), stream, uint64(len(out)), 100)
		if err != nil {
			t.Fatalf("read stream %s: %v", stream, err)
		}
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
	}
}

// readAll returns every event of the log, paging.
func readAll(t testing.TB, l eventlog.Log) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	var after eventlog.Position
	for {
		page, err := l.ReadAll(context.Background(), after, 100)
		if err != nil {
			t.Fatalf("read all after %d: %v", after, err)
		}
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Position
	}
}

func head(t testing.TB, l eventlog.Log) eventlog.Position {
	t.Helper()
	p, err := l.HeadPosition(context.Background())
	if err != nil {
		t.Fatalf("head position: %v", err)
	}
	return p
}

// wantWrongRevision checks that err is a *WrongRevisionError reporting the
// given actual state.
func wantWrongRevision(t testing.TB, err error, stream string, actual uint64, exists bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("append to %s succeeded, want a wrong-expected-revision error", stream)
	}
	if !errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		t.Errorf("errors.Is(%v, ErrWrongExpectedRevision) = false", err)
	}
	var wr *eventlog.WrongRevisionError
	if !errors.As(err, &wr) {
		t.Fatalf("error %v (%T) is not a *WrongRevisionError", err, err)
	}
	if wr.Stream != stream {
		t.Errorf("WrongRevisionError.Stream = %q, want %q", wr.Stream, stream)
	}
	if wr.ActualExists != exists {
		t.Errorf("WrongRevisionError.ActualExists = %v, want %v", wr.ActualExists, exists)
	}
	if exists && wr.Actual != actual {
		t.Errorf("WrongRevisionError.Actual = %d, want %d", wr.Actual, actual)
	}
}

// wantRevisions checks that evs are revisions from..from+len-1 of stream
// with strictly increasing positions.
func wantRevisions(t testing.TB, evs []eventlog.Event, stream string, from uint64, n int) {
	t.Helper()
	if len(evs) != n {
		t.Fatalf("got %d events of %s, want %d", len(evs), stream, n)
	}
	for i, e := range evs {
		if e.StreamID != stream {
			t.Errorf("event %d: stream %q, want %q", i, e.StreamID, stream)
		}
		if e.Revision != from+uint64(i) {
			t.Errorf("event %d: revision %d, want %d", i, e.Revision, from+uint64(i))
		}
		if i > 0 && e.Position <= evs[i-1].Position {
			t.Errorf("event %d: position %d not after %d", i, e.Position, evs[i-1].Position)
		}
	}
}

func testExpectAny(t *testing.T, l eventlog.Log) {
	r := mustAppend(t, l, "any-1", eventlog.Any(), event("A"))
	if r.NextExpectedRevision != 0 {
		t.Errorf("first append: next expected revision %d, want 0", r.NextExpectedRevision)
	}
	r = mustAppend(t, l, "any-1", eventlog.Any(), event("A"), event("A"))
	if r.NextExpectedRevision != 2 {
		t.Errorf("second append: next expected revision %d, want 2", r.NextExpectedRevision)
	}
	wantRevisions(t, readStream(t, l, "any-1"), "any-1", 0, 3)
}

func testExpectNoStream(t *testing.T, l eventlog.Log) {
	r := mustAppend(t, l, "nostream-1", eventlog.NoStream(), event("A"))
	if r.NextExpectedRevision != 0 || r.Position == 0 {
		t.Errorf("append result %+v, want revision 0 and a position", r)
	}
	_, err := l.Append(context.Background(), "nostream-1", eventlog.NoStream(), event("A"))
	wantWrongRevision(t, err, "nostream-1", 0, true)
	wantRevisions(t, readStream(t, l, "nostream-1"), "nostream-1", 0, 1)
}

func testExpectStreamExists(t *testing.T, l eventlog.Log) {
	_, err := l.Append(context.Background(), "exists-1", eventlog.StreamExists(), event("A"))
	wantWrongRevision(t, err, "exists-1", 0, false)
	mustAppend(t, l, "exists-1", eventlog.NoStream(), event("A"))
	r := mustAppend(t, l, "exists-1", eventlog.StreamExists(), event("A"))
	if r.NextExpectedRevision != 1 {
		t.Errorf("next expected revision %d, want 1", r.NextExpectedRevision)
	}
	wantRevisions(t, readStream(t, l, "exists-1"), "exists-1", 0, 2)
}

func testExpectExact(t *testing.T, l eventlog.Log) {
	_, err := l.Append(context.Background(), "exact-1", eventlog.Exact(0), event("A"))
	wantWrongRevision(t, err, "exact-1", 0, false)
	r := mustAppend(t, l, "exact-1", eventlog.NoStream(), event("A"), event("A"))
	if r.NextExpectedRevision != 1 {
		t.Fatalf("next expected revision %d, want 1", r.NextExpectedRevision)
	}
	r = mustAppend(t, l, "exact-1", eventlog.Exact(1), event("A"))
	if r.NextExpectedRevision != 2 {
		t.Errorf("next expected revision %d, want 2", r.NextExpectedRevision)
	}
	for _, stale := range []uint64{0, 1, 3} {
		_, err = l.Append(context.Background(), "exact-1", eventlog.Exact(stale), event("A"))
		wantWrongRevision(t, err, "exact-1", 2, true)
	}
	wantRevisions(t, readStream(t, l, "exact-1"), "exact-1", 0, 3)
}

func testFailedAppendWritesNothing(t *testing.T, l eventlog.Log) {
	mustAppend(t, l, "fail-1", eventlog.NoStream(), events(2, "A")...)
	before := head(t, l)
	failures := []eventlog.ExpectedRevision{eventlog.NoStream(), eventlog.Exact(0), eventlog.Exact(7)}
	for _, exp := range failures {
		_, err := l.Append(context.Background(), "fail-1", exp, events(3, "B")...)
		wantWrongRevision(t, err, "fail-1", 1, true)
	}
	_, err := l.Append(context.Background(), "fail-2", eventlog.StreamExists(), events(3, "B")...)
	wantWrongRevision(t, err, "fail-2", 0, false)
	if got := head(t, l); got != before {
		t.Errorf("head position moved from %d to %d after failed appends", before, got)
	}
	wantRevisions(t, readStream(t, l, "fail-1"), "fail-1", 0, 2)
	if evs := readStream(t, l, "fail-2"); len(evs) != 0 {
		t.Errorf("failed append created stream fail-2 with %d events", len(evs))
	}
	// The log still accepts appends after failures.
	r := mustAppend(t, l, "fail-1", eventlog.Exact(1), event("C"))
	if r.NextExpectedRevision != 2 {
		t.Errorf("next expected revision %d, want 2", r.NextExpectedRevision)
	}
}

func testMultiEventAppend(t *testing.T, l eventlog.Log) {
	in := events(5, "Multi")
	r := mustAppend(t, l, "multi-1", eventlog.NoStream(), in...)
	if r.NextExpectedRevision != 4 {
		t.Errorf("next expected revision %d, want 4", r.NextExpectedRevision)
	}
	got := readStream(t, l, "multi-1")
	wantRevisions(t, got, "multi-1", 0, 5)
	for i := range got {
		if got[i].ID != in[i].ID {
			t.Errorf("revision %d holds event %s, want %s", i, got[i].ID, in[i].ID)
		}
	}
	if last := got[len(got)-1].Position; r.Position != last {
		t.Errorf("append result position %d, want the last event's %d", r.Position, last)
	}
	// Appending no events checks the expectation only.
	r0, err := l.Append(context.Background(), "multi-1", eventlog.Exact(4))
	if err != nil {
		t.Fatalf("empty append with the right expectation: %v", err)
	}
	if r0.NextExpectedRevision != 4 {
		t.Errorf("empty append: next expected revision %d, want 4", r0.NextExpectedRevision)
	}
	_, err = l.Append(context.Background(), "multi-1", eventlog.Exact(3))
	wantWrongRevision(t, err, "multi-1", 4, true)
	wantRevisions(t, readStream(t, l, "multi-1"), "multi-1", 0, 5)
}

func testMultiEventAppendConcurrent(t *testing.T, l eventlog.Log) {
	const writers, appends, size = 4, 10, 3
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("multic-%d", w)
			for range appends {
				if _, err := l.Append(context.Background(), stream, eventlog.Any(), events(size, "Multi")...); err != nil {
					t.Errorf("append to %s: %v", stream, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	byStream := map[string][]eventlog.Event{}
	all := readAll(t, l)
	for i, e := range all {
		if i > 0 && e.Position <= all[i-1].Position {
			t.Fatalf("ReadAll positions not increasing: %d after %d", e.Position, all[i-1].Position)
		}
		byStream[e.StreamID] = append(byStream[e.StreamID], e)
	}
	for w := range writers {
		stream := fmt.Sprintf("multic-%d", w)
		wantRevisions(t, byStream[stream], stream, 0, appends*size)
	}
}

func testIdempotent(t *testing.T, l eventlog.Log) {
	ctx := context.Background()
	pair := events(2, "Idem")
	first := mustAppend(t, l, "idem-1", eventlog.NoStream(), pair...)
	before := head(t, l)
	for _, exp := range []eventlog.ExpectedRevision{eventlog.NoStream(), eventlog.Any(), eventlog.Exact(0), eventlog.StreamExists()} {
		again, err := l.Append(ctx, "idem-1", exp, pair...)
		if err != nil {
			t.Fatalf("re-append with %s: %v", exp, err)
		}
		if again != first {
			t.Errorf("re-append with %s returned %+v, want the earlier %+v", exp, again, first)
		}
	}
	if got := head(t, l); got != before {
		t.Errorf("re-append moved the head from %d to %d", before, got)
	}
	wantRevisions(t, readStream(t, l, "idem-1"), "idem-1", 0, 2)

	// A repeat is recognised even after the stream moved on.
	third := event("Idem")
	r3 := mustAppend(t, l, "idem-1", eventlog.Exact(1), third)
	again, err := l.Append(ctx, "idem-1", eventlog.NoStream(), pair...)
	if err != nil || again != first {
		t.Errorf("re-append after the stream moved on = %+v, %v; want %+v, nil", again, err, first)
	}
	again, err = l.Append(ctx, "idem-1", eventlog.Exact(1), third)
	if err != nil || again != r3 {
		t.Errorf("re-append of a single event = %+v, %v; want %+v, nil", again, err, r3)
	}
	wantRevisions(t, readStream(t, l, "idem-1"), "idem-1", 0, 3)

	// Concurrent repeats of one delivery: exactly one write.
	delivery := eventlog.EventData{
		ID: eventlog.DeterministicID("test", uuid.NewString()), Type: "Delivered",
		SchemaVersion: 1, OccurredAt: occurred(), Data: []byte("x"),
	}
	var wg sync.WaitGroup
	results := make([]eventlog.AppendResult, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Append(ctx, "idem-4", eventlog.NoStream(), delivery)
			if err != nil {
				t.Errorf("concurrent repeat %d: %v", i, err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r != results[0] {
			t.Errorf("concurrent repeat %d returned %+v, repeat 0 %+v", i, r, results[0])
		}
	}
	wantRevisions(t, readStream(t, l, "idem-4"), "idem-4", 0, 1)
}

func testReadStream(t *testing.T, l eventlog.Log) {
	ctx := context.Background()
	in := events(10, "Read")
	mustAppend(t, l, "read-1", eventlog.NoStream(), in[:4]...)
	mustAppend(t, l, "other-1", eventlog.NoStream(), event("Other"))
	mustAppend(t, l, "read-1", eventlog.Exact(3), in[4:]...)
	cases := []struct {
		from  uint64
		limit int
		want  int
	}{{0, 100, 10}, {3, 4, 4}, {8, 10, 2}, {9, 1, 1}, {10, 5, 0}, {50, 5, 0}}
	for _, c := range cases {
		got, err := l.ReadStream(ctx, "read-1", c.from, c.limit)
		if err != nil {
			t.Fatalf("ReadStream(from %d, limit %d): %v", c.from, c.limit, err)
		}
		wantRevisions(t, got, "read-1", c.from, c.want)
		for i, e := range got {
			if e.ID != in[int(c.from)+i].ID {
				t.Errorf("ReadStream(from %d): event %d is %s, want %s", c.from, i, e.ID, in[int(c.from)+i].ID)
			}
		}
	}
	got, err := l.ReadStream(ctx, "never-written", 0, 10)
	if err != nil || len(got) != 0 {
		t.Errorf("ReadStream of an unknown stream = %d events, %v; want none, nil", len(got), err)
	}
}

func testReadAll(t *testing.T, l eventlog.Log) {
	ctx := context.Background()
	if got, err := l.ReadAll(ctx, 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("ReadAll of an empty log = %d events, %v; want none, nil", len(got), err)
	}
	var ids []uuid.UUID
	for i := range 30 {
		e := event("All")
		ids = append(ids, e.ID)
		mustAppend(t, l, fmt.Sprintf("all-%d", i%3), eventlog.Any(), e)
	}
	all, err := l.ReadAll(ctx, 0, 1000)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if len(all) != 30 {
		t.Fatalf("ReadAll returned %d events, want 30", len(all))
	}
	for i, e := range all {
		if e.ID != ids[i] {
			t.Errorf("ReadAll event %d is %s, want %s (append order)", i, e.ID, ids[i])
		}
		if i > 0 && e.Position <= all[i-1].Position {
			t.Errorf("ReadAll positions not strictly increasing: %d after %d", e.Position, all[i-1].Position)
		}
	}
	cases := []struct {
		after   eventlog.Position
		limit   int
		from, n int
	}{
		{0, 10, 0, 10},
		{all[9].Position, 10, 10, 10},
		{all[27].Position, 10, 28, 2},
		{all[29].Position, 10, 0, 0},
		{all[0].Position, 1, 1, 1},
	}
	for _, c := range cases {
		got, err := l.ReadAll(ctx, c.after, c.limit)
		if err != nil {
			t.Fatalf("ReadAll(after %d, limit %d): %v", c.after, c.limit, err)
		}
		if len(got) != c.n {
			t.Fatalf("ReadAll(after %d, limit %d) returned %d events, want %d", c.after, c.limit, len(got), c.n)
		}
		for i, e := range got {
			if e.Position != all[c.from+i].Position || e.ID != all[c.from+i].ID {
				t.Errorf("ReadAll(after %d): event %d at position %d, want %d", c.after, i, e.Position, all[c.from+i].Position)
			}
		}
	}
	// Reading after a position between two events starts at the next one.
	if all[1].Position > all[0].Position+1 {
		got, err := l.ReadAll(ctx, all[0].Position+1, 1)
		if err != nil || len(got) != 1 || got[0].Position != all[1].Position {
			t.Errorf("ReadAll after a gap position = %v, %v; want the event at %d", got, err, all[1].Position)
		}
	}
}

func testHeadPosition(t *testing.T, l eventlog.Log) {
	if got := head(t, l); got != 0 {
		t.Fatalf("head position of an empty log = %d, want 0", got)
	}
	r1 := mustAppend(t, l, "head-1", eventlog.NoStream(), events(3, "Head")...)
	if got := head(t, l); got != r1.Position {
		t.Errorf("head position = %d, want %d", got, r1.Position)
	}
	r2 := mustAppend(t, l, "head-2", eventlog.NoStream(), event("Head"))
	if r2.Position <= r1.Position {
		t.Errorf("second append position %d not after %d", r2.Position, r1.Position)
	}
	if got := head(t, l); got != r2.Position {
		t.Errorf("head position = %d, want %d", got, r2.Position)
	}
	// A failed append does not move the head.
	_, err := l.Append(context.Background(), "head-2", eventlog.NoStream(), event("Head"))
	wantWrongRevision(t, err, "head-2", 0, true)
	if got := head(t, l); got != r2.Position {
		t.Errorf("head position after a failed append = %d, want %d", got, r2.Position)
	}
}

func metadataEqual(a, b eventlog.Metadata) bool {
	return a.CorrelationID == b.CorrelationID && a.CausationID == b.CausationID &&
		a.Actor == b.Actor && a.Source == b.Source && slices.Equal(a.KeyIDs, b.KeyIDs)
}

func checkEnvelope(t *testing.T, where string, got eventlog.Event, want eventlog.EventData, stream string, rev uint64, pos eventlog.Position) {
	t.Helper()
	if got.ID != want.ID {
		t.Errorf("%s: ID %s, want %s", where, got.ID, want.ID)
	}
	if got.Type != want.Type {
		t.Errorf("%s: Type %q, want %q", where, got.Type, want.Type)
	}
	if got.SchemaVersion != want.SchemaVersion {
		t.Errorf("%s: SchemaVersion %d, want %d", where, got.SchemaVersion, want.SchemaVersion)
	}
	if got.ShopID != want.ShopID {
		t.Errorf("%s: ShopID %q, want %q", where, got.ShopID, want.ShopID)
	}
	if !got.OccurredAt.Equal(want.OccurredAt) {
		t.Errorf("%s: OccurredAt %s, want %s", where, got.OccurredAt, want.OccurredAt)
	}
	if got.OccurredAt.Location() != time.UTC {
		t.Errorf("%s: OccurredAt in %s, want UTC", where, got.OccurredAt.Location())
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Errorf("%s: Data %q, want %q", where, got.Data, want.Data)
	}
	if !metadataEqual(got.Metadata, want.Metadata) {
		t.Errorf("%s: Metadata %+v, want %+v", where, got.Metadata, want.Metadata)
	}
	if got.StreamID != stream || got.Revision != rev || got.Position != pos {
		t.Errorf("%s: at %s@%d position %d, want %s@%d position %d", where, got.StreamID, got.Revision, got.Position, stream, rev, pos)
	}
	if got.RecordedAt.IsZero() || got.RecordedAt.Location() != time.UTC {
		t.Errorf("%s: RecordedAt %v, want a UTC time", where, got.RecordedAt)
	}
	if len(got.Hash) == 0 {
		t.Errorf("%s: no Hash", where)
	}
}

func testEnvelope(t *testing.T, l eventlog.Log) {
	full := eventlog.EventData{
		ID:            uuid.New(),
		Type:          "EnvelopeChecked",
		SchemaVersion: 3,
		ShopID:        "shop_envelope",
		// Not UTC on the way in, microsecond precision: UTC on the way out.
		OccurredAt: time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.FixedZone("UTC+2", 2*3600)),
		Data:       []byte{0, 1, 2, 0xff, 0xfe, '{', '}', 0},
		Metadata: eventlog.Metadata{
			CorrelationID: "req_0123456789",
			CausationID:   "evt_cause",
			Actor:         "tok_abc",
			Source:        "api",
			KeyIDs:        []string{"shop:shop_envelope", "customer:cus_1"},
		},
	}
	bare := eventlog.EventData{ID: uuid.New(), Type: "Bare", OccurredAt: occurred()}
	r := mustAppend(t, l, "envelope-1", eventlog.NoStream(), full, bare)
	got := readStream(t, l, "envelope-1")
	if len(got) != 2 {
		t.Fatalf("read %d events, want 2", len(got))
	}
	checkEnvelope(t, "ReadStream full", got[0], full, "envelope-1", 0, got[0].Position)
	checkEnvelope(t, "ReadStream bare", got[1], bare, "envelope-1", 1, r.Position)
	all := readAll(t, l)
	if len(all) != 2 {
		t.Fatalf("ReadAll returned %d events, want 2", len(all))
	}
	checkEnvelope(t, "ReadAll full", all[0], full, "envelope-1", 0, got[0].Position)
	checkEnvelope(t, "ReadAll bare", all[1], bare, "envelope-1", 1, r.Position)
	if !reflect.DeepEqual(got[0].Hash, all[0].Hash) || !reflect.DeepEqual(got[1].PrevHash, all[1].PrevHash) {
		t.Error("ReadStream and ReadAll disagree on hashes")
	}
	if d := time.Since(got[0].RecordedAt); d < -time.Hour || d > time.Hour {
		t.Errorf("RecordedAt %s is not close to now", got[0].RecordedAt)
	}
}

func testHashChain(t *testing.T, l eventlog.Log) {
	const streams, writersPerStream, rounds = 3, 2, 10
	var wg sync.WaitGroup
	for s := range streams {
		for range writersPerStream {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := fmt.Sprintf("chain-%d", s)
				for i := range rounds {
					if _, err := l.Append(context.Background(), stream, eventlog.Any(), events(1+i%2, "Chained")...); err != nil {
						t.Errorf("append to %s: %v", stream, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	for s := range streams {
		stream := fmt.Sprintf("chain-%d", s)
		evs := readStream(t, l, stream)
		wantRevisions(t, evs, stream, 0, writersPerStream*rounds*3/2)
		for i := range evs {
			e := &evs[i]
			var prev []byte
			if i > 0 {
				prev = evs[i-1].Hash
			}
			if !bytes.Equal(e.PrevHash, prev) {
				t.Errorf("%s@%d: PrevHash %x, want the previous event's hash %x", stream, e.Revision, e.PrevHash, prev)
			}
			if want := eventlog.ChainHash(e.PrevHash, e); !bytes.Equal(e.Hash, want) {
				t.Errorf("%s@%d: Hash %x, want ChainHash %x", stream, e.Revision, e.Hash, want)
			}
		}
	}
	all := readAll(t, l)
	v := eventlog.NewChainVerifier()
	for i := range all {
		if err := v.Check(&all[i]); err != nil {
			t.Fatalf("chain verifier rejects the log: %v", err)
		}
	}
	// The verifier is not vacuous: altered content is caught.
	tampered := all[len(all)-1]
	tampered.Data = append([]byte("x"), tampered.Data...)
	v = eventlog.NewChainVerifier()
	var caught bool
	for i := range all {
		e := &all[i]
		if i == len(all)-1 {
			e = &tampered
		}
		if v.Check(e) != nil {
			caught = true
		}
	}
	if !caught {
		t.Error("chain verifier accepts a tampered event")
	}
}

func testConcurrentExact(t *testing.T, l eventlog.Log) {
	const contenders, rounds = 16, 20
	stream := "race-1"
	for round := range rounds {
		exp := eventlog.NoStream()
		if round > 0 {
			exp = eventlog.Exact(uint64(round - 1))
		}
		start := make(chan struct{})
		errs := make([]error, contenders)
		ids := make([]uuid.UUID, contenders)
		var wg sync.WaitGroup
		for c := range contenders {
			wg.Add(1)
			e := event("Raced")
			ids[c] = e.ID
			go func() {
				defer wg.Done()
				<-start
				_, errs[c] = l.Append(context.Background(), stream, exp, e)
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for c, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("round %d: contenders %d and %d both won", round, winner, c)
				}
				winner = c
				continue
			}
			wantWrongRevision(t, err, stream, uint64(round), true)
		}
		if winner < 0 {
			t.Fatalf("round %d: no contender won", round)
		}
		got, err := l.ReadStream(context.Background(), stream, uint64(round), 2)
		if err != nil {
			t.Fatalf("read round %d: %v", round, err)
		}
		if len(got) != 1 || got[0].ID != ids[winner] {
			t.Fatalf("round %d: stream holds %d events from the round, want the winner's only", round, len(got))
		}
	}
	wantRevisions(t, readStream(t, l, stream), stream, 0, rounds)
}

func testCanceledAppend(t *testing.T, l eventlog.Log) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, "canceled-1", eventlog.Any(), event("A")); !errors.Is(err, context.Canceled) {
		t.Errorf("append with a canceled context: %v, want context.Canceled", err)
	}
	// The log keeps working.
	mustAppend(t, l, "canceled-2", eventlog.NoStream(), event("A"))
}

func testStreamMetadata(t *testing.T, l eventlog.Log) {
	ctx := context.Background()
	get := func(stream string) map[string]string {
		t.Helper()
		m, err := l.StreamMetadata(ctx, stream)
		if err != nil {
			t.Fatalf("stream metadata of %s: %v", stream, err)
		}
		return m
	}
	if m := get("meta-1"); m != nil {
		t.Errorf("metadata of a stream without any = %v, want nil", m)
	}
	first := map[string]string{"retention": "30d", "owner": "shop_1"}
	if err := l.SetStreamMetadata(ctx, "meta-1", first); err != nil {
		t.Fatalf("set stream metadata: %v", err)
	}
	if m := get("meta-1"); !reflect.DeepEqual(m, first) {
		t.Errorf("metadata = %v, want %v", m, first)
	}
	second := map[string]string{"erased": "true"}
	if err := l.SetStreamMetadata(ctx, "meta-1", second); err != nil {
		t.Fatalf("replace stream metadata: %v", err)
	}
	if m := get("meta-1"); !reflect.DeepEqual(m, second) {
		t.Errorf("replaced metadata = %v, want %v", m, second)
	}
	if m := get("meta-2"); m != nil {
		t.Errorf("metadata of another stream = %v, want nil", m)
	}
	if err := l.SetStreamMetadata(ctx, "meta-1", map[string]string{}); err != nil {
		t.Fatalf("clear stream metadata: %v", err)
	}
	if m := get("meta-1"); len(m) != 0 {
		t.Errorf("cleared metadata = %v, want none", m)
	}
	// Metadata is not an event.
	if got := head(t, l); got != 0 {
		t.Errorf("setting metadata moved the head to %d", got)
	}
}

func testClosedLog(t *testing.T, l eventlog.Log) {
	ctx := context.Background()
	mustAppend(t, l, "closed-1", eventlog.NoStream(), event("A"))
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := l.Append(ctx, "closed-1", eventlog.Any(), event("A")); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := l.ReadStream(ctx, "closed-1", 0, 10); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("ReadStream after Close: %v, want ErrClosed", err)
	}
	if _, err := l.ReadAll(ctx, 0, 10); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("ReadAll after Close: %v, want ErrClosed", err)
	}
	if _, err := l.HeadPosition(ctx); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("HeadPosition after Close: %v, want ErrClosed", err)
	}
	if _, err := l.Subscribe(ctx, 0); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("Subscribe after Close: %v, want ErrClosed", err)
	}
	if _, err := l.StreamMetadata(ctx, "closed-1"); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("StreamMetadata after Close: %v, want ErrClosed", err)
	}
	if err := l.SetStreamMetadata(ctx, "closed-1", map[string]string{"a": "b"}); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("SetStreamMetadata after Close: %v, want ErrClosed", err)
	}
}

func testGlobalEventIDs(t *testing.T, l eventlog.Log) {
	ctx := context.Background()
	pair := []eventlog.EventData{event("Idem"), event("Idem")}
	mustAppend(t, l, "idem-1", eventlog.NoStream(), pair...)
	before := head(t, l)
	// An id already used in another stream is an error and writes nothing.
	if _, err := l.Append(ctx, "idem-2", eventlog.Any(), pair[0]); err == nil {
		t.Error("append of an event id already used in another stream succeeded")
	}
	// Atomicity: the first event is new, the second's id is taken.
	if _, err := l.Append(ctx, "idem-3", eventlog.NoStream(), event("Idem"), pair[1]); err == nil {
		t.Error("append whose second event id is already used succeeded")
	}
	if got := head(t, l); got != before {
		t.Errorf("rejected appends moved the head from %d to %d", before, got)
	}
	for _, s := range []string{"idem-2", "idem-3"} {
		if evs := readStream(t, l, s); len(evs) != 0 {
			t.Errorf("rejected append wrote %d events to %s", len(evs), s)
		}
	}
}
