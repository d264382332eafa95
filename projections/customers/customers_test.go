package customers_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/customers"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
	"github.com/cgp-platform/cgp/vault"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type delivery struct {
	Op               string                 `json:"op"`
	Shop             string                 `json:"shop"`
	Delivery         string                 `json:"delivery"`
	Profile          domain.CustomerProfile `json:"profile"`
	CustomerExternal string                 `json:"customer_external"`
	Tags             []string               `json:"tags"`
	Topic            string                 `json:"topic"`
	Order            domain.OrderSnapshot   `json:"order"`
	OrderExternal    string                 `json:"order_external"`
	Refund           domain.RefundRecorded  `json:"refund"`
}

type fixture struct {
	log     *logsqlite.Log
	keys    vault.Vault
	codec   *envelope.Codec
	cmds    *commands.Handler
	store   *rmsqlite.Store
	runtime *projections.Runtime
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	dir := core.Dir
	f := &fixture{log: core.Log, keys: core.Keys, codec: core.Codec, cmds: core.Commands}
	var err error
	f.store, err = rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.store.Close() })
	p := customers.Projector(f.codec)
	if err := f.store.Migrate(context.Background(), p.Name, p.Migrations); err != nil {
		t.Fatal(err)
	}
	f.runtime, err = projections.New(projections.Config{Log: core.Log, Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.runtime.Register(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.runtime.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		f.runtime.Close()
		<-done
	})
	return f
}

func (f *fixture) play(t *testing.T, path string) eventlog.Position {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ds []delivery
	if err := json.Unmarshal(raw, &ds); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	meta := commands.Meta{Actor: "test", Source: "webhook"}
	var last eventlog.Position
	for _, d := range ds {
		var res commands.Result
		var err error
		switch d.Op {
		case "profile":
			res, err = f.cmds.RecordCustomer(ctx, commands.RecordCustomer{ShopID: d.Shop, Profile: d.Profile,
				EventID: eventlog.DeterministicID("commerce", d.Shop, d.Delivery)}, meta)
		case "tags":
			res, err = f.cmds.SetCustomerTags(ctx, commands.SetCustomerTags{ShopID: d.Shop,
				CustomerID: domain.CustomerIDFromExternal(d.Shop, d.CustomerExternal), Tags: d.Tags}, meta)
		case "order":
			res, err = f.cmds.RecordOrder(ctx, commands.RecordOrder{Delivered: commands.Delivered{ShopID: d.Shop, Topic: d.Topic,
				EventID: eventlog.DeterministicID("commerce", d.Shop, d.Delivery)}, CustomerExternalID: d.CustomerExternal, Snapshot: d.Order}, meta)
		case "refund":
			res, err = f.cmds.RecordRefund(ctx, commands.RecordRefund{Delivered: commands.Delivered{ShopID: d.Shop, Topic: "refunds/create",
				EventID: eventlog.DeterministicID("commerce", d.Shop, d.Delivery)}, OrderExternalID: d.OrderExternal, Refund: d.Refund}, meta)
		case "shred":
			err = f.keys.Shred(ctx, d.Shop, domain.CustomerIDFromExternal(d.Shop, d.CustomerExternal))
		}
		if err != nil {
			t.Fatalf("%s %+v: %v", d.Op, d, err)
		}
		if res.Position > last {
			last = res.Position
		}
	}
	return last
}

// dump reads the whole read model in a stable order.
func dump(t *testing.T, db *sql.DB) []map[string]any {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM customers ORDER BY shop_id, customer_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]any{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			row[c] = vals[i]
		}
		out = append(out, row)
	}
	return out
}

func TestProjectorMatchesGolden(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/deliveries.json")
	last := f.play(t, "testdata/orders.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.runtime.WaitFor(ctx, last, customers.Name); err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(dump(t, f.store.DB()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/customers.golden.json"
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		t.Fatalf("read model differs from %s:\n%s", golden, got)
	}
}

