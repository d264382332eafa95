package attribution

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// recordedWarehouse answers one query with fixed rows and records it.
type recordedWarehouse struct {
	query string
	args  []any
	rows  [][]any
}

func (w *recordedWarehouse) Query(_ context.Context, query string, args ...any) (WarehouseRows, error) {
	w.query, w.args = query, args
	return &fixedRows{rows: w.rows, i: -1}, nil
}

type fixedRows struct {
	rows [][]any
	i    int
}

func (r *fixedRows) Next() bool { r.i++; return r.i < len(r.rows) }
func (r *fixedRows) Err() error { return nil }
func (r *fixedRows) Close() error {
	return nil
}

func (r *fixedRows) Scan(dest ...any) error {
	row := r.rows[r.i]
	if len(dest) != len(row) {
		return errors.New("column count")
	}
	*dest[0].(*string), *dest[1].(*string) = row[0].(string), row[1].(string)
	*dest[2].(*float64) = row[2].(float64)
	*dest[3].(*int64), *dest[4].(*int64) = row[3].(int64), row[4].(int64)
	return nil
}

func TestWarehouseSummarySQL(t *testing.T) {
	for _, g := range SummaryGroups() {
		for _, bounds := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			q := summarySQL(g, bounds[0], bounds[1])
			want := 3
			for _, b := range bounds {
				if b {
					want++
				}
			}
			if n := strings.Count(q, "?"); n != want {
				t.Errorf("%s %v: %d placeholders, want %d:\n%s", g, bounds, n, want, q)
			}
			for _, must := range []string{"attribution_orders AS o FINAL", "attribution_credits AS c FINAL", "o._deleted = 0",
				"c._deleted = 0", "c.model = ?", "SELECT " + summaryColumns[g] + " AS k", "GROUP BY k, currency"} {
				if !strings.Contains(q, must) {
					t.Errorf("%s %v: no %q in\n%s", g, bounds, must, q)
				}
			}
			if strings.Contains(q, "ordered_at >=") != bounds[0] || strings.Contains(q, "ordered_at <") != bounds[1] {
				t.Errorf("%s %v: bounds in\n%s", g, bounds, q)
			}
		}
	}
}

func TestWarehouseSummaryArgsAndRows(t *testing.T) {
	w := &recordedWarehouse{rows: [][]any{{"paid_search", "USD", 1.5, int64(15000), int64(900)}, {"email", "USD", 0.5, int64(4000), int64(0)}}}
	from := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	before := from.AddDate(0, 1, 0)
	rows, err := WarehouseSummary{W: w}.Summary(context.Background(), "shop_1", "linear", "channel", from, before)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.args) != 5 || w.args[0] != "shop_1" || w.args[1] != "shop_1" || w.args[2] != "linear" ||
		w.args[3] != from.UnixMicro() || w.args[4] != before.UnixMicro() {
		t.Fatalf("args %v", w.args)
	}
	if len(rows) != 2 || rows[0].Key != "paid_search" || rows[0].Orders != 1.5 || rows[0].Revenue != 15000 || rows[0].Refunded != 900 ||
		rows[1].Key != "email" {
		t.Fatalf("rows %+v", rows)
	}
	if _, err := (WarehouseSummary{W: w}).Summary(context.Background(), "shop_1", "linear", "nope", time.Time{}, time.Time{}); err == nil {
		t.Fatal("unknown group accepted")
	}
}
