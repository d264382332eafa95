package intelligence

import (
	"context"

	"github.com/cgp-platform/cgp/readmodel"
)

// VariantStock is the stock of one variant of a live product: the sum of
// its inventory item's known available quantities over every location,
// or, when no location reports one, the quantity the product snapshot
// carries.
type VariantStock struct {
	VariantID, ProductID, SKU string
	Available                 int64
}

// VariantStocks returns the stock of every variant of the shop's live
// products, by variant id. It reads the commerce read model's
// product_variants, products and inventory_levels tables (same store), so
// it sees them as far as the commerce projector got.
func (q *Queries) VariantStocks(ctx context.Context, shop string) ([]VariantStock, error) {
	return readmodel.List(ctx, q.db, "variant stock", func(s readmodel.Scanner) (VariantStock, error) {
		var v VariantStock
		err := s.Scan(&v.VariantID, &v.ProductID, &v.SKU, &v.Available)
		return v, err
	}, `SELECT v.variant_id, v.product_id, v.sku,
	COALESCE((SELECT SUM(l.available) FROM inventory_levels l WHERE v.inventory_item_id <> '' AND l.shop_id = v.shop_id
		AND l.inventory_item_id = v.inventory_item_id AND l.available IS NOT NULL), v.inventory_quantity)
FROM product_variants v JOIN products p ON p.product_id = v.product_id AND p.deleted_at = 0
WHERE v.shop_id = ? ORDER BY v.variant_id`, shop)
}
