package customers

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
)

// eraseCustomer nulls the personal data of an erased customer's profile
// (and of the profile of the messaging identity of its phone) and marks
// it redacted; the figures and tags stay, they are the shop's.
func eraseCustomer(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, pos int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE customers SET email = NULL, first_name = NULL, last_name = NULL, phone = NULL,
	redacted = 1, version = MAX(version, ?) WHERE shop_id = ? AND customer_id IN (?, ?)`,
		pos, ev.ShopID, ev.CustomerID, ev.MessagingCustomerID)
	if err != nil {
		return fmt.Errorf("erase customer: %w", err)
	}
	return nil
}
