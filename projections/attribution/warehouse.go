package attribution

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// WarehouseRows are the rows of a warehouse query.
type WarehouseRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Warehouse runs a query on the warehouse the read models are shipped to
// (readmodel/versioned/outbox): ClickHouse at scale.
type Warehouse interface {
	Query(ctx context.Context, query string, args ...any) (WarehouseRows, error)
}

// WarehouseSummary answers Summary from the warehouse's copies of
// attribution_orders and attribution_credits: ReplacingMergeTree tables
// read with FINAL, tombstones left out. It sees what the shipper has sent
// (a second or so behind the read model).
type WarehouseSummary struct{ W Warehouse }

// summarySQL is the warehouse's summary query for groupBy (validated) and
// which bounds of ordered_at are set.
func summarySQL(groupBy string, from, before bool) string {
	where := []string{"o.shop_id = ?", "o._deleted = 0", "c.shop_id = ?", "c._deleted = 0", "c.model = ?", "c.weight > 0"}
	if from {
		where = append(where, "o.ordered_at >= ?")
	}
	if before {
		where = append(where, "o.ordered_at < ?")
	}
	return `SELECT ` + summaryColumns[groupBy] + ` AS k, o.currency AS currency, sum(c.weight) AS orders, sum(c.revenue) AS revenue,
	sum(c.refunded) AS refunded
FROM attribution_orders AS o FINAL
INNER JOIN attribution_credits AS c FINAL ON c.shop_id = o.shop_id AND c.order_id = o.order_id
WHERE ` + strings.Join(where, " AND ") + `
GROUP BY k, currency
ORDER BY revenue DESC, k, currency`
}

// Summary is Queries.Summary computed by the warehouse.
func (w WarehouseSummary) Summary(ctx context.Context, shop, model, groupBy string, from, before time.Time) ([]SummaryRow, error) {
	if summaryColumns[groupBy] == "" {
		return nil, domain.Invalid("group_by", "unknown group")
	}
	args := []any{shop, shop, model}
	if !from.IsZero() {
		args = append(args, from.UnixMicro())
	}
	if !before.IsZero() {
		args = append(args, before.UnixMicro())
	}
	rows, err := w.W.Query(ctx, summarySQL(groupBy, !from.IsZero(), !before.IsZero()), args...)
	if err != nil {
		return nil, fmt.Errorf("attribution summary from the warehouse: %w", err)
	}
	defer rows.Close()
	var out []SummaryRow
	for rows.Next() {
		var r SummaryRow
		var rev, ref int64
		if err := rows.Scan(&r.Key, &r.Currency, &r.Orders, &rev, &ref); err != nil {
			return nil, fmt.Errorf("attribution summary from the warehouse: %w", err)
		}
		r.Revenue, r.Refunded = domain.Amount(rev), domain.Amount(ref)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attribution summary from the warehouse: %w", err)
	}
	return out, nil
}
