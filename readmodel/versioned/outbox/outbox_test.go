package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/readmodel"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/outbox"
	vsqlite "github.com/cgp-platform/cgp/readmodel/versioned/sqlite"
)

const schema = `
CREATE TABLE attribution_orders (
	order_id TEXT PRIMARY KEY,
	shop_id  TEXT NOT NULL,
	revenue  INTEGER NOT NULL,
	weight   REAL,
	note     TEXT
);
CREATE TABLE attribution_credits (
	order_id TEXT NOT NULL,
	model    TEXT NOT NULL,
	shop_id  TEXT NOT NULL,
	revenue  INTEGER NOT NULL,
	PRIMARY KEY (order_id, model)
);`

var sources = []outbox.Source{
	{Table: "attribution_orders", Projector: "attribution", Key: []string{"order_id"}, WarehouseKey: []string{"shop_id", "order_id"}},
	{Table: "attribution_credits", Projector: "attribution", Key: []string{"order_id", "model"}},
}

// flaky is the warehouse with a switch that fails Flush: the outside
// system going away.
type flaky struct {
	versioned.Store
	fail atomic.Bool
}

func (f *flaky) Flush(ctx context.Context) error {
	if f.fail.Load() {
		return errors.New("warehouse unreachable")
	}
	return f.Store.Flush(ctx)
}

type env struct {
	rm *rmsqlite.Store
	wh *flaky
	sh *outbox.Shipper
}

