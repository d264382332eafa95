// Package readmodeltest is the contract every readmodel.Store adapter
// passes: checkpoints written atomically with rows, idempotent re-apply,
// migrations run once and in order per projector, parking that moves the
// checkpoint. An adapter's test calls Run with a constructor of empty
// stores.
//
// It imports the standard library, eventlog, readmodel and
// github.com/google/uuid.
package readmodeltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel"
)

// Open returns a new, empty store; it registers its own cleanup with t.
type Open func(t *testing.T) readmodel.Store

// Run runs the whole contract against stores made by open.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s readmodel.Store)
	}{
		{"CheckpointStartsAtZero", testCheckpointStartsAtZero},
		{"ApplyWritesRowsAndCheckpoint", testApplyWritesRowsAndCheckpoint},
		{"FailingApplyWritesNothing", testFailingApplyWritesNothing},
		{"PanickingApplyWritesNothing", testPanickingApplyWritesNothing},
		{"ApplyIsIdempotent", testApplyIsIdempotent},
		{"ApplyRejectsPositionZero", testApplyRejectsPositionZero},
		{"MigrationsRunOnceInOrder", testMigrationsRunOnceInOrder},
		{"MigrationHistoryMustMatch", testMigrationHistoryMustMatch},
		{"FailedMigrationIsNotRecorded", testFailedMigrationIsNotRecorded},
		{"ProjectorsAreIndependent", testProjectorsAreIndependent},
		{"ParkAdvancesCheckpoint", testParkAdvancesCheckpoint},
		{"ConcurrentApply", testConcurrentApply},
		{"MaintainWritesWithoutCheckpoint", testMaintainWritesWithoutCheckpoint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// table is the migration history every test projector starts from.
var table = []readmodel.Migration{
	{Version: 1, SQL: `CREATE TABLE items (position INTEGER PRIMARY KEY, name TEXT NOT NULL)`},
}

func migrate(t *testing.T, s readmodel.Store, projector string, migs []readmodel.Migration) {
	t.Helper()
	if err := s.Migrate(t.Context(), projector, migs); err != nil {
		t.Fatalf("Migrate(%s): %v", projector, err)
	}
}

func insert(pos eventlog.Position, name string) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO items (position, name) VALUES (?, ?)`, int64(pos), name)
		return err
	}
}

func apply(t *testing.T, s readmodel.Store, projector string, pos eventlog.Position, fn func(tx *sql.Tx) error) bool {
	t.Helper()
	applied, err := s.Apply(t.Context(), projector, pos, fn)
	if err != nil {
		t.Fatalf("Apply(%s, %d): %v", projector, pos, err)
	}
	return applied
}

func wantCheckpoint(t *testing.T, s readmodel.Store, projector string, want eventlog.Position) {
	t.Helper()
	got, err := s.Checkpoint(t.Context(), projector)
	if err != nil {
		t.Fatalf("Checkpoint(%s): %v", projector, err)
	}
	if got != want {
		t.Fatalf("Checkpoint(%s) = %d, want %d", projector, got, want)
	}
}

func count(t *testing.T, s readmodel.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func testCheckpointStartsAtZero(t *testing.T, s readmodel.Store) {
	wantCheckpoint(t, s, "never-ran", 0)
	parked, err := s.Parked(t.Context(), "never-ran")
	if err != nil || len(parked) != 0 {
		t.Fatalf("Parked = %v, %v; want none", parked, err)
	}
}

func testApplyWritesRowsAndCheckpoint(t *testing.T, s readmodel.Store) {
	migrate(t, s, "p", table)
	if !apply(t, s, "p", 3, insert(3, "three")) {
		t.Fatal("Apply at 3 reported not applied")
	}
	wantCheckpoint(t, s, "p", 3)
	var name string
	if err := s.DB().QueryRowContext(t.Context(), `SELECT name FROM items WHERE position = 3`).Scan(&name); err != nil || name != "three" {
		t.Fatalf("row at 3 = %q, %v; want three", name, err)
	}
}

func testFailingApplyWritesNothing(t *testing.T, s readmodel.Store) {
	migrate(t, s, "p", table)
	apply(t, s, "p", 1, insert(1, "one"))
	boom := errors.New("boom")
	applied, err := s.Apply(t.Context(), "p", 2, func(tx *sql.Tx) error {
		if err := insert(2, "two")(tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Apply error = %v, want it to wrap the callback's error", err)
	}
	if applied {
		t.Fatal("failed Apply reported applied")
	}
	wantCheckpoint(t, s, "p", 1)
	if n := count(t, s, `SELECT COUNT(*) FROM items`); n != 1 {
		t.Fatalf("rows after failed Apply = %d, want 1", n)
	}
	// The position is still open: a later attempt applies it.
	if !apply(t, s, "p", 2, insert(2, "two")) {
		t.Fatal("retry at 2 reported not applied")
	}
	wantCheckpoint(t, s, "p", 2)
}

func testPanickingApplyWritesNothing(t *testing.T, s readmodel.Store) {
	migrate(t, s, "p", table)
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the callback's panic did not reach the caller")
			}
		}()
		_, _ = s.Apply(t.Context(), "p", 1, func(tx *sql.Tx) error {
			if err := insert(1, "one")(tx); err != nil {
				return err
			}
			panic("handler bug")
		})
	}()
	// The store is still usable (no transaction left open) and holds
	// nothing of the panicked attempt.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	applied, err := s.Apply(ctx, "other", 1, func(tx *sql.Tx) error { return nil })
	if err != nil || !applied {
		t.Fatalf("Apply after a panic = %v, %v; want a working store", applied, err)
	}
	wantCheckpoint(t, s, "p", 0)
	if n := count(t, s, `SELECT COUNT(*) FROM items`); n != 0 {
		t.Fatalf("rows after a panicked Apply = %d, want 0", n)
	}
}

func testApplyIsIdempotent(t *testing.T, s readmodel.Store) {
	migrate(t, s, "p", table)
	apply(t, s, "p", 5, insert(5, "five"))
	calls := 0
	counted := func(tx *sql.Tx) error { calls++; return nil }
	for _, pos := range []eventlog.Position{5, 4, 1} {
		if apply(t, s, "p", pos, counted) {
			t.Fatalf("Apply at %d after checkpoint 5 reported applied", pos)
		}
	}
	if calls != 0 {
		t.Fatalf("callback ran %d times for positions at or below the checkpoint", calls)
	}
	wantCheckpoint(t, s, "p", 5)
	if !apply(t, s, "p", 6, insert(6, "six")) {
		t.Fatal("Apply at 6 reported not applied")
	}
	wantCheckpoint(t, s, "p", 6)
	if n := count(t, s, `SELECT COUNT(*) FROM items`); n != 2 {
		t.Fatalf("rows = %d, want 2", n)
	}
}

func testApplyRejectsPositionZero(t *testing.T, s readmodel.Store) {
	ran := false
	if _, err := s.Apply(t.Context(), "p", 0, func(*sql.Tx) error { ran = true; return nil }); err == nil {
		t.Fatal("Apply at position 0 succeeded")
	}
	if ran {
		t.Fatal("callback ran for position 0")
	}
}

func testMigrationsRunOnceInOrder(t *testing.T, s readmodel.Store) {
	// Version 2 depends on version 1, version 3 on version 2; version 1 is
	// not idempotent, so a second run would fail.
	migs := []readmodel.Migration{
		{Version: 1, SQL: `CREATE TABLE steps (n INTEGER NOT NULL)`},
		{Version: 2, SQL: `ALTER TABLE steps ADD COLUMN label TEXT NOT NULL DEFAULT ''`},
	}
	migrate(t, s, "p", migs)
	migrate(t, s, "p", migs)
	migs = append(migs, readmodel.Migration{Version: 5, SQL: `INSERT INTO steps (n, label) VALUES (5, 'five'); INSERT INTO steps (n, label) VALUES (6, 'six')`})
	migrate(t, s, "p", migs)
	migrate(t, s, "p", migs)
	if n := count(t, s, `SELECT COUNT(*) FROM steps WHERE label <> ''`); n != 2 {
		t.Fatalf("rows written by version 5 = %d, want 2 (run once, all statements)", n)
	}
}

func testMigrationHistoryMustMatch(t *testing.T, s readmodel.Store) {
	migs := []readmodel.Migration{
		{Version: 1, SQL: `CREATE TABLE a (x INTEGER)`},
		{Version: 2, SQL: `CREATE TABLE b (x INTEGER)`},
	}
	migrate(t, s, "p", migs)
	for name, bad := range map[string][]readmodel.Migration{
		"changed":    {migs[0], {Version: 3, SQL: `CREATE TABLE c (x INTEGER)`}},
		"removed":    {migs[0]},
		"renumbered": {{Version: 2, SQL: migs[0].SQL}, {Version: 3, SQL: migs[1].SQL}},
	} {
		if err := s.Migrate(t.Context(), "p", bad); !errors.Is(err, readmodel.ErrMigrationHistory) {
			t.Fatalf("%s: Migrate error = %v, want ErrMigrationHistory", name, err)
		}
	}
	for _, bad := range [][]readmodel.Migration{
		{{Version: 2}, {Version: 1}},
		{{Version: 1}, {Version: 1}},
		{{Version: 0}},
	} {
		if err := s.Migrate(t.Context(), "q", bad); err == nil {
			t.Fatalf("Migrate(%v) accepted versions that are not strictly increasing from 1", bad)
		}
	}
}

func testFailedMigrationIsNotRecorded(t *testing.T, s readmodel.Store) {
	migs := []readmodel.Migration{
		{Version: 1, SQL: `CREATE TABLE a (x INTEGER)`},
		{Version: 2, SQL: `CREATE TABLE b (x INTEGER); THIS IS NOT SQL`},
	}
	if err := s.Migrate(t.Context(), "p", migs); err == nil {
		t.Fatal("Migrate with broken SQL succeeded")
	}
	// Version 1 stays; the half of version 2 that ran is rolled back.
	if n := count(t, s, `SELECT COUNT(*) FROM a`); n != 0 {
		t.Fatalf("table a has %d rows", n)
	}
	migs[1].SQL = `CREATE TABLE b (x INTEGER)`
	migrate(t, s, "p", migs)
	if n := count(t, s, `SELECT COUNT(*) FROM b`); n != 0 {
		t.Fatalf("table b has %d rows", n)
	}
}

func testProjectorsAreIndependent(t *testing.T, s readmodel.Store) {
	migrate(t, s, "one", table)
	migrate(t, s, "two", []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE others (x INTEGER)`}})
	apply(t, s, "one", 10, insert(10, "ten"))
	wantCheckpoint(t, s, "one", 10)
	wantCheckpoint(t, s, "two", 0)
	if !apply(t, s, "two", 3, func(tx *sql.Tx) error { _, err := tx.Exec(`INSERT INTO others (x) VALUES (3)`); return err }) {
		t.Fatal("Apply of projector two at 3 was skipped because of projector one")
	}
	wantCheckpoint(t, s, "one", 10)
	wantCheckpoint(t, s, "two", 3)
}

