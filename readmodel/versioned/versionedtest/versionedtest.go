// Package versionedtest is the contract every versioned.Store adapter
// passes: the newest version wins, tombstones hide, keyset walks neither
// skip nor repeat, checkpoints move only after rows were sent, a failed
// send is retried whole, erasure leaves nothing readable, Migrate is
// idempotent, and all of it holds under concurrent use.
//
// It imports the standard library and readmodel/versioned.
package versionedtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// Open returns a new, empty store whose batches are sent only by Flush
// (MaxDelay of minutes, MaxRows of thousands); it registers its own
// cleanup with t.
type Open func(t *testing.T) versioned.Store

// Run runs the whole contract against stores made by open.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s versioned.Store)
	}{
		{"MigrateIsIdempotent", testMigrateIsIdempotent},
		{"ValuesRoundTrip", testValuesRoundTrip},
		{"NewestVersionWins", testNewestVersionWins},
		{"TombstoneHides", testTombstoneHides},
		{"CheckpointOnlyAfterFlush", testCheckpointOnlyAfterFlush},
		{"FailedSendIsRetriedOnce", testFailedSendIsRetriedOnce},
		{"PrefixScan", testPrefixScan},
		{"KeysetWalkWhileRowsArrive", testKeysetWalkWhileRowsArrive},
		{"EraseLeavesNothingReadable", testEraseLeavesNothingReadable},
		{"InvalidRequests", testInvalidRequests},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			if err := s.Migrate(context.Background(), []versioned.Table{Orders}); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			tc.fn(t, s)
		})
	}
}

// Orders is the table the suite writes: keyed by (shop_id, order_id).
var Orders = versioned.Table{
	Name: "vt_orders",
	Columns: []versioned.Column{
		{Name: "shop_id", Type: versioned.String},
		{Name: "order_id", Type: versioned.String},
		{Name: "email", Type: versioned.String},
		{Name: "revenue", Type: versioned.Int64},
		{Name: "weight", Type: versioned.Float64},
	},
	Key: []string{"shop_id", "order_id"},
}

func order(shop, id, email string, revenue int64, version uint64) versioned.Change {
	return versioned.Change{Table: Orders.Name, Row: versioned.Row{
		Values:  []any{shop, id, email, revenue, float64(revenue) / 4},
		Version: version,
	}}
}

func tombstone(shop, id string, version uint64) versioned.Change {
	return versioned.Change{Table: Orders.Name, Row: versioned.Row{
		Values: []any{shop, id, "", int64(0), 0.0}, Version: version, Deleted: true,
	}}
}

func write(t *testing.T, s versioned.Store, projector string, pos uint64, changes ...versioned.Change) {
	t.Helper()
	if err := s.Write(context.Background(), projector, pos, changes); err != nil {
		t.Fatalf("write %s at %d: %v", projector, pos, err)
	}
}

