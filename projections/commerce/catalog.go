package commerce

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// catalogIndexes serve the admin API's product and inventory lists (keyset
// pagination on each sort key, the id breaking ties).
const catalogIndexes = `
CREATE INDEX products_shop_updated ON products (shop_id, updated_at, product_id);
CREATE INDEX products_shop_title ON products (shop_id, title, product_id);
CREATE INDEX inventory_levels_shop_item ON inventory_levels (shop_id, inventory_item_id, level_id);
CREATE INDEX inventory_levels_shop_updated ON inventory_levels (shop_id, updated_at, level_id);
CREATE INDEX inventory_levels_shop_location ON inventory_levels (shop_id, location_id, inventory_item_id, level_id);
CREATE INDEX product_variants_shop_product ON product_variants (shop_id, product_id);
`

// catalogCases fold the admin API's catalog events.
var catalogCases = []projections.TxCase{
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ProductCreated, e *projections.DecodedEvent) error {
		return applyProductCreated(ctx, tx, ev, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ProductUpdated, e *projections.DecodedEvent) error {
		return applyProductUpdated(ctx, tx, ev, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.InventoryAdjusted, e *projections.DecodedEvent) error {
		for _, it := range ev.Items {
			if err := upsertInventoryLevel(ctx, tx, it.LevelID, ev.ShopID, it.InventoryItemID, it.LocationID, &it.Available,
				ev.AdjustedAt.UnixMicro(), int64(e.Position)); err != nil {
				return err
			}
		}
		return nil
	}),
}

func applyProductCreated(ctx context.Context, tx *sql.Tx, ev *domain.ProductCreated, pos int64) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO products (product_id, shop_id, external_id, title, handle, status, vendor,
	product_type, tags, variants, created_at, updated_at, version) VALUES (?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (product_id) DO NOTHING`,
		ev.ProductID, ev.ShopID, ev.Title, ev.Handle, ev.Status, ev.Vendor, ev.ProductType, readmodel.JSONText(ev.Tags, "[]"),
		readmodel.JSONText(ev.Variants, "[]"), readmodel.Micros(ev.CreatedAt), readmodel.Micros(ev.CreatedAt), pos)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // replayed
	}
	for _, v := range ev.Variants {
		if _, err := tx.ExecContext(ctx, `INSERT INTO product_variants (shop_id, variant_id, product_id, sku, price, inventory_item_id,
			inventory_quantity) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, variant_id) DO NOTHING`,
			ev.ShopID, v.VariantID, ev.ProductID, v.SKU, int64(v.Price), v.InventoryItemID, v.InventoryQuantity); err != nil {
			return err
		}
	}
	return nil
}

func applyProductUpdated(ctx context.Context, tx *sql.Tx, ev *domain.ProductUpdated, pos int64) error {
	var tags, variants any
	if ev.Tags != nil {
		tags = readmodel.JSONText(*ev.Tags, "[]")
	}
	if len(ev.Variants) > 0 {
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT variants FROM products WHERE product_id = ? AND shop_id = ? AND version < ? AND deleted_at = 0`,
			ev.ProductID, ev.ShopID, pos).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // replayed, or the product is deleted
		}
		if err != nil {
			return err
		}
		var vs []domain.Variant
		if err := json.Unmarshal([]byte(raw), &vs); err != nil {
			return fmt.Errorf("variants of %s: %w", ev.ProductID, err)
		}
		ApplyVariantChanges(vs, ev.Variants)
		variants = readmodel.JSONText(vs, "[]")
		for _, ch := range ev.Variants {
			if _, err := tx.ExecContext(ctx, `UPDATE product_variants SET price = COALESCE(?, price), sku = COALESCE(?, sku)
				WHERE shop_id = ? AND variant_id = ? AND product_id = ?`,
				amountArg(ch.Price), ch.SKU, ev.ShopID, ch.VariantID, ev.ProductID); err != nil {
				return err
			}
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE products SET title = COALESCE(?, title), status = COALESCE(?, status),
	vendor = COALESCE(?, vendor), product_type = COALESCE(?, product_type), tags = COALESCE(?, tags),
	variants = COALESCE(?, variants), updated_at = ?, version = ?
	WHERE product_id = ? AND shop_id = ? AND version < ? AND deleted_at = 0`,
		ev.Title, ev.Status, ev.Vendor, ev.ProductType, tags, variants, readmodel.Micros(ev.UpdatedAt), pos, ev.ProductID, ev.ShopID, pos)
	return err
}

// ApplyVariantChanges applies the changes of a ProductUpdated to the
// variants they name (the read model's fold, and a write's answer before
// the read model caught up).
func ApplyVariantChanges(vs []domain.Variant, changes []domain.VariantChange) {
	for _, ch := range changes {
		for i := range vs {
			if vs[i].VariantID == ch.VariantID {
				ch.Apply(&vs[i])
			}
		}
	}
}

func amountArg(a *domain.Amount) any {
	if a == nil {
		return nil
	}
	return int64(*a)
}

// upsertInventoryLevel sets a level unless a later event already did.
func upsertInventoryLevel(ctx context.Context, tx *sql.Tx, levelID, shop, item, location string, available *int, updated, pos int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO inventory_levels (level_id, shop_id, inventory_item_id, location_id, available, updated_at, version)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (level_id) DO UPDATE SET available = excluded.available,
		updated_at = excluded.updated_at, version = excluded.version WHERE inventory_levels.version < excluded.version`,
		levelID, shop, item, location, available, updated, pos)
	return err
}

