package clickhouse

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// fakeServer records inserts; it fails the next failures inserts.
type fakeServer struct {
	mu       sync.Mutex
	failures int
	calls    []insertCall
}

func (f *fakeServer) fail(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = n
}

type insertCall struct {
	query, token string
	rows         [][]any
	ok           bool
}

func (f *fakeServer) insert(_ context.Context, query, token string, rows [][]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures > 0 {
		f.failures--
		f.calls = append(f.calls, insertCall{query, token, rows, false})
		return errors.New("connection reset")
	}
	f.calls = append(f.calls, insertCall{query, token, rows, true})
	return nil
}

func (f *fakeServer) snapshot() []insertCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFakeStore(t *testing.T, cfg Config) (*Store, *fakeServer) {
	t.Helper()
	f := &fakeServer{}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = time.Hour // the background loop stays idle
	}
	s := newStore(cfg, nil, f)
	s.tables.Register([]versioned.Table{orders})
	t.Cleanup(func() { _ = s.Close() })
	return s, f
}

func change(order string, pos uint64) versioned.Change {
	return versioned.Change{Table: orders.Name, Row: versioned.Row{Values: []any{order, "s1", int64(pos), 0.5}}}
}

func TestFailedSendKeepsRowsAndRetriesWithTheSameToken(t *testing.T) {
	ctx := context.Background()
	s, f := newFakeStore(t, Config{URL: "x"})
	if err := s.Write(ctx, "attribution", 10, []versioned.Change{change("o1", 10), change("o2", 10)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, "attribution", 11, []versioned.Change{change("o3", 11)}); err != nil {
		t.Fatal(err)
	}
	f.fail(1)
	if err := s.Flush(ctx); err == nil {
		t.Fatal("flush succeeded while the insert failed")
	}
	calls := f.snapshot()
	if len(calls) != 1 || calls[0].ok {
		t.Fatalf("after a failed insert: %d calls %+v; want one failed insert and no checkpoint", len(calls), calls)
	}
	if got := s.b.Queued(); got != 3 {
		t.Fatalf("queued after failure: %d, want 3", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("retry: %v", err)
	}
	calls = f.snapshot()
	if len(calls) != 3 {
		t.Fatalf("after the retry: %d calls, want failed insert, insert, checkpoint: %+v", len(calls), calls)
	}
	first, retry, cp := calls[0], calls[1], calls[2]
	if retry.token == "" || retry.token != first.token || !slices.EqualFunc(retry.rows, first.rows, slices.Equal) {
		t.Fatalf("retry token %q rows %v; want token %q and the same rows", retry.token, retry.rows, first.token)
	}
	if retry.query != insertSQL(orders) || len(retry.rows) != 3 {
		t.Fatalf("retry insert %q with %d rows", retry.query, len(retry.rows))
	}
	if cp.query != insertCheckpointsSQL || !slices.Equal(cp.rows[0], []any{"attribution", uint64(11)}) || cp.token != "" {
		t.Fatalf("checkpoint insert after rows: %+v", cp)
	}
	if err := s.Flush(ctx); err != nil || len(f.snapshot()) != 3 {
		t.Fatalf("an empty flush sent something: %v, %d calls", err, len(f.snapshot()))
	}
}

func TestCheckpointWaitsForEveryTable(t *testing.T) {
	ctx := context.Background()
	other := orders
	other.Name = "touchpoints"
	s, f := newFakeStore(t, Config{URL: "x", MaxRows: 2})
	s.tables.Register([]versioned.Table{other})
	// Position 5 fills orders' batch (sealed, sent on the next flush);
	// position 6 leaves touchpoints' batch open.
	if err := s.Write(ctx, "p", 5, []versioned.Change{change("o1", 5), change("o2", 5)}); err != nil {
		t.Fatal(err)
	}
	tp := change("t1", 6)
	tp.Table = other.Name
	if err := s.Write(ctx, "p", 6, []versioned.Change{tp}); err != nil {
		t.Fatal(err)
	}
	if err := s.b.FlushDue(ctx); err != nil {
		t.Fatal(err)
	}
	calls := f.snapshot()
	if len(calls) != 2 || calls[0].query != insertSQL(orders) || !slices.Equal(calls[1].rows[0], []any{"p", uint64(5)}) {
		t.Fatalf("after sending the full batch: %+v; want orders' insert then checkpoint 5 (6 still queued)", calls)
	}
}

func TestBatchFlushesOnSizeAndOnDelay(t *testing.T) {
	ctx := context.Background()
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, f := newFakeStore(t, Config{URL: "x", MaxRows: 3, MaxDelay: time.Hour, Now: c.Now})
	for i := uint64(1); i <= 2; i++ {
		if err := s.Write(ctx, "p", i, []versioned.Change{change("o", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.b.FlushDue(ctx); err != nil || len(f.snapshot()) != 0 {
		t.Fatalf("2 rows of 3, no delay: %v, %d inserts; want none", err, len(f.snapshot()))
	}
	if err := s.Write(ctx, "p", 3, []versioned.Change{change("o", 3)}); err != nil {
		t.Fatal(err)
	}
	if err := s.b.FlushDue(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := f.snapshot(); len(calls) != 2 || len(calls[0].rows) != 3 {
		t.Fatalf("full batch: %+v; want one insert of 3 rows and a checkpoint", calls)
	}
	if err := s.Write(ctx, "p", 4, []versioned.Change{change("o", 4)}); err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour - time.Nanosecond)
	if err := s.b.FlushDue(ctx); err != nil || len(f.snapshot()) != 2 {
		t.Fatalf("before the delay: %v, %d calls; want 2", err, len(f.snapshot()))
	}
	c.add(time.Nanosecond)
	if err := s.b.FlushDue(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := f.snapshot(); len(calls) != 4 || len(calls[2].rows) != 1 || !slices.Equal(calls[3].rows[0], []any{"p", uint64(4)}) {
		t.Fatalf("after the delay: %+v; want the 1-row insert and checkpoint 4", calls)
	}
}

func TestTokenIsStableAndDistinct(t *testing.T) {
	ctx := context.Background()
	tokens := func(failures int, rows ...versioned.Change) []string {
		s, f := newFakeStore(t, Config{URL: "x"})
		f.fail(failures)
		if err := s.Write(ctx, "p", 1, rows); err != nil {
			t.Fatal(err)
		}
		for i := 0; i <= failures; i++ {
			_ = s.Flush(ctx)
		}
		var out []string
		for _, c := range f.snapshot() {
			if c.query != insertCheckpointsSQL {
				out = append(out, c.token)
			}
		}
		return out
	}
	a := tokens(2, change("o1", 1))
	if len(a) != 3 || a[0] != a[1] || a[1] != a[2] {
		t.Fatalf("tokens over retries: %v, want 3 equal", a)
	}
	if b := tokens(0, change("o1", 1)); b[0] != a[0] {
		t.Fatalf("same content, another store: %s != %s", b[0], a[0])
	}
	if c := tokens(0, change("o2", 1)); c[0] == a[0] {
		t.Fatalf("different rows, same token %s", c[0])
	}
}
