package commerce

import (
	"context"
	"fmt"
)

// OrdersLeft counts the customer's orders still holding an e-mail address (`cgp gdpr verify`: 0 once the
// erasure is complete).
func (q *Queries) OrdersLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM orders WHERE shop_id = ?1 AND customer_id = ?2 AND email IS NOT NULL`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("ordersLeft: %w", err)
	}
	return n, nil
}

// CheckoutsLeft counts the customer's checkouts still holding an e-mail address (`cgp gdpr verify`: 0 once the
// erasure is complete).
func (q *Queries) CheckoutsLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM checkouts WHERE shop_id = ?1 AND customer_id = ?2 AND email IS NOT NULL`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("checkoutsLeft: %w", err)
	}
	return n, nil
}
