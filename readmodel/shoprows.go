package readmodel

import (
	"context"
	"database/sql"
	"fmt"
)

// ShopTable names a table holding rows of shops, for DeleteShopRows:
// either a table with a shop_id column (ShopRows) or a child table whose
// rows belong to a shop through a parent that has one (ChildRows).
type ShopTable struct {
	// Name is the table.
	Name string
	// Key, Parent and ParentKey are set for a child table: its rows are
	// those whose Key is the ParentKey of a row of the shop in Parent.
	Key, Parent, ParentKey string
}

// ShopRows is a table with a shop_id column.
func ShopRows(table string) ShopTable { return ShopTable{Name: table} }

// ChildRows is a table without a shop_id column whose key column points
// at parentKey of parent, which has one.
func ChildRows(table, key, parent, parentKey string) ShopTable {
	return ShopTable{Name: table, Key: key, Parent: parent, ParentKey: parentKey}
}

// DeleteShopRows deletes every row of shop from tables, in the order
// given: list a child table before its parent, whose rows the child's
// delete selects. The names are the projector's own constants, never
// input. Projectors call it when they fold domain.ShopErased.
func DeleteShopRows(ctx context.Context, tx *sql.Tx, shop string, tables ...ShopTable) error {
	for _, t := range tables {
		q := `DELETE FROM "` + t.Name + `" WHERE shop_id = ?`
		if t.Parent != "" {
			q = fmt.Sprintf(`DELETE FROM "%s" WHERE "%s" IN (SELECT "%s" FROM "%s" WHERE shop_id = ?)`, t.Name, t.Key, t.ParentKey, t.Parent)
		}
		if _, err := tx.ExecContext(ctx, q, shop); err != nil {
			return fmt.Errorf("delete the rows of shop %s from %s: %w", shop, t.Name, err)
		}
	}
	return nil
}