func TestQueries(t *testing.T) {
	f := newFixture(t)
	last := f.play(t, "testdata/deliveries.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.runtime.WaitFor(ctx, last, customers.Name); err != nil {
		t.Fatal(err)
	}
	q := customers.NewQueries(f.store.DB())
	ada, err := q.Get(ctx, "shop_golden", domain.CustomerIDFromExternal("shop_golden", "1001"))
	if err != nil {
		t.Fatal(err)
	}
	// The repeated delivery d3 changed nothing: the e-mail is d3's first one.
	if *ada.Email != "ada@lovelace.example" || ada.OrdersCount != 1 || ada.Redacted {
		t.Fatalf("ada = %+v", ada)
	}
	grace, err := q.Get(ctx, "shop_golden", domain.CustomerIDFromExternal("shop_golden", "1003"))
	if err != nil {
		t.Fatal(err)
	}
	// d6 carried no e-mail: a snapshot replaces the profile.
	if grace.Email != nil || grace.OrdersCount != 3 || grace.TotalSpent != 300000 {
		t.Fatalf("grace = %+v", grace)
	}
	if _, err := q.Get(ctx, "shop_other", ada.ID); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("cross-shop get: %v", err)
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for stage, want := range map[string]int{"prospect": 0, "new": 1, "active": 1, "loyal": 1, "churned": 0} {
		rows, _, err := q.List(ctx, customers.ListQuery{Shop: "shop_golden", Stage: stage, Sort: customers.SortCreatedAt, Limit: 10, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != want {
			t.Errorf("stage %s: %d rows, want %d", stage, len(rows), want)
		}
		for _, r := range rows {
			if got := domain.LifecycleStage(r.OrdersCount, r.LastOrderAt, now); got != stage {
				t.Errorf("stage filter %s returned a %s customer", stage, got)
			}
		}
	}
	page, next, err := q.List(ctx, customers.ListQuery{Shop: "shop_golden", Sort: customers.SortTotalSpent, Desc: true, Limit: 2, Now: now})
	if err != nil || len(page) != 2 || next == nil || page[0].TotalSpent < page[1].TotalSpent {
		t.Fatalf("first page %v next %v err %v", page, next, err)
	}
	rest, next2, err := q.List(ctx, customers.ListQuery{Shop: "shop_golden", Sort: customers.SortTotalSpent, Desc: true, Limit: 2, After: next, Now: now})
	if err != nil || len(rest) != 1 || next2 != nil || rest[0].TotalSpent > page[1].TotalSpent {
		t.Fatalf("second page %v next %v err %v", rest, next2, err)
	}
}

// A projection rebuilt after a customer's key was shredded holds no personal
// data of that customer, and marks the row redacted; the others are intact.
func TestRebuildAfterShreddingHasNoPersonalData(t *testing.T) {
	f := newFixture(t)
	last := f.play(t, "testdata/deliveries.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ada := domain.CustomerIDFromExternal("shop_golden", "1001")
	if err := f.keys.Shred(ctx, "shop_golden", ada); err != nil {
		t.Fatal(err)
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(t.TempDir(), "rebuilt.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p := customers.Projector(f.codec)
	if err := store.Migrate(ctx, p.Name, p.Migrations); err != nil {
		t.Fatal(err)
	}
	rt, err := projections.New(projections.Config{Log: f.log, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Register(p); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	defer func() { stop(); rt.Close(); <-done }()
	if err := rt.WaitFor(ctx, last, customers.Name); err != nil {
		t.Fatal(err)
	}
	q := customers.NewQueries(store.DB())
	got, err := q.Get(ctx, "shop_golden", ada)
	if err != nil {
		t.Fatal(err)
	}
	if got.Email != nil || got.FirstName != nil || got.LastName != nil || got.Phone != nil || !got.Redacted {
		t.Fatalf("rebuilt shredded customer = %+v", got)
	}
	if got.OrdersCount != 1 || got.TotalSpent != 990000 {
		t.Fatalf("non-personal fields lost: %+v", got)
	}
	alan, err := q.Get(ctx, "shop_golden", domain.CustomerIDFromExternal("shop_golden", "1002"))
	if err != nil || alan.Email == nil || *alan.Email != "alan@example.com" || alan.Redacted {
		t.Fatalf("other customer = %+v, %v", alan, err)
	}
}

// TestOrderTotals: once orders of a customer arrive, its figures come from
// them: cancelled orders do not count, refunds lower the total (even a
// refund that arrived before its order), a stale snapshot changes nothing,
// a repeated delivery counts once, and a profile arriving after its orders
// does not overwrite them. A customer without orders keeps its profile's
// figures.
func TestOrderTotals(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/deliveries.json")
	last := f.play(t, "testdata/orders.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.runtime.WaitFor(ctx, last, customers.Name); err != nil {
		t.Fatal(err)
	}
	q := customers.NewQueries(f.store.DB())
	day := func(s string) time.Time { d, _ := time.Parse(time.RFC3339, s); return d }
	for _, c := range []struct {
		external string
		orders   int
		spent    domain.Amount
		last     time.Time
	}{
		{"1002", 1, 750000, day("2026-10-01T10:00:00Z")}, // o2 cancelled; r1 refunded 25.00 of o1
		{"1004", 1, 200000, day("2026-09-01T10:00:00Z")}, // profile said 7 orders after o3 arrived
		{"1001", 1, 200000, day("2026-10-02T10:00:00Z")}, // r2 came before o4
		{"1003", 3, 300000, time.Time{}},                 // no order received: the profile's figures
	} {
		got, err := q.Get(ctx, "shop_golden", domain.CustomerIDFromExternal("shop_golden", c.external))
		if err != nil {
			t.Fatal(err)
		}
		if got.OrdersCount != c.orders || got.TotalSpent != c.spent || !got.LastOrderAt.Equal(c.last) {
			t.Errorf("customer %s: orders %d spent %v last %v, want %d %v %v",
				c.external, got.OrdersCount, got.TotalSpent, got.LastOrderAt, c.orders, c.spent, c.last)
		}
	}
}
