package commerce

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// ContractStatuses are the platform's subscription contract statuses, in
// the order the summary lists them. A contract known only from a billing
// attempt (its snapshot not received yet) has no status and is counted
// under StatusUnknown.
var ContractStatuses = []string{"active", "paused", "cancelled", "expired", "failed", "stale"}

// StatusUnknown counts the contracts whose snapshot has not arrived.
const StatusUnknown = "unknown"

// CurrencyAmount is an amount in one currency, with the number of items
// (attempts or contracts) it sums.
type CurrencyAmount struct {
	Currency string
	Amount   domain.Amount
	Count    int
}

// SubscriptionSummary is a shop's subscription economics over a window
// [From, Before).
type SubscriptionSummary struct {
	From, Before time.Time
	// Contracts is the number of contracts known; ByStatus counts them by
	// status (every status of ContractStatuses present, zero or not).
	Contracts int
	ByStatus  map[string]int
	// Revenue is the recognised recurring revenue of the window per
	// currency: the totals of the orders its successful billing attempts
	// created. UnpricedAttempts are successful attempts of the window
	// whose order has not been received (no amount yet).
	Revenue          []CurrencyAmount
	UnpricedAttempts int
	// MRR estimates the monthly recurring revenue of the active contracts
	// per currency: each contract's price per billing cycle (its last
	// billed order, else its origin order) scaled to a month by its
	// billing interval. UnpricedContracts are the active contracts with no
	// order received or no usable interval.
	MRR               []CurrencyAmount
	UnpricedContracts int
	// LiveAtStart are the contracts created before From and not ended
	// then; EndedInWindow the contracts that ended (cancelled, expired,
	// failed) in the window; EndedOfStart those of LiveAtStart among them.
	// ChurnRate is EndedOfStart / LiveAtStart, nil when LiveAtStart is 0.
	LiveAtStart, EndedInWindow, EndedOfStart int
	ChurnRate                                *float64
	// FailedAttempts and SuccessfulAttempts are the billing attempts of
	// the window; InDunning the contracts not ended whose last attempt
	// failed.
	FailedAttempts, SuccessfulAttempts, InDunning int
}

// Active is the number of active contracts.
func (s *SubscriptionSummary) Active() int { return s.ByStatus["active"] }

// daysPerMonth is the mean month of the Gregorian calendar.
const daysPerMonth = 365.2425 / 12

// MonthlyAmount scales a price billed every count intervals (day, week,
// month, year; the platform's case does not matter) to a month. It
// reports false for an unknown interval or a count below 1.
func MonthlyAmount(price domain.Amount, interval string, count int) (domain.Amount, bool) {
	if count < 1 {
		return 0, false
	}
	var perMonth float64 // billing cycles of one interval per month
	switch strings.ToLower(interval) {
	case "day":
		perMonth = daysPerMonth
	case "week":
		perMonth = daysPerMonth / 7
	case "month":
		perMonth = 1
	case "year":
		perMonth = 1.0 / 12
	default:
		return 0, false
	}
	return domain.Amount(math.Round(float64(price) * perMonth / float64(count))), true
}

// SubscriptionSummary computes a shop's subscription economics over
// [from, before): every contract is read once (a shop's contracts are few
// next to its orders), the window's billing attempts by the shop's
// attempt index.
func (q *Queries) SubscriptionSummary(ctx context.Context, shop string, from, before time.Time) (*SubscriptionSummary, error) {
	s := &SubscriptionSummary{From: from, Before: before, ByStatus: map[string]int{}}
	for _, st := range ContractStatuses {
		s.ByStatus[st] = 0
	}
	lo, hi := readmodel.Micros(from), readmodel.Micros(before)
	if err := q.summarizeContracts(ctx, s, shop, lo, hi); err != nil {
		return nil, err
	}
	if err := q.summarizeAttempts(ctx, s, shop, lo, hi); err != nil {
		return nil, err
	}
	if s.LiveAtStart > 0 {
		rate := float64(s.EndedOfStart) / float64(s.LiveAtStart)
		s.ChurnRate = &rate
	}
	return s, nil
}

