package commerce

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
)

// eraseCustomer nulls the personal data of an erased customer's orders
// and checkouts, and of the guest orders the request listed.
func eraseCustomer(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased) error {
	if _, err := tx.ExecContext(ctx, `UPDATE orders SET email = NULL, redacted = 1
	WHERE shop_id = ? AND customer_id = ?`, ev.ShopID, ev.CustomerID); err != nil {
		return fmt.Errorf("erase orders: %w", err)
	}
	for _, id := range ev.Orders {
		if _, err := tx.ExecContext(ctx, `UPDATE orders SET email = NULL, redacted = 1 WHERE order_id = ? AND shop_id = ?`,
			id, ev.ShopID); err != nil {
			return fmt.Errorf("erase order: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE checkouts SET email = NULL, redacted = 1
	WHERE shop_id = ? AND customer_id = ?`, ev.ShopID, ev.CustomerID); err != nil {
		return fmt.Errorf("erase checkouts: %w", err)
	}
	return nil
}
