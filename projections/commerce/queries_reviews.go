package commerce

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// FulfillmentFulfilled is the fulfillment status of an order shipped in
// full.
const FulfillmentFulfilled = "fulfilled"

// VerifyingOrder returns the order backing a review of product by customer:
// a fulfilled, not cancelled order of the customer containing the product,
// preferring prefer (the order a review token names) when it qualifies;
// "" when there is none.
func (q *Queries) VerifyingOrder(ctx context.Context, shop, customer, product, prefer string) (string, error) {
	if customer == "" || product == "" {
		return "", nil
	}
	rows, err := q.db.QueryContext(ctx, `SELECT order_id, lines FROM orders WHERE shop_id = ? AND customer_id = ?
		AND fulfillment_status = ? AND cancelled_at = 0 ORDER BY order_id = ? DESC, created_at DESC LIMIT 500`,
		shop, customer, FulfillmentFulfilled, prefer)
	if err != nil {
		return "", fmt.Errorf("verifying order: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, raw string
		if err := rows.Scan(&id, &raw); err != nil {
			return "", fmt.Errorf("verifying order: %w", err)
		}
		var lines []domain.OrderLine
		if err := json.Unmarshal([]byte(raw), &lines); err != nil {
			return "", fmt.Errorf("verifying order %s lines: %w", id, err)
		}
		for _, l := range lines {
			if l.ProductID == product {
				return id, nil
			}
		}
	}
	return "", rows.Err()
}

// ProductIDByHandle returns the live product of a shop with handle.
func (q *Queries) ProductIDByHandle(ctx context.Context, shop, handle string) (string, error) {
	var id string
	err := q.db.QueryRowContext(ctx, `SELECT product_id FROM products WHERE shop_id = ? AND handle = ? AND deleted_at = 0
		ORDER BY created_at LIMIT 1`, shop, handle).Scan(&id)
	if err := readmodel.FindError(err, "product"); err != nil {
		return "", err
	}
	return id, nil
}