func setup(t *testing.T) env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	rm, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rm.Close() })
	if err := rm.Migrate(ctx, "attribution", []readmodel.Migration{{Version: 1, SQL: schema}}); err != nil {
		t.Fatal(err)
	}
	migs, err := outbox.Migrations(sources)
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Migrate(ctx, outbox.Projector, migs); err != nil {
		t.Fatalf("outbox migration: %v", err)
	}
	store, err := vsqlite.Open(vsqlite.Config{Path: filepath.Join(dir, "warehouse.db"), MaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	wh := &flaky{Store: store}
	sh, err := outbox.New(ctx, outbox.Config{ReadModels: rm, Warehouse: wh, Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	return env{rm: rm, wh: wh, sh: sh}
}

func (e env) apply(t *testing.T, pos uint64, stmts ...string) {
	t.Helper()
	_, err := e.rm.Apply(context.Background(), "attribution", pos, func(tx *sql.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e env) ship(t *testing.T) int {
	t.Helper()
	n, err := e.sh.ShipOnce(context.Background())
	if err != nil {
		t.Fatalf("ship: %v", err)
	}
	return n
}

func (e env) outboxLen(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.rm.DB().QueryRow(`SELECT count(*) FROM warehouse_outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e env) order(t *testing.T, shop, id string) (versioned.Row, bool) {
	t.Helper()
	r, ok, err := e.wh.Get(context.Background(), "attribution_orders", []any{shop, id})
	if err != nil {
		t.Fatal(err)
	}
	return r, ok
}

func TestShipsInsertsUpdatesAndDeletes(t *testing.T) {
	e := setup(t)
	e.apply(t, 1,
		`INSERT INTO attribution_orders VALUES ('o1', 's1', 1000, 0.5, 'first')`,
		`INSERT INTO attribution_orders VALUES ('o2', 's1', 2000, NULL, NULL)`,
		`INSERT INTO attribution_credits VALUES ('o1', 'linear', 's1', 1000)`)
	if got := e.outboxLen(t); got != 3 {
		t.Fatalf("outbox after 3 inserts: %d rows", got)
	}
	if n := e.ship(t); n != 3 {
		t.Fatalf("shipped %d, want 3", n)
	}
	r, ok := e.order(t, "s1", "o1")
	want := []any{"o1", "s1", int64(1000), 0.5, "first"}
	if !ok || !slices.Equal(r.Values, want) || r.Version != 1 {
		t.Fatalf("o1 in the warehouse: %v %v version %d; want %v version 1", r.Values, ok, r.Version, want)
	}
	if r, _ := e.order(t, "s1", "o2"); !slices.Equal(r.Values, []any{"o2", "s1", int64(2000), 0.0, ""}) {
		t.Fatalf("NULLs shipped as %v, want zero values", r.Values)
	}
	if _, ok, err := e.wh.Get(context.Background(), "attribution_credits", []any{"o1", "linear"}); !ok || err != nil {
		t.Fatalf("credit not shipped: %v %v", ok, err)
	}
	if got := e.outboxLen(t); got != 0 {
		t.Fatalf("outbox after shipping: %d rows, want 0", got)
	}

	e.apply(t, 2,
		`UPDATE attribution_orders SET revenue = 900, note = 'refunded' WHERE order_id = 'o1'`,
		`DELETE FROM attribution_orders WHERE order_id = 'o2'`,
		`DELETE FROM attribution_credits WHERE order_id = 'o1'`)
	e.ship(t)
	if r, _ := e.order(t, "s1", "o1"); r.Values[2] != int64(900) || r.Values[4] != "refunded" || r.Version != 2 {
		t.Fatalf("updated o1: %v version %d", r.Values, r.Version)
	}
	if r, ok := e.order(t, "s1", "o2"); ok {
		t.Fatalf("deleted o2 still in the warehouse: %v", r)
	}
	if _, ok, _ := e.wh.Get(context.Background(), "attribution_credits", []any{"o1", "linear"}); ok {
		t.Fatal("deleted credit still in the warehouse")
	}
	if n := e.ship(t); n != 0 {
		t.Fatalf("empty outbox shipped %d", n)
	}
}

func TestFailedShipKeepsOutbox(t *testing.T) {
	e := setup(t)
	e.apply(t, 5, `INSERT INTO attribution_orders VALUES ('o1', 's1', 1, 0, '')`)
	e.wh.fail.Store(true)
	if _, err := e.sh.ShipOnce(context.Background()); err == nil {
		t.Fatal("ship succeeded while the warehouse failed")
	}
	if got := e.outboxLen(t); got != 1 {
		t.Fatalf("outbox after a failed ship: %d rows, want 1 kept", got)
	}
	if cp, _ := e.wh.Checkpoint(context.Background(), outbox.Projector); cp != 0 {
		t.Fatalf("warehouse checkpoint moved to %d on failure", cp)
	}
	e.wh.fail.Store(false)
	e.ship(t)
	if _, ok := e.order(t, "s1", "o1"); !ok {
		t.Fatal("row not shipped on retry")
	}
	if got := e.outboxLen(t); got != 0 {
		t.Fatalf("outbox after the retry: %d rows", got)
	}
}

func TestWarehouseEqualsReadModel(t *testing.T) {
	e := setup(t)
	pos := uint64(1)
	for i := 0; i < 30; i++ {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		e.apply(t, pos, `INSERT INTO attribution_orders VALUES ('`+id+`', 's`+string(rune('0'+i%3))+`', `+string(rune('0'+i%10))+`, 0.25, 'n')`)
		pos++
		if i%4 == 0 {
			e.apply(t, pos, `DELETE FROM attribution_orders WHERE order_id = '`+id+`'`)
			pos++
		}
		if i%7 == 0 {
			e.ship(t)
		}
	}
	for e.ship(t) > 0 {
	}
	rows, err := e.rm.DB().Query(`SELECT shop_id, order_id FROM attribution_orders ORDER BY shop_id, order_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var want []string
	for rows.Next() {
		var s, o string
		if err := rows.Scan(&s, &o); err != nil {
			t.Fatal(err)
		}
		want = append(want, s+"/"+o)
	}
	got, err := e.wh.Scan(context.Background(), "attribution_orders", versioned.Query{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, r := range got {
		have = append(have, r.Values[1].(string)+"/"+r.Values[0].(string))
	}
	if !slices.Equal(have, want) {
		t.Fatalf("warehouse %v\nread model %v", have, want)
	}
}

func TestKeyChangeTombstonesTheOldKey(t *testing.T) {
	e := setup(t)
	e.apply(t, 1, `INSERT INTO attribution_orders VALUES ('o1', 's1', 1, 0, '')`,
		`INSERT INTO attribution_credits VALUES ('o1', 'linear', 's1', 1)`)
	e.ship(t)
	// shop_id is in the warehouse key only; model is in both keys.
	e.apply(t, 2, `UPDATE attribution_orders SET shop_id = 's2' WHERE order_id = 'o1'`,
		`UPDATE attribution_credits SET model = 'first_touch' WHERE order_id = 'o1'`)
	e.ship(t)
	if r, ok := e.order(t, "s1", "o1"); ok {
		t.Fatalf("old warehouse key still reads %v", r)
	}
	if r, ok := e.order(t, "s2", "o1"); !ok || r.Version != 2 {
		t.Fatalf("new warehouse key: %v %v", r, ok)
	}
	ctx := context.Background()
	if _, ok, _ := e.wh.Get(ctx, "attribution_credits", []any{"o1", "linear"}); ok {
		t.Fatal("old credit key still readable")
	}
	if _, ok, _ := e.wh.Get(ctx, "attribution_credits", []any{"o1", "first_touch"}); !ok {
		t.Fatal("new credit key not shipped")
	}
}

// TestDefaultSourcesMatchTheProjectors installs the outbox over the real
// attribution and customers schemas: a renamed table or key column fails
// here, not in production.
func TestDefaultSourcesMatchTheProjectors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rm, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	for _, p := range []projections.Projector{attribution.Projector(nil), customers.Projector(nil, time.Now)} {
		if err := rm.Migrate(ctx, p.Name, p.Migrations); err != nil {
			t.Fatalf("migrate %s: %v", p.Name, err)
		}
	}
	migs, err := outbox.Migrations(outbox.DefaultSources())
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Migrate(ctx, outbox.Projector, migs); err != nil {
		t.Fatalf("outbox over the real schemas: %v", err)
	}
	wh, err := vsqlite.Open(vsqlite.Config{Path: filepath.Join(dir, "warehouse.db"), MaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	if _, err := outbox.New(ctx, outbox.Config{ReadModels: rm, Warehouse: wh, Sources: outbox.DefaultSources()}); err != nil {
		t.Fatalf("shipper over the real schemas: %v", err)
	}
	for _, src := range outbox.DefaultSources() {
		var n int
		if err := rm.DB().QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?`, src.Table).Scan(&n); err != nil || n != 3 {
			t.Errorf("%s: %d triggers (%v), want 3", src.Table, n, err)
		}
	}
}
