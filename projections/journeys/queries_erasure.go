package journeys

import (
	"context"
	"fmt"
)

// ActiveEnrollmentsLeft counts the customer's active journey enrollments (`cgp gdpr verify`: 0 once the
// erasure is complete).
func (q *Queries) ActiveEnrollmentsLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM journey_enrollments WHERE shop_id = ?1 AND customer_id = ?2 AND status = 'active'`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("activeEnrollmentsLeft: %w", err)
	}
	return n, nil
}
