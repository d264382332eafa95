package messaging

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
)

// eraseCustomer nulls the sender's number, profile name and text of the
// messages an erased customer sent (under its platform id or the
// messaging identity of its phone).
func eraseCustomer(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased) error {
	_, err := tx.ExecContext(ctx, `UPDATE inbound_messages SET from_phone = NULL, profile_name = NULL, text = NULL, redacted = 1
	WHERE shop_id = ? AND customer_id IN (?, ?)`, ev.ShopID, ev.CustomerID, ev.MessagingCustomerID)
	if err != nil {
		return fmt.Errorf("erase messages: %w", err)
	}
	return nil
}
