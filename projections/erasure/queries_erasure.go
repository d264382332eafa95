package erasure

import (
	"context"
	"fmt"
)

// FollowupsLeft counts the customer's erasure clean-ups still pending (`cgp gdpr verify`: 0 once the
// erasure is complete).
func (q *Queries) FollowupsLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM erasure_followups WHERE shop_id = ?1 AND customer_id = ?2`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("followupsLeft: %w", err)
	}
	return n, nil
}