func testParkAdvancesCheckpoint(t *testing.T, s readmodel.Store) {
	migrate(t, s, "p", table)
	apply(t, s, "p", 2, insert(2, "two"))
	e := eventlog.Event{
		EventData: eventlog.EventData{ID: uuid.New(), Type: "ThingHappened", SchemaVersion: 1, Data: []byte(`{"secret":"payload"}`)},
		StreamID:  "thing-th_1",
		Position:  7,
	}
	cause := fmt.Errorf("handle: %w", errors.New("bad thing"))
	if err := s.Park(t.Context(), "p", e, cause); err != nil {
		t.Fatalf("Park: %v", err)
	}
	wantCheckpoint(t, s, "p", 7)
	if apply(t, s, "p", 7, insert(7, "seven")) {
		t.Fatal("Apply of the parked position was not skipped")
	}
	// Parking again, or parking an older event, neither duplicates nor
	// moves the checkpoint back.
	if err := s.Park(t.Context(), "p", e, cause); err != nil {
		t.Fatalf("Park again: %v", err)
	}
	old := e
	old.ID, old.Position = uuid.New(), 5
	if err := s.Park(t.Context(), "p", old, errors.New(strings.Repeat("é", readmodel.MaxParkedErrorLen))); err != nil {
		t.Fatalf("Park older: %v", err)
	}
	wantCheckpoint(t, s, "p", 7)

	parked, err := s.Parked(t.Context(), "p")
	if err != nil {
		t.Fatalf("Parked: %v", err)
	}
	if len(parked) != 2 {
		t.Fatalf("Parked = %d events, want 2", len(parked))
	}
	got := parked[1]
	if got.Position != 7 || got.EventID != e.ID || got.Type != e.Type || got.Stream != e.StreamID || got.Projector != "p" || got.Error != cause.Error() {
		t.Fatalf("parked event = %+v, want position 7, id %s, type %s, stream %s, error %q", got, e.ID, e.Type, e.StreamID, cause)
	}
	if got.ParkedAt.IsZero() {
		t.Fatal("parked event has no time")
	}
	if first := parked[0]; first.Position != 5 || len(first.Error) > readmodel.MaxParkedErrorLen || !strings.HasPrefix(first.Error, "é") || !utf8Valid(first.Error) {
		t.Fatalf("long error kept as %d bytes (valid UTF-8: %v), want at most %d", len(first.Error), utf8Valid(first.Error), readmodel.MaxParkedErrorLen)
	}
	if other, _ := s.Parked(t.Context(), "other"); len(other) != 0 {
		t.Fatalf("another projector sees %d parked events", len(other))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }

func testConcurrentApply(t *testing.T, s readmodel.Store) {
	const projectors, events = 4, 50
	ctx := t.Context()
	for p := range projectors {
		migrate(t, s, fmt.Sprintf("p%d", p), []readmodel.Migration{{Version: 1, SQL: fmt.Sprintf(`CREATE TABLE items_%d (position INTEGER PRIMARY KEY)`, p)}})
	}
	var wg sync.WaitGroup
	errs := make(chan error, projectors*2)
	// Two writers per projector deliver the same positions: each position
	// must land once.
	for p := range projectors {
		for range 2 {
			wg.Go(func() {
				for pos := eventlog.Position(1); pos <= events; pos++ {
					_, err := s.Apply(ctx, fmt.Sprintf("p%d", p), pos, func(tx *sql.Tx) error {
						_, err := tx.Exec(fmt.Sprintf(`INSERT INTO items_%d (position) VALUES (?)`, p), int64(pos))
						return err
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Apply: %v", err)
	}
	for p := range projectors {
		wantCheckpoint(t, s, fmt.Sprintf("p%d", p), events)
		if n := count(t, s, fmt.Sprintf(`SELECT COUNT(*) FROM items_%d`, p)); n != events {
			t.Fatalf("projector p%d has %d rows, want %d", p, n, events)
		}
	}
}

func testMaintainWritesWithoutCheckpoint(t *testing.T, s readmodel.Store) {
	migrate(t, s, "p", table)
	apply(t, s, "p", 5, insert(5, "five"))
	if err := s.Maintain(t.Context(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE items SET name = 'FIVE' WHERE position = 5`)
		return err
	}); err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM items WHERE name = 'FIVE'`); n != 1 {
		t.Fatalf("rows updated by Maintain = %d, want 1", n)
	}
	wantCheckpoint(t, s, "p", 5)
	boom := errors.New("boom")
	err := s.Maintain(t.Context(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE items SET name = 'lost' WHERE position = 5`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing Maintain = %v, want it to wrap %v", err, boom)
	}
	if n := count(t, s, `SELECT COUNT(*) FROM items WHERE name = 'lost'`); n != 0 {
		t.Fatal("a failing Maintain left its writes behind")
	}
}
