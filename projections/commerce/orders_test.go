package commerce_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/commerce"
)

// recordOrders records n orders of shop through the commands: customer
// 100+i%3, created on day 1+i%4 of March 2026 at noon (many ties), total
// (i*7)%10 units, financial paid/pending, fulfillment none/fulfilled.
func recordOrders(t *testing.T, core *testenv.Core, shop string, n int) eventlog.Position {
	t.Helper()
	var last eventlog.Position
	for i := range n {
		created := time.Date(2026, 3, 1+i%4, 12, 0, 0, 0, time.UTC)
		snap := domain.OrderSnapshot{
			ExternalID: fmt.Sprint(5000 + i), Name: fmt.Sprintf("#%d", i), Currency: "EUR",
			FinancialStatus: []string{"paid", "pending"}[i%2], FulfillmentStatus: []string{"", "fulfilled"}[i%2*(i%3%2)],
			TotalPrice: domain.Amount((i * 7) % 10 * domain.AmountScale), CreatedAt: created, UpdatedAt: created.Add(time.Duration(i%5) * time.Hour),
			Email: fmt.Sprintf("buyer%d@example.com", i%3),
		}
		res, err := core.Commands.RecordOrder(context.Background(), commands.RecordOrder{
			Delivered:          commands.Delivered{ShopID: shop, Topic: "orders/create", EventID: eventlog.DeterministicID("commerce", shop, snap.ExternalID)},
			CustomerExternalID: fmt.Sprint(100 + i%3), Snapshot: snap,
		}, commands.Meta{Actor: "test", Source: "webhook"})
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, res.Position)
	}
	return last
}

// walk lists every page of lq with limit and returns the orders in order.
func walk(t *testing.T, q *commerce.Queries, lq commerce.OrderListQuery) []commerce.Order {
	t.Helper()
	var out []commerce.Order
	for pages := 0; ; pages++ {
		rows, next, err := q.ListOrders(context.Background(), lq)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > lq.Limit || pages > 100 {
			t.Fatalf("page of %d rows (limit %d), page %d", len(rows), lq.Limit, pages)
		}
		out = append(out, rows...)
		if next == nil {
			return out
		}
		lq.After = next
	}
}

