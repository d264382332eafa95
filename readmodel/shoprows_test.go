package readmodel_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/readmodel"
)

func TestDeleteShopRows(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`
CREATE TABLE orders (order_id TEXT PRIMARY KEY, shop_id TEXT NOT NULL);
CREATE TABLE refunds (refund_id TEXT PRIMARY KEY, order_id TEXT NOT NULL);
INSERT INTO orders VALUES ('o1', 's1'), ('o2', 's1'), ('o3', 's2');
INSERT INTO refunds VALUES ('r1', 'o1'), ('r2', 'o3');`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := readmodel.DeleteShopRows(ctx, tx, "s1", readmodel.ChildRows("refunds", "order_id", "orders", "order_id"),
		readmodel.ShopRows("orders")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{`SELECT group_concat(order_id) FROM orders`: "o3", `SELECT group_concat(refund_id) FROM refunds`: "r2"} {
		var got string
		if err := db.QueryRow(q).Scan(&got); err != nil || got != want {
			t.Fatalf("%s: %q %v, want %q", q, got, err, want)
		}
	}
	tx, _ = db.BeginTx(ctx, nil)
	defer tx.Rollback()
	if err := readmodel.DeleteShopRows(ctx, tx, "s1", readmodel.ShopRows("no_such_table")); err == nil {
		t.Fatal("a missing table is not an error")
	}
}
