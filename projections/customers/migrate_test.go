package customers

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// Migration 3 gives the customers already there their stage.
func TestStageMigrationFillsExistingRows(t *testing.T) {
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(t.TempDir(), "rm.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := t.Context()
	if err := store.Migrate(ctx, Name, migrations[:2]); err != nil {
		t.Fatal(err)
	}
	day := int64(24 * time.Hour / time.Microsecond)
	now := time.Now().UnixMicro()
	want := map[string]string{}
	add := func(id string, orders int, last int64, stage string) {
		if err := store.Maintain(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO customers (customer_id, shop_id, external_id, orders_count, last_order_at, created_at, updated_at, version)
				VALUES (?, 's', ?, ?, ?, 0, 0, 1)`, id, id, orders, last)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		want[id] = stage
	}
	add("prospect", 0, 0, "prospect")
	add("new", 1, now-day, "new")
	add("active", 2, 0, "active")
	add("loyal", 9, now-10*day, "loyal")
	add("at_risk", 3, now-100*day, "at_risk")
	add("churned", 5, now-200*day, "churned")
	if err := store.Migrate(ctx, Name, migrations); err != nil {
		t.Fatal(err)
	}
	for id, stage := range want {
		var got string
		if err := store.DB().QueryRowContext(ctx, `SELECT stage FROM customers WHERE customer_id = ?`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != stage {
			t.Errorf("%s: stage %q after the migration, want %q", id, got, stage)
		}
	}
}
