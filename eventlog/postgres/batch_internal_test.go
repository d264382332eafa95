package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/eventlog"
)

// These tests hold the append lock from outside to make a batch's
// membership certain, so they live in the package itself.

func internalURL() string {
	if s := os.Getenv("CGP_TEST_POSTGRES_URL"); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func openInternal(t *testing.T) (*Log, *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, internalURL())
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "eventlog_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		_ = admin.Close(ctx)
	})
	l, err := Open(ctx, Config{URL: internalURL(), Schema: schema})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, admin
}

func testEvent(typ string) eventlog.EventData {
	return eventlog.EventData{ID: uuid.New(), Type: typ, SchemaVersion: 1, OccurredAt: time.Now().UTC(), Data: []byte("{}")}
}

// waitLockWaiter waits until a transaction waits for the log's append lock.
func waitLockWaiter(t *testing.T, admin *pgx.Conn, l *Log) {
	t.Helper()
	waitUntil(t, "the writer waiting for the append lock", func() bool {
		var n int
		err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND classid = $1::bigint::oid AND objid = ($2::bigint & 4294967295)::oid AND objsubid = 2`,
			int64(uint32(appendLockClass)), int64(l.lockKey)).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}

// waitUntil polls cond on a ticker until it holds, failing the test after
// a generous deadline (the machine may be busy).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		<-tick.C
	}
}

// One group commit carries appends that succeed and appends that fail
// their expectation (against the database, or against an earlier append
// of the same batch): each gets its own answer, and the failures write
// nothing and fail nobody else.
func TestBatchConflictFailsOnlyItsAppend(t *testing.T) {
	l, admin := openInternal(t)
	ctx := context.Background()
	if _, err := l.Append(ctx, "taken", eventlog.NoStream(), testEvent("Seed")); err != nil {
		t.Fatal(err)
	}
	before := l.Stats()
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", appendLockClass, l.lockKey); err != nil {
		t.Fatal(err)
	}
	type call struct {
		stream  string
		exp     eventlog.ExpectedRevision
		wantErr bool
	}
	first := call{"first", eventlog.NoStream(), false} // alone in a batch, waiting for the lock
	calls := []call{
		{"fresh-1", eventlog.NoStream(), false},
		{"taken", eventlog.NoStream(), true}, // the database has it
		{"fresh-2", eventlog.NoStream(), false},
		{"taken", eventlog.Exact(0), false},
		{"taken", eventlog.Exact(0), true}, // the batch's previous append moved it
		{"fresh-2", eventlog.Exact(0), false},
		{"fresh-3", eventlog.StreamExists(), true},
		{"first", eventlog.Exact(0), false}, // after the previous batch
	}
	results := make(chan error, len(calls)+1)
	errs := make([]error, len(calls))
	go func() {
		_, err := l.Append(ctx, first.stream, first.exp, testEvent("First"))
		results <- err
	}()
	waitLockWaiter(t, admin, l)
	done := make(chan int, len(calls))
	for i, c := range calls {
		go func() {
			_, errs[i] = l.Append(ctx, c.stream, c.exp, testEvent("Batched"))
			done <- i
		}()
		// Queue them in order, so the batch decides them in order.
		waitUntil(t, fmt.Sprintf("append %d queued", i), func() bool { return len(l.reqs) == i+1 })
	}
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", appendLockClass, l.lockKey); err != nil {
		t.Fatal(err)
	}
	if err := <-results; err != nil {
		t.Fatalf("first append: %v", err)
	}
	for range calls {
		<-done
	}
	for i, c := range calls {
		if c.wantErr {
			if !errors.Is(errs[i], eventlog.ErrWrongExpectedRevision) {
				t.Errorf("append %d to %s (%s): %v, want a wrong expected revision", i, c.stream, c.exp, errs[i])
			}
		} else if errs[i] != nil {
			t.Errorf("append %d to %s (%s): %v", i, c.stream, c.exp, errs[i])
		}
	}
	st := l.Stats()
	if commits := st.Commits - before.Commits; commits != 2 {
		t.Errorf("%d commits, want 2 (the first append, then all the others at once)", commits)
	}
	if events := st.Events - before.Events; events != 6 {
		t.Errorf("%d events written, want 6", events)
	}
	all, err := l.ReadAll(ctx, 0, 100)
	if err != nil || len(all) != 7 {
		t.Fatalf("ReadAll: %d events, %v; want 7", len(all), err)
	}
	v := eventlog.NewChainVerifier()
	for i := range all {
		if all[i].Position != uint64(i+1) {
			t.Errorf("event %d at position %d", i, all[i].Position)
		}
		if err := v.Check(&all[i]); err != nil {
			t.Error(err)
		}
	}
}

// A batch sent while the one before it is still in flight is decided as
// if that one commits. When it does not (here a UNIQUE event id refuses
// its row), the batch behind inserts nothing, and both are decided again
// on fresh reads: the first append is refused, the second succeeds, and
// the log stays gapless and chained.
func TestPipelinedBatchAfterAFailedOne(t *testing.T) {
	l, admin := openInternal(t)
	ctx := context.Background()
	seed := testEvent("Seed")
	if _, err := l.Append(ctx, "seeded", eventlog.NoStream(), seed); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", appendLockClass, l.lockKey); err != nil {
		t.Fatal(err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			if _, err := admin.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", appendLockClass, l.lockKey); err != nil {
				t.Error(err)
			}
		}
	}
	defer unlock()
	// The writer stops after sending the first batch until the second
	// append is queued, so that the second batch goes out while the
	// first waits for the lock.
	var flights atomic.Int32
	sent, proceed := make(chan struct{}), make(chan struct{})
	l.takeOffHook = func() {
		if flights.Add(1) == 1 {
			close(sent)
			<-proceed
		}
	}
	// Batch N: a new stream (taken as absent from the cache) whose event
	// reuses the seed's id.
	dup := testEvent("Dup")
	dup.ID = seed.ID
	errDup := make(chan error, 1)
	go func() {
		_, err := l.Append(ctx, "dup", eventlog.NoStream(), dup)
		errDup <- err
	}()
	<-sent
	// Batch N+1, decided as if N commits.
	type result struct {
		res eventlog.AppendResult
		err error
	}
	second := make(chan result, 1)
	go func() {
		res, err := l.Append(ctx, "seeded", eventlog.Exact(0), testEvent("Next"))
		second <- result{res, err}
	}()
	waitUntil(t, "the second append queued", func() bool { return len(l.reqs) > 0 })
	close(proceed)
	waitUntil(t, "two batches sent from the cache", func() bool { return flights.Load() >= 2 })
	rereads := l.Stats().Rereads
	unlock()
	if err := <-errDup; err == nil || errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("append reusing an event id: %v, want its own refusal", err)
	}
	r := <-second
	if r.err != nil || r.res.NextExpectedRevision != 1 || r.res.Position != 2 {
		t.Fatalf("append behind the failed batch = %+v, %v; want revision 1 at position 2", r.res, r.err)
	}
	if got := l.Stats().Rereads - rereads; got != 2 {
		t.Errorf("%d batches decided again, want 2", got)
	}
	all, err := l.ReadAll(ctx, 0, 10)
	if err != nil || len(all) != 2 {
		t.Fatalf("ReadAll: %d events, %v; want 2", len(all), err)
	}
	v := eventlog.NewChainVerifier()
	for i := range all {
		if err := v.Check(&all[i]); err != nil {
			t.Error(err)
		}
	}
}

// When the writer's connection dies, the appends in flight fail with
// ErrUnavailable (or succeed, if they committed first) and the writer
// takes a new connection for the next ones.
func TestWriterReconnects(t *testing.T) {
	l, admin := openInternal(t)
	ctx := context.Background()
	if _, err := l.Append(ctx, "s-1", eventlog.NoStream(), testEvent("A")); err != nil {
		t.Fatal(err)
	}
	// The writer is idle: its connection is not touched until the next append.
	pid := l.wc.conn.Conn().PgConn().PID()
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(pid)); err != nil {
		t.Fatal(err)
	}
	_, err := l.Append(ctx, "s-1", eventlog.Any(), testEvent("B"))
	if err != nil && !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("append on a dead connection: %v, want success or ErrUnavailable", err)
	}
	var last eventlog.AppendResult
	deadline := time.Now().Add(15 * time.Second)
	for {
		last, err = l.Append(ctx, "s-1", eventlog.Any(), testEvent("C"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("appends still fail after the connection died: %v", err)
		}
	}
	if err := l.WriteHealth(ctx); err != nil {
		t.Errorf("write health after reconnecting: %v", err)
	}
	evs, err := l.ReadStream(ctx, "s-1", 0, 10)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Position != last.Position {
		t.Fatalf("ReadStream = %d events, %v; want the last at %d", len(evs), err, last.Position)
	}
}
