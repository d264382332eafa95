package commerce_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/commerce"
)

func TestMonthlyAmount(t *testing.T) {
	for _, c := range []struct {
		interval string
		count    int
		want     domain.Amount
		ok       bool
	}{
		{"month", 1, 300000, true}, {"MONTH", 3, 100000, true}, {"year", 1, 25000, true}, {"year", 2, 12500, true},
		{"week", 2, 652219, true}, // 30 × 4.348125 / 2
		{"day", 30, 304369, true}, // 30 × 30.436875 / 30
		{"month", 0, 0, false}, {"fortnight", 1, 0, false}, {"", 1, 0, false},
	} {
		got, ok := commerce.MonthlyAmount(300000, c.interval, c.count)
		if got != c.want || ok != c.ok {
			t.Errorf("MonthlyAmount(30, %s, %d) = %d %v, want %d %v", c.interval, c.count, got, ok, c.want, c.ok)
		}
	}
}

// subscriptionShop records a shop's contracts, orders and billing
// attempts through the commands, each contract snapshot at the clock's
// time.
type subscriptionShop struct {
	t     *testing.T
	core  *testenv.Core
	shop  string
	mu    *sync.Mutex
	clock *time.Time
	last  eventlog.Position
	n     int
}

func (s *subscriptionShop) delivered(topic string) commands.Delivered {
	s.n++
	return commands.Delivered{ShopID: s.shop, Topic: topic, EventID: eventlog.DeterministicID("subs", s.shop, fmt.Sprint(s.n))}
}

func (s *subscriptionShop) note(res commands.Result, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
	s.last = max(s.last, res.Position)
}

func (s *subscriptionShop) contract(at time.Time, ext, status, interval string, count int, origin string) {
	s.mu.Lock()
	*s.clock = at
	s.mu.Unlock()
	s.note(s.core.Commands.RecordSubscriptionContract(context.Background(), commands.RecordSubscriptionContract{
		Delivered: s.delivered("subscription_contracts/update"), ExternalID: ext, Status: status, Interval: interval,
		IntervalCount: count, Currency: "EUR", OriginOrderExternalID: origin}, commands.Meta{Actor: "test", Source: "webhook"}))
}

func (s *subscriptionShop) order(ext string, units int) {
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	s.note(s.core.Commands.RecordOrder(context.Background(), commands.RecordOrder{Delivered: s.delivered("orders/create"),
		Snapshot: domain.OrderSnapshot{ExternalID: ext, Currency: "EUR", TotalPrice: domain.Amount(units * domain.AmountScale),
			CreatedAt: at, UpdatedAt: at}}, commands.Meta{Actor: "test", Source: "webhook"}))
}

func (s *subscriptionShop) attempt(at time.Time, contract, id string, success bool, order string) {
	topic := "subscription_billing_attempts/failure"
	if success {
		topic = "subscription_billing_attempts/success"
	}
	s.note(s.core.Commands.RecordBillingAttempt(context.Background(), commands.RecordBillingAttempt{Delivered: s.delivered(topic),
		ContractExternalID: contract, AttemptExternalID: id, Success: success, OrderExternalID: order, AttemptedAt: at},
		commands.Meta{Actor: "test", Source: "webhook"}))
}