func TestListOrders(t *testing.T) {
	core := testenv.New(t, nil)
	read := core.ReadSide(t, commerce.Projector(core.Codec))
	const n = 23
	recordOrders(t, core, "shop_a", n)
	read.WaitFor(t, recordOrders(t, core, "shop_b", 5))
	q := commerce.NewQueries(read.DB())

	for _, sort := range []string{commerce.OrderSortCreatedAt, commerce.OrderSortUpdatedAt, commerce.OrderSortTotalPrice} {
		for _, desc := range []bool{false, true} {
			got := walk(t, q, commerce.OrderListQuery{Shop: "shop_a", Sort: sort, Desc: desc, Limit: 4})
			seen := map[string]bool{}
			for i, o := range got {
				if o.ShopID != "shop_a" || seen[o.ID] {
					t.Fatalf("%s desc=%v: order %s of %s (repeat %v)", sort, desc, o.ID, o.ShopID, seen[o.ID])
				}
				seen[o.ID] = true
				if i == 0 {
					continue
				}
				a, b := sortKey(&got[i-1], sort), sortKey(&o, sort)
				if (!desc && a > b) || (desc && a < b) || (a == b && (got[i-1].ID < o.ID) == desc) {
					t.Fatalf("%s desc=%v: out of order at %d: %v/%s then %v/%s", sort, desc, i, a, got[i-1].ID, b, o.ID)
				}
			}
			if len(got) != n {
				t.Fatalf("%s desc=%v: %d orders, want %d", sort, desc, len(got), n)
			}
		}
	}

	cus := domain.CustomerIDFromExternal("shop_a", "101")
	day2 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		lq   commerce.OrderListQuery
		keep func(*commerce.Order) bool
	}{
		{"customer", commerce.OrderListQuery{CustomerID: cus}, func(o *commerce.Order) bool { return o.CustomerID == cus }},
		{"financial", commerce.OrderListQuery{FinancialStatus: "pending"}, func(o *commerce.Order) bool { return o.FinancialStatus == "pending" }},
		{"unfulfilled", commerce.OrderListQuery{FulfillmentStatus: commerce.FulfillmentUnfulfilled},
			func(o *commerce.Order) bool { return o.FulfillmentStatus == "" }},
		{"fulfilled", commerce.OrderListQuery{FulfillmentStatus: "fulfilled"}, func(o *commerce.Order) bool { return o.FulfillmentStatus == "fulfilled" }},
		{"dates", commerce.OrderListQuery{CreatedFrom: day2, CreatedBefore: day2.AddDate(0, 0, 2)},
			func(o *commerce.Order) bool {
				return !o.CreatedAt.Before(day2) && o.CreatedAt.Before(day2.AddDate(0, 0, 2))
			}},
		{"combined", commerce.OrderListQuery{CustomerID: cus, FinancialStatus: "paid", CreatedFrom: day2},
			func(o *commerce.Order) bool {
				return o.CustomerID == cus && o.FinancialStatus == "paid" && !o.CreatedAt.Before(day2)
			}},
	} {
		all := walk(t, q, commerce.OrderListQuery{Shop: "shop_a", Sort: commerce.OrderSortCreatedAt, Limit: 100})
		want := 0
		for i := range all {
			if c.keep(&all[i]) {
				want++
			}
		}
		lq := c.lq
		lq.Shop, lq.Sort, lq.Limit = "shop_a", commerce.OrderSortTotalPrice, 3
		got := walk(t, q, lq)
		if len(got) != want || want == 0 || want == n {
			t.Errorf("%s: %d orders, want %d of %d", c.name, len(got), want, n)
		}
		for i := range got {
			if !c.keep(&got[i]) {
				t.Errorf("%s: returned %+v", c.name, got[i])
			}
		}
	}
	if _, _, err := q.ListOrders(context.Background(), commerce.OrderListQuery{Shop: "shop_a", Sort: "email", Limit: 1}); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("unknown sort: %v", err)
	}
}

// After the customer's key is shredded, a rebuilt read model lists the
// customer's orders without e-mail and marked redacted.
func TestListOrdersAfterShredding(t *testing.T) {
	core := testenv.New(t, nil)
	last := recordOrders(t, core, "shop_a", 6)
	shredded := domain.CustomerIDFromExternal("shop_a", "100")
	if err := core.Keys.Shred(context.Background(), "shop_a", shredded); err != nil {
		t.Fatal(err)
	}
	read := core.ReadSide(t, commerce.Projector(core.Codec))
	read.WaitFor(t, last)
	got := walk(t, commerce.NewQueries(read.DB()), commerce.OrderListQuery{Shop: "shop_a", Sort: commerce.OrderSortCreatedAt, Limit: 2})
	redacted := 0
	for _, o := range got {
		switch {
		case o.CustomerID == shredded && (o.Email != nil || !o.Redacted):
			t.Errorf("order %s of the shredded customer: email %v redacted %v", o.ID, o.Email, o.Redacted)
		case o.CustomerID == shredded:
			redacted++
		case o.Email == nil || o.Redacted:
			t.Errorf("order %s of another customer lost its e-mail", o.ID)
		}
	}
	if len(got) != 6 || redacted != 2 {
		t.Fatalf("%d orders, %d redacted", len(got), redacted)
	}
}

func sortKey(o *commerce.Order, sort string) int64 {
	switch sort {
	case commerce.OrderSortUpdatedAt:
		return o.UpdatedAt.UnixMicro()
	case commerce.OrderSortTotalPrice:
		return int64(o.TotalPrice)
	}
	return o.CreatedAt.UnixMicro()
}
