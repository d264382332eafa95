package customers

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
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

// Every list page, with or without a stage and a cursor, walks one index
// in the order asked: no sort of a whole shop or stage (the planner would
// otherwise take a last-order range over the sort key's index).
func TestListPagesWalkAnIndex(t *testing.T) {
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(t.TempDir(), "rm.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(t.Context(), Name, migrations); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for _, stage := range append([]string{""}, domain.LifecycleStages()...) {
		for _, sort := range []string{SortCreatedAt, SortLastOrderAt, SortTotalSpent} {
			for _, after := range []*Key{nil, {Value: 5, ID: "cus_x"}} {
				query, args, err := listSQL(ListQuery{Shop: "s", Stage: stage, Sort: sort, Desc: true, After: after, Limit: 100, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				rows, err := store.DB().QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
				if err != nil {
					t.Fatal(err)
				}
				var plan []string
				for rows.Next() {
					var id, parent, unused int
					var detail string
					if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
						t.Fatal(err)
					}
					plan = append(plan, detail)
				}
				rows.Close()
				joined := strings.Join(plan, "; ")
				if strings.Contains(joined, "TEMP B-TREE") || !strings.Contains(joined, "USING INDEX") {
					t.Errorf("stage %q sort %s cursor %v: plan %q sorts or scans", stage, sort, after != nil, joined)
				}
			}
		}
	}
}