// CatalogKey is a position in a sorted catalog list: the sort column's
// value (V for numbers, S for text) and the row's id.
type CatalogKey struct {
	V  int64  `json:"v,omitempty"`
	S  string `json:"s,omitempty"`
	ID string `json:"id"`
}

// Sort keys of the product and inventory lists.
const (
	ProductSortCreatedAt   = "created_at"
	ProductSortUpdatedAt   = "updated_at"
	ProductSortTitle       = "title"
	InventorySortItemID    = "inventory_item_id"
	InventorySortUpdatedAt = "updated_at"
)

// ProductListQuery selects a page of a shop's products. Deleted products
// are left out of lists (GET of one still answers, with deleted true).
type ProductListQuery struct {
	Shop   string
	Status string // "" for any status
	Vendor string // "" for any vendor
	Sort   string // a ProductSort constant
	Desc   bool
	After  *CatalogKey
	Limit  int
}

const productColumns = `product_id, shop_id, external_id, title, handle, status, vendor, product_type, tags,
	variants, created_at, updated_at, deleted_at`

// Products returns up to Limit products after After in the query's order,
// and the key to continue from when there are more.
func (q *Queries) Products(ctx context.Context, lq ProductListQuery) ([]Product, *CatalogKey, error) {
	col := map[string]string{ProductSortCreatedAt: "created_at", ProductSortUpdatedAt: "updated_at", ProductSortTitle: "title"}[lq.Sort]
	if col == "" {
		return nil, nil, domain.Invalid("sort", "unknown sort field")
	}
	w := catalogWhere{conds: []string{"shop_id = ?", "deleted_at = 0"}, args: []any{lq.Shop}}
	w.add(lq.Status != "", "status = ?", lq.Status)
	w.add(lq.Vendor != "", "vendor = ?", lq.Vendor)
	page := catalogPage{col: col, id: "product_id", desc: lq.Desc, after: lq.After, limit: lq.Limit, text: lq.Sort == ProductSortTitle}
	query, args := page.sql(`SELECT `+productColumns+` FROM products`, w)
	rows, err := readmodel.List(ctx, q.db, "products", scanProduct, query, args...)
	if err != nil {
		return nil, nil, err
	}
	return readmodel.CutPage(rows, lq.Limit, func(p *Product) CatalogKey {
		switch lq.Sort {
		case ProductSortTitle:
			return CatalogKey{S: p.Title, ID: p.ID}
		case ProductSortUpdatedAt:
			return CatalogKey{V: readmodel.Micros(p.UpdatedAt), ID: p.ID}
		}
		return CatalogKey{V: readmodel.Micros(p.CreatedAt), ID: p.ID}
	})
}

func scanProduct(s readmodel.Scanner) (Product, error) {
	var p Product
	var tags, variants string
	var created, updated, deleted int64
	if err := s.Scan(&p.ID, &p.ShopID, &p.ExternalID, &p.Title, &p.Handle, &p.Status, &p.Vendor, &p.ProductType, &tags, &variants,
		&created, &updated, &deleted); err != nil {
		return Product{}, err
	}
	p.CreatedAt, p.UpdatedAt, p.DeletedAt = readmodel.Time(created), readmodel.Time(updated), readmodel.Time(deleted)
	return p, unmarshalAll(col{tags, &p.Tags}, col{variants, &p.Variants})
}

// StockLevel is an inventory level with the variant holding its item.
type StockLevel struct {
	LevelID string
	InventoryLevel
	SKU, ProductID string // "" when no live product holds the item
}

// InventoryListQuery selects a page of a shop's inventory levels.
type InventoryListQuery struct {
	Shop      string
	ProductID string // "" for any product
	// ProductIDs, when not empty, keeps the levels of these products only.
	ProductIDs []string
	SKU        string // "" for any sku
	LocationID string // "" for any location
	Sort       string // an InventorySort constant
	Desc       bool
	After      *CatalogKey
	Limit      int
}

