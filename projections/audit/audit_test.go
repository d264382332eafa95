package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
)

func TestResourceID(t *testing.T) {
	for stream, want := range map[string]string{
		"customer-cus_1": "cus_1", "attribution-settings-shop_1": "shop_1", "delivery-6f1d3c2e-9a4b-4c1e": "6f1d3c2e-9a4b-4c1e",
		"inventory_adjustment-adj_1": "adj_1", "odd": "odd",
	} {
		if got := ResourceID(stream); got != want {
			t.Errorf("ResourceID(%q) = %q, want %q", stream, got, want)
		}
	}
}

// index folds events into a fresh index and returns its queries.
func index(t *testing.T, evs []eventlog.Event) *Queries {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "rm.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations {
		if _, err := tx.Exec(m.SQL); err != nil {
			t.Fatal(err)
		}
	}
	p := Projector()
	for _, e := range evs {
		if err := p.Handle(ctx, tx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return NewQueries(db)
}

// A clock stepping back leaves the time filter in log order: a range is one
// range of positions.
func TestTimeRangeWithAClockSteppingBack(t *testing.T) {
	base := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	offsets := []int{0, 10, 20, 15, 30, 40} // the fourth event was recorded by a clock 5 s behind
	var evs []eventlog.Event
	for i, off := range offsets {
		evs = append(evs, eventlog.Event{EventData: eventlog.EventData{ID: uuid.New(), Type: "T", ShopID: "shop_1",
			Metadata: eventlog.Metadata{Actor: "a", KeyIDs: []string{"shop_1", "cus_1"}}},
			StreamID: "customer-cus_1", Revision: uint64(i), Position: uint64(i + 1), RecordedAt: base.Add(time.Duration(off) * time.Second)})
	}
	evs = append(evs, eventlog.Event{EventData: eventlog.EventData{ID: uuid.New(), Type: "AccountCreated"}, StreamID: "account-a", Position: 7})
	q := index(t, evs)
	ctx := context.Background()
	list := func(lq Query) []eventlog.Position {
		t.Helper()
		lq.Shop, lq.Limit = "shop_1", 100
		entries, _, err := q.List(ctx, lq)
		if err != nil {
			t.Fatal(err)
		}
		var out []eventlog.Position
		for _, e := range entries {
			out = append(out, e.Position)
		}
		return out
	}
	for _, c := range []struct {
		from, before int
		want         []eventlog.Position
	}{
		{0, 0, []eventlog.Position{1, 2, 3, 4, 5, 6}},
		{10, 30, []eventlog.Position{2, 3, 4}}, // the late clock's event counts at 20 s, after position 3
		{16, 0, []eventlog.Position{3, 4, 5, 6}},
		{41, 0, nil},
		{0, 1, []eventlog.Position{1}},
	} {
		lq := Query{}
		if c.from > 0 {
			lq.RecordedFrom = base.Add(time.Duration(c.from) * time.Second)
		}
		if c.before > 0 {
			lq.RecordedBefore = base.Add(time.Duration(c.before) * time.Second)
		}
		if got := list(lq); !slices.Equal(got, c.want) {
			t.Errorf("[%ds, %ds): %v, want %v", c.from, c.before, got, c.want)
		}
	}
	if got := list(Query{Subject: "cus_1", Desc: true, After: 5}); !slices.Equal(got, []eventlog.Position{4, 3, 2, 1}) {
		t.Errorf("by subject, newest first after 5: %v", got)
	}
	if pos, err := q.LastRecordedBefore(ctx, "shop_1", base.Add(19*time.Second)); err != nil || pos != 2 {
		t.Errorf("last recorded at or before 19 s: %d %v", pos, err)
	}
	if streams, err := q.Streams(ctx, "shop_1", "cus_1", 3); err != nil || !slices.Equal(streams, []string{"customer-cus_1"}) {
		t.Errorf("streams: %v %v", streams, err)
	}
}