// TestSubscriptionSummary: counts by status, recognised revenue of the
// window from the billed orders, the MRR estimate, churn of the contracts
// live at the window's start, dunning; another shop's contracts stay out.
func TestSubscriptionSummary(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { mu.Lock(); defer mu.Unlock(); return clock })
	rs := core.ReadSide(t, commerce.Projector(core.Codec))
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 12, 0, 0, 0, time.UTC) }
	a := &subscriptionShop{t: t, core: core, shop: "shp_subsa", mu: &mu, clock: &clock}
	a.order("901", 30)
	a.order("902", 32)
	a.order("903", 10)
	a.contract(day(2, 10), "1", "active", "month", 1, "901")
	a.attempt(day(2, 25), "1", "a1", false, "")   // before the window: not counted
	a.attempt(day(3, 10), "1", "a2", true, "902") // 32 EUR recognised; the price of c1 now
	a.attempt(day(3, 25), "1", "a3", true, "999") // its order not received: unpriced
	a.contract(day(2, 15), "2", "active", "week", 2, "903")
	a.contract(day(2, 20), "3", "active", "month", 1, "")
	a.contract(day(3, 20), "3", "cancelled", "month", 1, "")
	a.contract(day(3, 5), "4", "paused", "month", 1, "")
	a.contract(day(3, 6), "5", "active", "month", 3, "")
	a.attempt(day(3, 15), "5", "a4", false, "")
	a.contract(day(3, 7), "6", "active", "month", 1, "")
	a.contract(day(3, 8), "6", "cancelled", "month", 1, "")
	b := &subscriptionShop{t: t, core: core, shop: "shp_subsb", mu: &mu, clock: &clock}
	b.order("901", 500)
	b.contract(day(2, 1), "1", "active", "month", 1, "901")
	b.attempt(day(3, 2), "1", "b1", true, "901")
	rs.WaitFor(t, max(a.last, b.last))

	q := commerce.NewQueries(rs.DB())
	from, before := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	s, err := q.SubscriptionSummary(context.Background(), a.shop, from, before)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"active": 3, "paused": 1, "cancelled": 2, "expired": 0, "failed": 0, "stale": 0}
	if fmt.Sprint(s.ByStatus) != fmt.Sprint(want) || s.Contracts != 6 || s.Active() != 3 {
		t.Errorf("contracts %d by status %v, want 6 %v", s.Contracts, s.ByStatus, want)
	}
	if fmt.Sprint(s.Revenue) != fmt.Sprint([]commerce.CurrencyAmount{{Currency: "EUR", Amount: 320000, Count: 1}}) || s.UnpricedAttempts != 1 {
		t.Errorf("revenue %v, unpriced attempts %d", s.Revenue, s.UnpricedAttempts)
	}
	// c1: 32 a month; c2: 10 every 2 weeks = 21.7406; c5 has no order.
	if fmt.Sprint(s.MRR) != fmt.Sprint([]commerce.CurrencyAmount{{Currency: "EUR", Amount: 320000 + 217406, Count: 2}}) || s.UnpricedContracts != 1 {
		t.Errorf("MRR %v, unpriced contracts %d", s.MRR, s.UnpricedContracts)
	}
	if s.LiveAtStart != 3 || s.EndedOfStart != 1 || s.EndedInWindow != 2 || s.ChurnRate == nil || *s.ChurnRate != 1.0/3 {
		t.Errorf("churn: live at start %d, ended of start %d, ended %d, rate %v", s.LiveAtStart, s.EndedOfStart, s.EndedInWindow, s.ChurnRate)
	}
	if s.FailedAttempts != 1 || s.SuccessfulAttempts != 2 || s.InDunning != 1 {
		t.Errorf("dunning: failed %d, successful %d, in dunning %d", s.FailedAttempts, s.SuccessfulAttempts, s.InDunning)
	}

	// A window before any contract: no churn base, no rate.
	empty, err := q.SubscriptionSummary(context.Background(), a.shop, from.AddDate(-1, 0, 0), from.AddDate(-1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if empty.ChurnRate != nil || empty.LiveAtStart != 0 || len(empty.Revenue) != 0 || empty.FailedAttempts != 0 {
		t.Errorf("empty window: %+v", empty)
	}
	other, err := q.SubscriptionSummary(context.Background(), b.shop, from, before)
	if err != nil {
		t.Fatal(err)
	}
	if other.Contracts != 1 || fmt.Sprint(other.Revenue) != fmt.Sprint([]commerce.CurrencyAmount{{Currency: "EUR", Amount: 5000000, Count: 1}}) {
		t.Errorf("other shop: %+v", other)
	}
}
