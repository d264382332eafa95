package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// selectSQL is the SELECT of t's rows (newest versions are the only ones
// stored) matching the equalities on the first n key columns.
func selectSQL(t versioned.Table, n int) string {
	cols := append(columnNames(t), "_version")
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM %s WHERE _deleted = 0", quotedList(cols), quote(t.Name))
	for _, k := range t.Key[:n] {
		fmt.Fprintf(&b, " AND %s = ?", quote(k))
	}
	return b.String()
}

// scanSQL builds q's statement and arguments.
func scanSQL(t versioned.Table, q versioned.Query) (string, []any) {
	var b strings.Builder
	b.WriteString(selectSQL(t, len(q.Prefix)))
	args := append([]any(nil), q.Prefix...)
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

func scanRow(t versioned.Table, sc interface{ Scan(...any) error }) (versioned.Row, error) {
	dest := make([]any, len(t.Columns)+1)
	holders := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		switch c.Type {
		case versioned.Int64:
			holders[i] = new(int64)
		case versioned.Float64:
			holders[i] = new(float64)
		default:
			holders[i] = new(string)
		}
		dest[i] = holders[i]
	}
	var version int64
	dest[len(t.Columns)] = &version
	if err := sc.Scan(dest...); err != nil {
		return versioned.Row{}, err
	}
	r := versioned.Row{Values: make([]any, len(t.Columns)), Version: uint64(version)}
	for i, h := range holders {
		switch v := h.(type) {
		case *int64:
			r.Values[i] = *v
		case *float64:
			r.Values[i] = *v
		case *string:
			r.Values[i] = *v
		}
	}
	return r, nil
}

// Get returns the newest version of key; see versioned.Store.
func (s *Store) Get(ctx context.Context, table string, key []any) (versioned.Row, bool, error) {
	t, k, err := s.tables.Lookup(table, key)
	if err != nil {
		return versioned.Row{}, false, err
	}
	r, err := scanRow(t, s.r.QueryRowContext(ctx, selectSQL(t, len(k)), k...))
	if errors.Is(err, sql.ErrNoRows) {
		return versioned.Row{}, false, nil
	}
	if err != nil {
		return versioned.Row{}, false, fmt.Errorf("get from %s: %w", table, err)
	}
	return r, true, nil
}

// Scan returns a page of rows; see versioned.Store.
func (s *Store) Scan(ctx context.Context, table string, q versioned.Query) ([]versioned.Row, error) {
	t, q, err := s.tables.Scanning(table, q)
	if err != nil {
		return nil, err
	}
	text, args := scanSQL(t, q)
	rows, err := s.r.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", table, err)
	}
	defer rows.Close()
	var out []versioned.Row
	for rows.Next() {
		r, err := scanRow(t, rows)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", table, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan %s: %w", table, err)
	}
	return out, nil
}

// Erase tombstones every key under prefix in place: the stored values are
// overwritten by zero values (secure_delete clears the freed bytes), the
// version raised to pos so that older writes stay hidden.
func (s *Store) Erase(ctx context.Context, table string, prefix []any, pos eventlog.Position) error {
	t, p, err := s.tables.Erasure(table, prefix, pos)
	if err != nil {
		return err
	}
	if err := s.Flush(ctx); err != nil {
		return fmt.Errorf("erase from %s: %w", table, err)
	}
	key := make(map[string]bool, len(t.Key))
	for _, k := range t.Key {
		key[k] = true
	}
	var set []string
	var args []any
	for _, c := range t.Columns {
		if !key[c.Name] {
			set = append(set, quote(c.Name)+" = ?")
			args = append(args, c.Type.Zero())
		}
	}
	set = append(set, "_deleted = 1", "_version = ?")
	args = append(args, int64(pos))
	where := []string{"_version < ?"}
	args = append(args, int64(pos))
	for i := range p {
		where = append(where, quote(t.Key[i])+" = ?")
	}
	args = append(args, p...)
	text := fmt.Sprintf("UPDATE %s SET %s WHERE %s", quote(t.Name), strings.Join(set, ", "), strings.Join(where, " AND "))
	if err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, text, args...)
		return err
	}); err != nil {
		return fmt.Errorf("erase from %s: %w", table, err)
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("erase from %s: wal checkpoint: %w", table, err)
	}
	return nil
}