// InventoryLevels returns up to Limit levels after After in the query's
// order, and the key to continue from when there are more.
func (q *Queries) InventoryLevels(ctx context.Context, lq InventoryListQuery) ([]StockLevel, *CatalogKey, error) {
	col := map[string]string{InventorySortItemID: "l.inventory_item_id", InventorySortUpdatedAt: "l.updated_at"}[lq.Sort]
	if col == "" {
		return nil, nil, domain.Invalid("sort", "unknown sort field")
	}
	w := catalogWhere{conds: []string{"l.shop_id = ?"}, args: []any{lq.Shop}}
	w.add(lq.LocationID != "", "l.location_id = ?", lq.LocationID)
	w.add(lq.ProductID != "", "l.inventory_item_id IN (SELECT inventory_item_id FROM product_variants WHERE shop_id = ? AND product_id = ?)", lq.Shop, lq.ProductID)
	if len(lq.ProductIDs) > 0 {
		args := []any{lq.Shop}
		for _, id := range lq.ProductIDs {
			args = append(args, id)
		}
		w.add(true, "l.inventory_item_id IN (SELECT inventory_item_id FROM product_variants WHERE shop_id = ? AND product_id IN (?"+
			strings.Repeat(", ?", len(lq.ProductIDs)-1)+"))", args...)
	}
	w.add(lq.SKU != "", "l.inventory_item_id IN (SELECT inventory_item_id FROM product_variants WHERE shop_id = ? AND sku = ?)", lq.Shop, lq.SKU)
	page := catalogPage{col: col, id: "l.level_id", desc: lq.Desc, after: lq.After, limit: lq.Limit, text: lq.Sort == InventorySortItemID}
	query, args := page.sql(`SELECT l.level_id, l.inventory_item_id, l.location_id, l.available, l.updated_at,
	COALESCE((SELECT v.sku FROM product_variants v WHERE v.shop_id = l.shop_id AND v.inventory_item_id = l.inventory_item_id
		ORDER BY v.variant_id LIMIT 1), ''),
	COALESCE((SELECT v.product_id FROM product_variants v WHERE v.shop_id = l.shop_id AND v.inventory_item_id = l.inventory_item_id
		ORDER BY v.variant_id LIMIT 1), '')
	FROM inventory_levels l`, w)
	rows, err := readmodel.List(ctx, q.db, "inventory levels", scanStockLevel, query, args...)
	if err != nil {
		return nil, nil, err
	}
	return readmodel.CutPage(rows, lq.Limit, func(l *StockLevel) CatalogKey {
		if lq.Sort == InventorySortUpdatedAt {
			return CatalogKey{V: readmodel.Micros(l.UpdatedAt), ID: l.LevelID}
		}
		return CatalogKey{S: l.InventoryItemID, ID: l.LevelID}
	})
}

func scanStockLevel(s readmodel.Scanner) (StockLevel, error) {
	var l StockLevel
	var available sql.NullInt64
	var updated int64
	if err := s.Scan(&l.LevelID, &l.InventoryItemID, &l.LocationID, &available, &updated, &l.SKU, &l.ProductID); err != nil {
		return StockLevel{}, err
	}
	if available.Valid {
		n := int(available.Int64)
		l.Available = &n
	}
	l.UpdatedAt = readmodel.Time(updated)
	return l, nil
}

// catalogWhere is a conjunction of SQL conditions with their arguments.
type catalogWhere struct {
	conds []string
	args  []any
}

func (w *catalogWhere) add(when bool, cond string, args ...any) {
	if when {
		w.conds = append(w.conds, cond)
		w.args = append(w.args, args...)
	}
}

// catalogPage is one page of a list ordered by (col, id).
type catalogPage struct {
	col, id string
	text    bool // col holds text: the key's S, else its V
	desc    bool
	after   *CatalogKey
	limit   int
}

// sql completes base (a SELECT … FROM) with w, the page's start, its
// order and limit (one row more than the page, to tell whether more
// follow).
func (k catalogPage) sql(base string, w catalogWhere) (string, []any) {
	dir, cmp := "ASC", ">"
	if k.desc {
		dir, cmp = "DESC", "<"
	}
	if k.after != nil {
		var v any = k.after.V
		if k.text {
			v = k.after.S
		}
		w.add(true, fmt.Sprintf("(%s, %s) %s (?, ?)", k.col, k.id, cmp), v, k.after.ID)
	}
	args := append(w.args, k.limit+1)
	return fmt.Sprintf("%s WHERE %s ORDER BY %s %s, %s %s LIMIT ?", base, strings.Join(w.conds, " AND "), k.col, dir, k.id, dir), args
}
