package clickhouse

import (
	"slices"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/readmodel/versioned"
)

var orders = versioned.Table{
	Name: "attribution_orders",
	Columns: []versioned.Column{
		{Name: "order_id", Type: versioned.String},
		{Name: "shop_id", Type: versioned.String},
		{Name: "revenue", Type: versioned.Int64},
		{Name: "weight", Type: versioned.Float64},
	},
	Key: []string{"shop_id", "order_id"},
}

func TestCreateSQL(t *testing.T) {
	want := "CREATE TABLE IF NOT EXISTS `attribution_orders` (`order_id` String, `shop_id` String, `revenue` Int64, `weight` Float64, " +
		"`_version` UInt64, `_deleted` UInt8) ENGINE = ReplacingMergeTree(`_version`, `_deleted`) ORDER BY (`shop_id`, `order_id`) " +
		"SETTINGS non_replicated_deduplication_window = 1000"
	if got := createSQL(orders); got != want {
		t.Fatalf("createSQL:\n got %s\nwant %s", got, want)
	}
}

func TestInsertSQL(t *testing.T) {
	want := "INSERT INTO `attribution_orders` (`order_id`, `shop_id`, `revenue`, `weight`, `_version`, `_deleted`)"
	if got := insertSQL(orders); got != want {
		t.Fatalf("insertSQL:\n got %s\nwant %s", got, want)
	}
	rows := insertRows([]versioned.Row{{Values: []any{"o1", "s1", int64(5), 1.5}, Version: 7}, {Values: []any{"o2", "s1", int64(0), 0.0}, Version: 9, Deleted: true}})
	want0 := []any{"o1", "s1", int64(5), 1.5, uint64(7), uint8(0)}
	want1 := []any{"o2", "s1", int64(0), 0.0, uint64(9), uint8(1)}
	if !slices.Equal(rows[0], want0) || !slices.Equal(rows[1], want1) {
		t.Fatalf("insertRows: %#v", rows)
	}
}

func TestSelectSQL(t *testing.T) {
	const cols = "SELECT `order_id`, `shop_id`, `revenue`, `weight`, `_version` FROM `attribution_orders` FINAL WHERE `_deleted` = 0"
	tests := []struct {
		name     string
		q        versioned.Query
		wantText string
		wantArgs []any
	}{
		{"whole table", versioned.Query{Limit: 100},
			cols + " ORDER BY `shop_id` ASC, `order_id` ASC LIMIT 100", nil},
		{"prefix", versioned.Query{Prefix: []any{"s1"}, Limit: 10},
			cols + " AND `shop_id` = ? ORDER BY `shop_id` ASC, `order_id` ASC LIMIT 10", []any{"s1"}},
		{"whole key (Get)", versioned.Query{Prefix: []any{"s1", "o1"}, Limit: 1},
			cols + " AND `shop_id` = ? AND `order_id` = ? ORDER BY `shop_id` ASC, `order_id` ASC LIMIT 1", []any{"s1", "o1"}},
		{"prefix and cursor", versioned.Query{Prefix: []any{"s1"}, After: []any{"s1", "o9"}, Limit: 10},
			cols + " AND `shop_id` = ? AND (`shop_id`, `order_id`) > (?, ?) ORDER BY `shop_id` ASC, `order_id` ASC LIMIT 10", []any{"s1", "s1", "o9"}},
		{"descending with cursor", versioned.Query{After: []any{"s2", "o1"}, Limit: 5, Desc: true},
			cols + " AND (`shop_id`, `order_id`) < (?, ?) ORDER BY `shop_id` DESC, `order_id` DESC LIMIT 5", []any{"s2", "o1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, args := selectSQL(orders, tc.q)
			if text != tc.wantText {
				t.Errorf("text:\n got %s\nwant %s", text, tc.wantText)
			}
			if !slices.Equal(args, tc.wantArgs) {
				t.Errorf("args: got %v, want %v", args, tc.wantArgs)
			}
			if strings.Count(text, "?") != len(args) {
				t.Errorf("%d placeholders for %d args", strings.Count(text, "?"), len(args))
			}
		})
	}
}

func TestValuesAreNeverInTheText(t *testing.T) {
	evil := "x' OR 1=1 --`"
	text, args := selectSQL(orders, versioned.Query{Prefix: []any{evil}, After: []any{evil, evil}, Limit: 1})
	if strings.Contains(text, evil) || strings.Contains(text, "OR 1=1") {
		t.Fatalf("value concatenated into %s", text)
	}
	if len(args) != 3 {
		t.Fatalf("args %v", args)
	}
	text, args = deleteSQL(orders, []any{evil}, 3)
	if strings.Contains(text, "OR 1=1") || !slices.Equal(args, []any{evil, uint64(3)}) {
		t.Fatalf("deleteSQL: %s %v", text, args)
	}
}

func TestDeleteSQL(t *testing.T) {
	text, args := deleteSQL(orders, []any{"s1"}, 42)
	want := "DELETE FROM `attribution_orders` WHERE `_deleted` = 0 AND `shop_id` = ? AND `_version` < ?"
	if text != want || !slices.Equal(args, []any{"s1", uint64(42)}) {
		t.Fatalf("deleteSQL: got %s %v, want %s [s1 42]", text, args, want)
	}
}

func TestCheckpointSQL(t *testing.T) {
	for _, s := range []string{createCheckpointsSQL, checkpointSQL, insertCheckpointsSQL} {
		if !strings.Contains(s, "`"+checkpointsTable+"`") {
			t.Errorf("%s does not name %s", s, checkpointsTable)
		}
	}
	if !strings.Contains(createCheckpointsSQL, "ReplacingMergeTree(`position`) ORDER BY `projector`") {
		t.Errorf("checkpoints DDL: %s", createCheckpointsSQL)
	}
}
