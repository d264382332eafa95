package clickhouse

import (
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// checkpointsTable keeps each projector's checkpoint; max(position) is the
// checkpoint whether or not merges ran.
const checkpointsTable = "_checkpoints"

// dedupWindow is how many recent inserts a table remembers the tokens of
// (non_replicated_deduplication_window): far more than the batches that
// can be in retry at once.
const dedupWindow = 1000

// quote returns name as a ClickHouse identifier. Names are validated by
// versioned.ValidIdentifier (letters, digits, '_'), so backquotes cannot
// be broken out of; the quoting keeps reserved words usable as names.
func quote(name string) string { return "`" + name + "`" }

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

func chType(t versioned.Type) string {
	switch t {
	case versioned.Int64:
		return "Int64"
	case versioned.Float64:
		return "Float64"
	}
	return "String"
}

// createSQL is the DDL of t. The table must be valid.
func createSQL(t versioned.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", quote(t.Name))
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "%s %s, ", quote(c.Name), chType(c.Type))
	}
	fmt.Fprintf(&b, "`_version` UInt64, `_deleted` UInt8) ENGINE = ReplacingMergeTree(`_version`, `_deleted`) ORDER BY (%s) SETTINGS non_replicated_deduplication_window = %d",
		quotedList(t.Key), dedupWindow)
	return b.String()
}

// createCheckpointsSQL is the DDL of the checkpoint table.
const createCheckpointsSQL = "CREATE TABLE IF NOT EXISTS `_checkpoints` (`projector` String, `position` UInt64) ENGINE = ReplacingMergeTree(`position`) ORDER BY `projector`"

// checkpointSQL reads one projector's checkpoint (0 when none).
const checkpointSQL = "SELECT max(`position`) FROM `_checkpoints` WHERE `projector` = ?"

// insertCheckpointsSQL is the batch insert of checkpoints.
const insertCheckpointsSQL = "INSERT INTO `_checkpoints` (`projector`, `position`)"

func columnNames(t versioned.Table) []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// insertSQL is the batch insert of t's rows (values, then _version and
// _deleted).
func insertSQL(t versioned.Table) string {
	return fmt.Sprintf("INSERT INTO %s (%s, `_version`, `_deleted`)", quote(t.Name), quotedList(columnNames(t)))
}

// prefixWhere is the WHERE clause of equalities on the first len(prefix)
// key columns (after the tombstone filter) and its arguments.
func prefixWhere(t versioned.Table, prefix []any) (string, []any) {
	var b strings.Builder
	b.WriteString(" WHERE `_deleted` = 0")
	for _, k := range t.Key[:len(prefix)] {
		fmt.Fprintf(&b, " AND %s = ?", quote(k))
	}
	return b.String(), append([]any(nil), prefix...)
}

// selectSQL is the read of q (already normalised against t): the newest
// versions (FINAL) that are not tombstones, on a key prefix, after a
// keyset cursor (tuple comparison on the whole key), in key order.
func selectSQL(t versioned.Table, q versioned.Query) (string, []any) {
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s, `_version` FROM %s FINAL", quotedList(columnNames(t)), quote(t.Name))
	where, args := prefixWhere(t, q.Prefix)
	b.WriteString(where)
	op, dir := ">", "ASC"
	if q.Desc {
		op, dir = "<", "DESC"
	}
	if len(q.After) > 0 {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(q.After)), ", ")
		fmt.Fprintf(&b, " AND (%s) %s (%s)", quotedList(t.Key), op, marks)
		args = append(args, q.After...)
	}
	order := make([]string, len(t.Key))
	for i, k := range t.Key {
		order[i] = quote(k) + " " + dir
	}
	fmt.Fprintf(&b, " ORDER BY %s LIMIT %d", strings.Join(order, ", "), q.Limit)
	return b.String(), args
}

// deleteSQL physically deletes the versions older than pos of the keys
// under prefix (lightweight delete); the tombstones at pos stay so that a
// redelivered older version keeps losing.
func deleteSQL(t versioned.Table, prefix []any, pos uint64) (string, []any) {
	where, args := prefixWhere(t, prefix)
	return fmt.Sprintf("DELETE FROM %s%s AND `_version` < ?", quote(t.Name), where), append(args, pos)
}
