package messaging

import (
	"context"
	"fmt"
)

// MessagesLeft counts the customer's inbound messages still holding personal data (`cgp gdpr verify`: 0 once the
// erasure is complete).
func (q *Queries) MessagesLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM inbound_messages WHERE shop_id = ?1 AND customer_id = ?2
		AND (from_phone IS NOT NULL OR profile_name IS NOT NULL OR text IS NOT NULL)`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("messagesLeft: %w", err)
	}
	return n, nil
}
