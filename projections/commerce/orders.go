package commerce

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// ordersListIndexes (migration 2) serve the order list's sorts and filters
// with keyset pagination: every index ends with order_id, the tie-breaker.
const ordersListIndexes = `
CREATE INDEX orders_shop_updated ON orders (shop_id, updated_at, order_id);
CREATE INDEX orders_shop_total ON orders (shop_id, total_price, order_id);
CREATE INDEX orders_shop_customer_created ON orders (shop_id, customer_id, created_at, order_id);
CREATE INDEX orders_shop_financial_created ON orders (shop_id, financial_status, created_at, order_id);
CREATE INDEX orders_shop_fulfillment_created ON orders (shop_id, fulfillment_status, created_at, order_id);
`

// Sort keys of the order list.
const (
	OrderSortCreatedAt  = "created_at"
	OrderSortUpdatedAt  = "updated_at"
	OrderSortTotalPrice = "total_price"
)

// FulfillmentUnfulfilled is the fulfillment status of an order the
// platform reports none for (nothing shipped yet).
const FulfillmentUnfulfilled = "unfulfilled"

// orderSortColumns maps a sort key to its column.
var orderSortColumns = map[string]string{
	OrderSortCreatedAt:  "created_at",
	OrderSortUpdatedAt:  "updated_at",
	OrderSortTotalPrice: "total_price",
}

// OrderKey is a position in a sorted order list: the sort column's value
// (Unix microseconds for times, Amount units for money) and the order id.
type OrderKey struct {
	Value int64  `json:"v"`
	ID    string `json:"id"`
}

// OrderListQuery selects a page of a shop's orders.
type OrderListQuery struct {
	Shop string
	// CustomerID, FinancialStatus and FulfillmentStatus filter when not
	// empty; FulfillmentUnfulfilled also matches orders with no status.
	CustomerID, FinancialStatus, FulfillmentStatus string
	// CreatedFrom and CreatedBefore bound created_at to [from, before);
	// the zero time leaves that side open.
	CreatedFrom, CreatedBefore time.Time
	Sort                       string // one of the OrderSort constants
	Desc                       bool
	After                      *OrderKey // nil for the first page
	Limit                      int
}

const orderColumns = `order_id, shop_id, external_id, customer_id, name, email, financial_status,
	fulfillment_status, currency, total_price, subtotal_price, total_tax, total_discounts, refunded, lines, source_name,
	discount_codes, tags, landing_site, referring_site, utm, click_ids, created_at, updated_at, processed_at, cancelled_at,
	last_topic, snapshots, redacted, version`

// ListOrders returns up to Limit orders after After in the query's order
// (ties broken by order id), and the key to continue from when there are
// more. The walk never skips or repeats an order whose sort value does not
// change during it; sorted by created_at (which never changes) that holds
// for every order, and orders arriving during the walk are either seen once
// or not at all.
func (q *Queries) ListOrders(ctx context.Context, lq OrderListQuery) ([]Order, *OrderKey, error) {
	col := orderSortColumns[lq.Sort]
	if col == "" {
		return nil, nil, domain.Invalid("sort", "unknown sort field")
	}
	if lq.Limit < 1 {
		return nil, nil, domain.Invalid("limit", "limit must be positive")
	}
	where, args := orderConditions(lq)
	dir, cmp := "ASC", ">"
	if lq.Desc {
		dir, cmp = "DESC", "<"
	}
	if lq.After != nil {
		where = append(where, fmt.Sprintf("(%s, order_id) %s (?, ?)", col, cmp))
		args = append(args, lq.After.Value, lq.After.ID)
	}
	args = append(args, lq.Limit+1)
	query := `SELECT ` + orderColumns + ` FROM orders WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY %s %s, order_id %s LIMIT ?`, col, dir, dir)
	out, err := readmodel.List(ctx, q.db, "orders", scanOrder, query, args...)
	if err != nil {
		return nil, nil, err
	}
	var next *OrderKey
	if len(out) > lq.Limit {
		out = out[:lq.Limit]
		last := &out[len(out)-1]
		next = &OrderKey{Value: orderSortValue(last, lq.Sort), ID: last.ID}
	}
	if err := q.attachActions(ctx, lq.Shop, out); err != nil {
		return nil, nil, err
	}
	return out, next, nil
}

// orderConditions are the query's filters as SQL conditions and arguments.
func orderConditions(lq OrderListQuery) ([]string, []any) {
	where := []string{"shop_id = ?"}
	args := []any{lq.Shop}
	if lq.CustomerID != "" {
		where = append(where, "customer_id = ?")
		args = append(args, lq.CustomerID)
	}
	if lq.FinancialStatus != "" {
		where = append(where, "financial_status = ?")
		args = append(args, lq.FinancialStatus)
	}
	switch lq.FulfillmentStatus {
	case "":
	case FulfillmentUnfulfilled:
		where = append(where, "fulfillment_status IN ('', ?)")
		args = append(args, FulfillmentUnfulfilled)
	default:
		where = append(where, "fulfillment_status = ?")
		args = append(args, lq.FulfillmentStatus)
	}
	if !lq.CreatedFrom.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, lq.CreatedFrom.UnixMicro())
	}
	if !lq.CreatedBefore.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, lq.CreatedBefore.UnixMicro())
	}
	return where, args
}

func orderSortValue(o *Order, sort string) int64 {
	switch sort {
	case OrderSortUpdatedAt:
		return readmodel.Micros(o.UpdatedAt)
	case OrderSortTotalPrice:
		return int64(o.TotalPrice)
	default:
		return readmodel.Micros(o.CreatedAt)
	}
}

// scanOrder reads a row of orderColumns.
func scanOrder(s readmodel.Scanner) (Order, error) {
	var o Order
	var total, subtotal, tax, discounts, refunded, created, updated, processed, cancelled int64
	var lines, codes, tags, utm, clicks string
	if err := s.Scan(&o.ID, &o.ShopID, &o.ExternalID, &o.CustomerID, &o.Name, &o.Email, &o.FinancialStatus,
		&o.FulfillmentStatus, &o.Currency, &total, &subtotal, &tax, &discounts, &refunded, &lines, &o.SourceName, &codes,
		&tags, &o.LandingSite, &o.ReferringSite, &utm, &clicks, &created, &updated, &processed, &cancelled, &o.LastTopic,
		&o.Snapshots, &o.Redacted, &o.Version); err != nil {
		return Order{}, err
	}
	o.TotalPrice, o.SubtotalPrice, o.TotalTax = domain.Amount(total), domain.Amount(subtotal), domain.Amount(tax)
	o.TotalDiscounts, o.Refunded = domain.Amount(discounts), domain.Amount(refunded)
	o.CreatedAt, o.UpdatedAt = readmodel.Time(created), readmodel.Time(updated)
	o.ProcessedAt, o.CancelledAt = readmodel.Time(processed), readmodel.Time(cancelled)
	if err := unmarshalAll(col{lines, &o.Lines}, col{codes, &o.DiscountCodes}, col{tags, &o.Tags}, col{utm, &o.UTM},
		col{clicks, &o.ClickIDs}); err != nil {
		return Order{}, fmt.Errorf("order %s: %w", o.ID, err)
	}
	return o, nil
}