// summarizeContracts counts the contracts and estimates the MRR. A
// contract's price per cycle is the total of the order its last
// successful attempt created, else of its origin order.
func (q *Queries) summarizeContracts(ctx context.Context, s *SubscriptionSummary, shop string, lo, hi int64) error {
	rows, err := q.db.QueryContext(ctx, `SELECT c.status, c.dunning_state, c.interval, c.interval_count, c.currency,
		c.created_at, c.churned_at, p.total_price, p.currency
		FROM subscription_contracts c LEFT JOIN orders p ON p.order_id = COALESCE(
			(SELECT a.order_id FROM billing_attempts a JOIN orders o ON o.order_id = a.order_id
				WHERE a.subscription_id = c.subscription_id AND a.success = 1 ORDER BY a.attempted_at DESC, a.attempt_id DESC LIMIT 1),
			NULLIF(c.origin_order_id, ''))
		WHERE c.shop_id = ?`, shop)
	if err != nil {
		return fmt.Errorf("read subscription contracts: %w", err)
	}
	defer rows.Close()
	mrr := map[string]*CurrencyAmount{}
	for rows.Next() {
		var status, dunning, interval, currency string
		var count int
		var created, churned int64
		var price *int64
		var priceCurrency *string
		if err := rows.Scan(&status, &dunning, &interval, &count, &currency, &created, &churned, &price, &priceCurrency); err != nil {
			return fmt.Errorf("read subscription contracts: %w", err)
		}
		s.Contracts++
		if status == "" {
			status = StatusUnknown
		}
		s.ByStatus[status]++
		ended := domain.ContractEnded(status)
		if !ended && dunning == domain.DunningDunning {
			s.InDunning++
		}
		// created is 0 for a contract known only from its attempts: it
		// has no start to compare, so it is left out of the churn base.
		if created > 0 && created < lo && (churned == 0 || churned >= lo) && (churned > 0 || !ended) {
			s.LiveAtStart++
			if churned >= lo && churned < hi {
				s.EndedOfStart++
			}
		}
		if churned >= lo && churned < hi && churned > 0 {
			s.EndedInWindow++
		}
		if status != "active" {
			continue
		}
		if currency == "" && priceCurrency != nil {
			currency = *priceCurrency
		}
		var monthly domain.Amount
		ok := price != nil
		if ok {
			monthly, ok = MonthlyAmount(domain.Amount(*price), interval, count)
		}
		if !ok {
			s.UnpricedContracts++
			continue
		}
		addAmount(mrr, currency, monthly)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read subscription contracts: %w", err)
	}
	s.MRR = sortedAmounts(mrr)
	return nil
}

// summarizeAttempts sums the window's billing attempts: the recognised
// revenue of the successful ones (their orders' totals) and the failures.
func (q *Queries) summarizeAttempts(ctx context.Context, s *SubscriptionSummary, shop string, lo, hi int64) error {
	rows, err := q.db.QueryContext(ctx, `SELECT a.success, o.total_price, o.currency FROM billing_attempts a
		LEFT JOIN orders o ON o.order_id = a.order_id AND a.order_id != ''
		WHERE a.shop_id = ? AND a.attempted_at >= ? AND a.attempted_at < ?`, shop, lo, hi)
	if err != nil {
		return fmt.Errorf("read billing attempts: %w", err)
	}
	defer rows.Close()
	revenue := map[string]*CurrencyAmount{}
	for rows.Next() {
		var success bool
		var total *int64
		var currency *string
		if err := rows.Scan(&success, &total, &currency); err != nil {
			return fmt.Errorf("read billing attempts: %w", err)
		}
		if !success {
			s.FailedAttempts++
			continue
		}
		s.SuccessfulAttempts++
		if total == nil {
			s.UnpricedAttempts++
			continue
		}
		addAmount(revenue, *currency, domain.Amount(*total))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read billing attempts: %w", err)
	}
	s.Revenue = sortedAmounts(revenue)
	return nil
}

func addAmount(m map[string]*CurrencyAmount, currency string, a domain.Amount) {
	c := m[currency]
	if c == nil {
		c = &CurrencyAmount{Currency: currency}
		m[currency] = c
	}
	c.Amount += a
	c.Count++
}

// sortedAmounts lists the amounts largest first, then by currency.
func sortedAmounts(m map[string]*CurrencyAmount) []CurrencyAmount {
	out := make([]CurrencyAmount, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b CurrencyAmount) int {
		if a.Amount != b.Amount {
			if a.Amount > b.Amount {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Currency, b.Currency)
	})
	return out
}
