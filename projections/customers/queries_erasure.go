package customers

import (
	"context"
	"fmt"
)

// ProfilesLeft counts the customer's profile rows still holding personal data (`cgp gdpr verify`: 0 once the
// erasure is complete).
func (q *Queries) ProfilesLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM customers WHERE shop_id = ?1 AND customer_id = ?2
		AND (email IS NOT NULL OR first_name IS NOT NULL OR last_name IS NOT NULL OR phone IS NOT NULL)`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("profilesLeft: %w", err)
	}
	return n, nil
}
