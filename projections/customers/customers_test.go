package customers_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/customers"
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
	*testenv.Core
	read *testenv.ReadSide
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	return &fixture{Core: core, read: core.ReadSide(t, customers.Projector(core.Codec, func() time.Time { return clock }))}
}

func (f *fixture) play(t *testing.T, path string) eventlog.Position {
	t.Helper()
	var ds []delivery
	testenv.ReadJSON(t, path, &ds)
	ctx := context.Background()
	meta := commands.Meta{Actor: "test", Source: "webhook"}
	var last eventlog.Position
	for _, d := range ds {
		var res commands.Result
		var err error
		switch d.Op {
		case "profile":
			res, err = f.Commands.RecordCustomer(ctx, commands.RecordCustomer{ShopID: d.Shop, Profile: d.Profile,
				EventID: eventlog.DeterministicID("commerce", d.Shop, d.Delivery)}, meta)
		case "tags":
			res, err = f.Commands.SetCustomerTags(ctx, commands.SetCustomerTags{ShopID: d.Shop,
				CustomerID: domain.CustomerIDFromExternal(d.Shop, d.CustomerExternal), Tags: d.Tags}, meta)
		case "order":
			res, err = f.Commands.RecordOrder(ctx, commands.RecordOrder{Delivered: commands.Delivered{ShopID: d.Shop, Topic: d.Topic,
				EventID: eventlog.DeterministicID("commerce", d.Shop, d.Delivery)}, CustomerExternalID: d.CustomerExternal, Snapshot: d.Order}, meta)
		case "refund":
			res, err = f.Commands.RecordRefund(ctx, commands.RecordRefund{Delivered: commands.Delivered{ShopID: d.Shop, Topic: "refunds/create",
				EventID: eventlog.DeterministicID("commerce", d.Shop, d.Delivery)}, OrderExternalID: d.OrderExternal, Refund: d.Refund}, meta)
		case "shred":
			err = f.Keys.Shred(ctx, d.Shop, domain.CustomerIDFromExternal(d.Shop, d.CustomerExternal))
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
	return testenv.Dump(t, db, "customers", "shop_id, customer_id")
}

func TestProjectorMatchesGolden(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/deliveries.json")
	f.read.WaitFor(t, f.play(t, "testdata/orders.json"))
	got, err := json.MarshalIndent(dump(t, f.read.DB()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Golden(t, "testdata/customers.golden.json", got, *update)
}

func TestQueries(t *testing.T) {
	f := newFixture(t)
	f.read.WaitFor(t, f.play(t, "testdata/deliveries.json"))
	ctx := context.Background()
	q := customers.NewQueries(f.read.DB())
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
	ctx := context.Background()
	ada := domain.CustomerIDFromExternal("shop_golden", "1001")
	if err := f.Keys.Shred(ctx, "shop_golden", ada); err != nil {
		t.Fatal(err)
	}
	rebuilt := f.ReadSide(t, customers.Projector(f.Codec, nil))
	rebuilt.WaitFor(t, last)
	q := customers.NewQueries(rebuilt.DB())
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
	f.read.WaitFor(t, f.play(t, "testdata/orders.json"))
	ctx := context.Background()
	q := customers.NewQueries(f.read.DB())
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

// Stages change with time alone: AgeStages moves them, and the stage
// filter follows.
func TestAgeStagesAsTimePasses(t *testing.T) {
	f := newFixture(t)
	f.read.WaitFor(t, f.play(t, "testdata/orders.json"))
	ctx := context.Background()
	q := customers.NewQueries(f.read.DB())
	stageOf := func(id string) string {
		var stage string
		if err := f.read.DB().QueryRowContext(ctx, `SELECT stage FROM customers WHERE customer_id = ?`, id).Scan(&stage); err != nil {
			t.Fatal(err)
		}
		return stage
	}
	listed := func(stage string, now time.Time) []string {
		rows, _, err := q.List(ctx, customers.ListQuery{Shop: "shop_golden", Stage: stage, Sort: customers.SortTotalSpent, Desc: true, Limit: 100, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		return ids
	}
	// 1004's last order is 2026-09-01: new at the fixture's clock.
	c := domain.CustomerIDFromExternal("shop_golden", "1004")
	if got := stageOf(c); got != domain.StageNew {
		t.Fatalf("stage at the projector's clock = %q, want new", got)
	}
	for _, step := range []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), domain.StageNew},
		{time.Date(2026, 12, 15, 0, 0, 0, 0, time.UTC), domain.StageAtRisk},
		{time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC), domain.StageChurned},
	} {
		if err := f.read.Store.Maintain(ctx, func(tx *sql.Tx) error { return customers.AgeStages(ctx, tx, step.now) }); err != nil {
			t.Fatal(err)
		}
		if got := stageOf(c); got != step.want {
			t.Fatalf("stage at %s = %q, want %q", step.now.Format(time.DateOnly), got, step.want)
		}
		if ids := listed(step.want, step.now); !slices.Contains(ids, c) {
			t.Fatalf("filter %s at %s = %v, want it to list %s", step.want, step.now.Format(time.DateOnly), ids, c)
		}
		// Every stored stage agrees with the domain's rule at that instant.
		for _, stage := range domain.LifecycleStages() {
			for _, id := range listed(stage, step.now) {
				got, err := q.Get(ctx, "shop_golden", id)
				if err != nil {
					t.Fatal(err)
				}
				if live := domain.LifecycleStage(got.OrdersCount, got.LastOrderAt, step.now); live != stage {
					t.Fatalf("at %s the %s filter lists a %s customer", step.now.Format(time.DateOnly), stage, live)
				}
			}
		}
	}
	// Without upkeep the filter never lists a customer under a stage it
	// has left: a later instant drops it from its stored stage's list.
	if ids := listed(domain.StageChurned, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)); slices.Contains(ids, c) {
		t.Fatalf("churned filter before the threshold lists %s", c)
	}
}

// An audience counts the customers its filters select, each filter
// narrowing the count, checked against the rows one by one.
func TestCountAudience(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/deliveries.json")
	f.read.WaitFor(t, f.play(t, "testdata/orders.json"))
	ctx := context.Background()
	q := customers.NewQueries(f.read.DB())
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	all, _, err := q.List(ctx, customers.ListQuery{Shop: "shop_golden", Sort: customers.SortCreatedAt, Limit: 100, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	spent := domain.Amount(300000)
	after := time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		filters domain.AudienceFilters
		match   func(c *customers.Customer) bool
	}{
		"everyone": {domain.AudienceFilters{}, func(*customers.Customer) bool { return true }},
		"new or loyal": {domain.AudienceFilters{LifecycleStages: []string{domain.StageNew, domain.StageLoyal}}, func(c *customers.Customer) bool {
			s := domain.LifecycleStage(c.OrdersCount, c.LastOrderAt, now)
			return s == domain.StageNew || s == domain.StageLoyal
		}},
		"tagged vip":   {domain.AudienceFilters{Tags: []string{"vip"}}, func(c *customers.Customer) bool { return slices.Contains(c.Tags, "vip") }},
		"big spenders": {domain.AudienceFilters{MinTotalSpent: &spent}, func(c *customers.Customer) bool { return c.TotalSpent >= spent }},
		"recent buyers": {domain.AudienceFilters{LastOrderAfter: &after}, func(c *customers.Customer) bool {
			return !c.LastOrderAt.IsZero() && !c.LastOrderAt.Before(after)
		}},
	} {
		want := 0
		for i := range all {
			if tc.match(&all[i]) {
				want++
			}
		}
		if want == 0 || (name != "everyone" && want == len(all)) {
			t.Fatalf("%s: the fixture selects %d of %d customers: the case tests nothing", name, want, len(all))
		}
		got, err := q.CountAudience(ctx, "shop_golden", tc.filters, now)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: count %d, want %d", name, got, want)
		}
	}
	if _, err := q.CountAudience(ctx, "shop_golden", domain.AudienceFilters{LifecycleStages: []string{"bogus"}}, now); err == nil {
		t.Error("an unknown stage was counted")
	}
}

// GetMany reads the customers of a shop among the ids at once; unknown ids
// and another shop's customers are absent.
func TestGetMany(t *testing.T) {
	f := newFixture(t)
	f.read.WaitFor(t, f.play(t, "testdata/deliveries.json"))
	q := customers.NewQueries(f.read.DB())
	ada := domain.CustomerIDFromExternal("shop_golden", "1001")
	grace := domain.CustomerIDFromExternal("shop_golden", "1003")
	got, err := q.GetMany(context.Background(), "shop_golden", []string{ada, grace, "cus_unknown", ada})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[ada] == nil || got[grace] == nil || got[ada].ID != ada || got[grace].OrdersCount != 3 {
		t.Fatalf("GetMany = %v", got)
	}
	other, err := q.GetMany(context.Background(), "shop_other", []string{ada, grace})
	if err != nil || len(other) != 0 {
		t.Fatalf("another shop's GetMany = %v, %v; want none", other, err)
	}
	if none, err := q.GetMany(context.Background(), "shop_golden", nil); err != nil || len(none) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v", none, err)
	}
}
