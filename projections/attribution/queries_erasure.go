package attribution

import (
	"context"
	"fmt"
)

// IdentityLinksLeft counts the customer's identity links (`cgp gdpr verify`: 0 once the
// erasure is complete).
func (q *Queries) IdentityLinksLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM identity_links WHERE shop_id = ?1 AND customer_id = ?2`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("identityLinksLeft: %w", err)
	}
	return n, nil
}
