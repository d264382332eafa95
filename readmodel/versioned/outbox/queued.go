package outbox

import (
	"context"
	"database/sql"
	"fmt"
)

// QueuedKeys counts the changes of the rows of table whose keys (the
// values of the source's key columns, in order) are among keys that wait
// in the outbox: 0 once each of them was shipped. Keys with an empty
// value are left out.
func QueuedKeys(ctx context.Context, db *sql.DB, table string, keys ...[]any) (int, error) {
	var n int
	for _, key := range keys {
		if len(key) == 0 || key[len(key)-1] == "" {
			continue
		}
		var c int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM warehouse_outbox WHERE tbl = ? AND key = json_array(`+placeholders(len(key))+`)`,
			append([]any{table}, key...)...).Scan(&c); err != nil {
			return 0, fmt.Errorf("outbox rows of %s: %w", table, err)
		}
		n += c
	}
	return n, nil
}

// QueuedShop counts the changes of the shop's rows (every source's key
// starts with the shop id) that wait in the outbox: 0 once each of them,
// tombstones included, was shipped.
func QueuedShop(ctx context.Context, db *sql.DB, shop string) (int, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM warehouse_outbox WHERE json_extract(key, '$[0]') = ?`, shop).Scan(&n); err != nil {
		return 0, fmt.Errorf("outbox rows of shop: %w", err)
	}
	return n, nil
}

func placeholders(n int) string {
	s := "?"
	for range n - 1 {
		s += ", ?"
	}
	return s
}