func flush(t *testing.T, s versioned.Store) {
	t.Helper()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func get(t *testing.T, s versioned.Store, shop, id string) (versioned.Row, bool) {
	t.Helper()
	r, ok, err := s.Get(context.Background(), Orders.Name, []any{shop, id})
	if err != nil {
		t.Fatalf("get %s/%s: %v", shop, id, err)
	}
	return r, ok
}

func checkpoint(t *testing.T, s versioned.Store, projector string) uint64 {
	t.Helper()
	p, err := s.Checkpoint(context.Background(), projector)
	if err != nil {
		t.Fatalf("checkpoint of %s: %v", projector, err)
	}
	return p
}

// keys returns the order ids of every readable row of shop, in key order.
func keys(t *testing.T, s versioned.Store, shop string) []string {
	t.Helper()
	var out []string
	q := versioned.Query{Prefix: []any{shop}, Limit: 1000}
	for {
		rows, err := s.Scan(context.Background(), Orders.Name, q)
		if err != nil {
			t.Fatalf("scan %s: %v", shop, err)
		}
		for _, r := range rows {
			out = append(out, r.Values[1].(string))
		}
		if len(rows) < q.Limit {
			return out
		}
		q.After = Orders.KeyOf(rows[len(rows)-1].Values)
	}
}

func testMigrateIsIdempotent(t *testing.T, s versioned.Store) {
	ctx := context.Background()
	write(t, s, "p", 1, order("shop_a", "o1", "a@example.com", 100, 0))
	flush(t, s)
	for i := 0; i < 2; i++ {
		if err := s.Migrate(ctx, []versioned.Table{Orders}); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
	}
	if r, ok := get(t, s, "shop_a", "o1"); !ok || r.Values[3] != int64(100) {
		t.Fatalf("after a second Migrate: got %v, %v; want the row kept", r, ok)
	}
	bad := Orders
	bad.Name = "Bad Name"
	if err := s.Migrate(ctx, []versioned.Table{bad}); !errors.Is(err, versioned.ErrInvalid) {
		t.Fatalf("migrate invalid table: got %v, want ErrInvalid", err)
	}
}

func testValuesRoundTrip(t *testing.T, s versioned.Store) {
	odd := "quote ' double \" back \\ nul-free ünïcødé 😀 ; DROP TABLE x; --"
	ch := versioned.Change{Table: Orders.Name, Row: versioned.Row{Values: []any{"shop_a", odd, odd, int64(-1 << 63), 1.25e-7}}}
	write(t, s, "p", 9, ch)
	flush(t, s)
	r, ok := get(t, s, "shop_a", odd)
	if !ok {
		t.Fatal("row with unusual strings not found")
	}
	want := []any{"shop_a", odd, odd, int64(-1 << 63), 1.25e-7}
	if !slices.Equal(r.Values, want) || r.Version != 9 || r.Deleted {
		t.Fatalf("got %#v version %d deleted %v; want %#v version 9 (pos) not deleted", r.Values, r.Version, r.Deleted, want)
	}
}

func testNewestVersionWins(t *testing.T, s versioned.Store) {
	write(t, s, "p", 5, order("shop_a", "o1", "v5", 500, 0))
	write(t, s, "p", 6, order("shop_a", "o1", "v3", 300, 3)) // older version in a later write: loses
	flush(t, s)
	if r, _ := get(t, s, "shop_a", "o1"); r.Values[2] != "v5" || r.Version != 5 {
		t.Fatalf("same batch: got %v version %d, want v5", r.Values, r.Version)
	}
	write(t, s, "p", 7, order("shop_a", "o1", "v4", 400, 4)) // older, another batch: loses
	flush(t, s)
	if r, _ := get(t, s, "shop_a", "o1"); r.Values[2] != "v5" {
		t.Fatalf("later batch of an older version: got %v, want v5 kept", r.Values)
	}
	write(t, s, "p", 8, order("shop_a", "o1", "v8", 800, 0))
	write(t, s, "p", 9, order("shop_a", "o1", "v9", 900, 0))
	flush(t, s)
	if r, _ := get(t, s, "shop_a", "o1"); r.Values[2] != "v9" || r.Values[3] != int64(900) || r.Version != 9 {
		t.Fatalf("newer versions: got %v version %d, want v9", r.Values, r.Version)
	}
	write(t, s, "p", 10, order("shop_a", "o1", "v9-again", 901, 9)) // same version again: either copy, never an older one
	flush(t, s)
	if r, _ := get(t, s, "shop_a", "o1"); r.Version != 9 {
		t.Fatalf("rewrite of the same version: got version %d, want 9", r.Version)
	}
	if got := keys(t, s, "shop_a"); !slices.Equal(got, []string{"o1"}) {
		t.Fatalf("versions of one key read as %v, want one row", got)
	}
}

func testTombstoneHides(t *testing.T, s versioned.Store) {
	write(t, s, "p", 1, order("shop_a", "o1", "x", 1, 0), order("shop_a", "o2", "y", 2, 0))
	flush(t, s)
	write(t, s, "p", 2, tombstone("shop_a", "o1", 0))
	flush(t, s)
	if r, ok := get(t, s, "shop_a", "o1"); ok {
		t.Fatalf("tombstoned row read as %v", r)
	}
	if got := keys(t, s, "shop_a"); !slices.Equal(got, []string{"o2"}) {
		t.Fatalf("scan after tombstone: %v, want [o2]", got)
	}
	write(t, s, "p", 3, order("shop_a", "o1", "x", 1, 1)) // redelivery of the old version
	flush(t, s)
	if _, ok := get(t, s, "shop_a", "o1"); ok {
		t.Fatal("an older version came back over a tombstone")
	}
	write(t, s, "p", 4, order("shop_a", "o1", "z", 4, 0))
	flush(t, s)
	if r, ok := get(t, s, "shop_a", "o1"); !ok || r.Values[2] != "z" {
		t.Fatalf("newer version after a tombstone: got %v, %v; want z", r, ok)
	}
}

func testCheckpointOnlyAfterFlush(t *testing.T, s versioned.Store) {
	if got := checkpoint(t, s, "p"); got != 0 {
		t.Fatalf("checkpoint of a new projector: %d, want 0", got)
	}
	write(t, s, "p", 3, order("shop_a", "o1", "x", 1, 0))
	write(t, s, "p", 4) // a write without rows
	if got := checkpoint(t, s, "p"); got != 0 {
		t.Fatalf("checkpoint before flush: %d, want 0", got)
	}
	if _, ok := get(t, s, "shop_a", "o1"); ok {
		t.Fatal("row readable before flush")
	}
	flush(t, s)
	if got := checkpoint(t, s, "p"); got != 4 {
		t.Fatalf("checkpoint after flush: %d, want 4", got)
	}
	if _, ok := get(t, s, "shop_a", "o1"); !ok {
		t.Fatal("row not readable after flush")
	}
	if got := checkpoint(t, s, "other"); got != 0 {
		t.Fatalf("another projector's checkpoint: %d, want 0", got)
	}
}

func testFailedSendIsRetriedOnce(t *testing.T, s versioned.Store) {
	write(t, s, "p", 1, order("shop_a", "o1", "x", 1, 0))
	flush(t, s)
	write(t, s, "p", 2, order("shop_a", "o2", "y", 2, 0), order("shop_a", "o3", "z", 3, 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Flush(ctx); err == nil {
		t.Fatal("flush with a cancelled context succeeded")
	}
	if got := checkpoint(t, s, "p"); got != 1 {
		t.Fatalf("checkpoint after a failed send: %d, want 1", got)
	}
	if got := keys(t, s, "shop_a"); !slices.Equal(got, []string{"o1"}) {
		t.Fatalf("rows after a failed send: %v, want [o1]", got)
	}
	flush(t, s)
	flush(t, s)
	if got := checkpoint(t, s, "p"); got != 2 {
		t.Fatalf("checkpoint after the retry: %d, want 2", got)
	}
	if got := keys(t, s, "shop_a"); !slices.Equal(got, []string{"o1", "o2", "o3"}) {
		t.Fatalf("rows after the retry: %v, want [o1 o2 o3] once each", got)
	}
}

func testPrefixScan(t *testing.T, s versioned.Store) {
	for i, shop := range []string{"shop_a", "shop_b", "shop_ab"} {
		for j := 0; j < 5; j++ {
			write(t, s, "p", uint64(i*10+j+1), order(shop, fmt.Sprintf("o%d", j), "e", int64(j), 0))
		}
	}
	flush(t, s)
	if got := keys(t, s, "shop_a"); !slices.Equal(got, []string{"o0", "o1", "o2", "o3", "o4"}) {
		t.Fatalf("prefix shop_a: %v", got)
	}
	rows, err := s.Scan(context.Background(), Orders.Name, versioned.Query{Prefix: []any{"shop_b", "o3"}, Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].Values[1] != "o3" {
		t.Fatalf("whole-key prefix: %v, %v; want o3", rows, err)
	}
	rows, err = s.Scan(context.Background(), Orders.Name, versioned.Query{Limit: 100, Desc: true})
	if err != nil || len(rows) != 15 {
		t.Fatalf("scan of the whole table: %d rows, %v; want 15", len(rows), err)
	}
	if k := Orders.KeyOf(rows[0].Values); k[0] != "shop_b" || k[1] != "o4" {
		t.Fatalf("first row descending: %v, want shop_b/o4", k)
	}
}

func testKeysetWalkWhileRowsArrive(t *testing.T, s versioned.Store) {
	for _, desc := range []bool{false, true} {
		t.Run(fmt.Sprintf("desc=%v", desc), func(t *testing.T) {
			shop := fmt.Sprintf("walk_%v", desc)
			pos := uint64(1)
			var initial []string
			for i := 0; i < 40; i++ {
				id := fmt.Sprintf("o%03d", i*10)
				initial = append(initial, id)
				write(t, s, "p", pos, order(shop, id, "e", int64(i), 0))
				pos++
			}
			flush(t, s)
			var seen []string
			q := versioned.Query{Prefix: []any{shop}, Limit: 7, Desc: desc}
			for page := 0; ; page++ {
				rows, err := s.Scan(context.Background(), Orders.Name, q)
				if err != nil {
					t.Fatalf("page %d: %v", page, err)
				}
				for _, r := range rows {
					seen = append(seen, r.Values[1].(string))
				}
				if len(rows) < q.Limit {
					break
				}
				q.After = Orders.KeyOf(rows[len(rows)-1].Values)
				// Rows arrive between pages: on both sides of the cursor.
				write(t, s, "p", pos, order(shop, fmt.Sprintf("o%03d", page*60+5), "new", 0, 0),
					order(shop, fmt.Sprintf("o%03d", 395-page*50), "new", 0, 0))
				pos++
				flush(t, s)
			}
			for i := 1; i < len(seen); i++ {
				if (!desc && seen[i] <= seen[i-1]) || (desc && seen[i] >= seen[i-1]) {
					t.Fatalf("walk out of order or repeating at %d: %v", i, seen)
				}
			}
			for _, id := range initial {
				if !slices.Contains(seen, id) {
					t.Fatalf("walk skipped %s: %v", id, seen)
				}
			}
		})
	}
}

func testEraseLeavesNothingReadable(t *testing.T, s versioned.Store) {
	ctx := context.Background()
	write(t, s, "p", 1, order("shop_gone", "o1", "erase-me@example.com", 1, 0), order("shop_gone", "o2", "erase-me@example.com", 2, 0))
	write(t, s, "p", 2, order("shop_kept", "o1", "keep@example.com", 3, 0))
	flush(t, s)
	write(t, s, "p", 3, order("shop_gone", "o3", "queued@example.com", 4, 0)) // queued, not flushed
	if err := s.Erase(ctx, Orders.Name, []any{"shop_gone"}, 10); err != nil {
		t.Fatalf("erase: %v", err)
	}
	if got := keys(t, s, "shop_gone"); len(got) != 0 {
		t.Fatalf("erased shop still reads %v", got)
	}
	for _, id := range []string{"o1", "o2", "o3"} {
		if r, ok := get(t, s, "shop_gone", id); ok {
			t.Fatalf("erased row %s reads %v", id, r)
		}
	}
	if got := keys(t, s, "shop_kept"); !slices.Equal(got, []string{"o1"}) {
		t.Fatalf("other shop after erase: %v, want [o1]", got)
	}
	write(t, s, "p", 4, order("shop_gone", "o1", "erase-me@example.com", 1, 1)) // redelivery
	flush(t, s)
	if r, ok := get(t, s, "shop_gone", "o1"); ok {
		t.Fatalf("redelivered old version after erase reads %v", r)
	}
	write(t, s, "p", 11, order("shop_gone", "o9", "new@example.com", 9, 0))
	flush(t, s)
	if got := keys(t, s, "shop_gone"); !slices.Equal(got, []string{"o9"}) {
		t.Fatalf("write after erase: %v, want [o9]", got)
	}
	if err := s.Erase(ctx, Orders.Name, nil, 12); !errors.Is(err, versioned.ErrInvalid) {
		t.Fatalf("erase without prefix: %v, want ErrInvalid", err)
	}
}

func testInvalidRequests(t *testing.T, s versioned.Store) {
	ctx := context.Background()
	cases := map[string]error{
		"unknown table": s.Write(ctx, "p", 1, []versioned.Change{{Table: "nope", Row: versioned.Row{Values: []any{"a"}}}}),
		"wrong type":    s.Write(ctx, "p", 1, []versioned.Change{{Table: Orders.Name, Row: versioned.Row{Values: []any{"a", "b", "c", "not a number", 1.0}}}}),
		"short row":     s.Write(ctx, "p", 1, []versioned.Change{{Table: Orders.Name, Row: versioned.Row{Values: []any{"a"}}}}),
		"position 0":    s.Write(ctx, "p", 0, nil),
	}
	_, err := s.Scan(ctx, Orders.Name, versioned.Query{Limit: 0})
	cases["limit 0"] = err
	_, err = s.Scan(ctx, Orders.Name, versioned.Query{Limit: 1, After: []any{"only-shop"}})
	cases["partial cursor"] = err
	_, _, err = s.Get(ctx, Orders.Name, []any{"shop_a"})
	cases["partial key"] = err
	for name, err := range cases {
		if !errors.Is(err, versioned.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	flush(t, s)
	if got := checkpoint(t, s, "p"); got != 0 {
		t.Fatalf("a refused write moved the checkpoint to %d", got)
	}
}

func testConcurrent(t *testing.T, s versioned.Store) {
	const writers, perWriter = 4, 50
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter*2)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			projector := fmt.Sprintf("p%d", w)
			for i := 1; i <= perWriter; i++ {
				c := order(fmt.Sprintf("shop_%d", w), fmt.Sprintf("o%03d", i), "e", int64(i), 0)
				if err := s.Write(ctx, projector, uint64(i), []versioned.Change{c}); err != nil {
					errs <- err
					return
				}
				if i%10 == 0 {
					if err := s.Flush(ctx); err != nil {
						errs <- err
					}
				}
				if _, err := s.Scan(ctx, Orders.Name, versioned.Query{Prefix: []any{fmt.Sprintf("shop_%d", (w+1)%writers)}, Limit: 5}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent use: %v", err)
	}
	flush(t, s)
	for w := 0; w < writers; w++ {
		if got := len(keys(t, s, fmt.Sprintf("shop_%d", w))); got != perWriter {
			t.Errorf("shop_%d: %d rows, want %d", w, got, perWriter)
		}
		if got := checkpoint(t, s, fmt.Sprintf("p%d", w)); got != perWriter {
			t.Errorf("p%d: checkpoint %d, want %d", w, got, perWriter)
		}
	}
}
