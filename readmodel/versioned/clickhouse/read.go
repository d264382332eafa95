package clickhouse

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/internal/batch"
)

// Get returns the newest version of key; see versioned.Store.
func (s *Store) Get(ctx context.Context, table string, key []any) (versioned.Row, bool, error) {
	t, k, err := s.tables.Lookup(table, key)
	if err != nil {
		return versioned.Row{}, false, err
	}
	rows, err := s.query(ctx, t, versioned.Query{Prefix: k, Limit: 1})
	if err != nil {
		return versioned.Row{}, false, fmt.Errorf("get from %s: %w", table, err)
	}
	if len(rows) == 0 {
		return versioned.Row{}, false, nil
	}
	return rows[0], true, nil
}

// Scan returns a page of rows; see versioned.Store.
func (s *Store) Scan(ctx context.Context, table string, q versioned.Query) ([]versioned.Row, error) {
	t, q, err := s.tables.Scanning(table, q)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, t, q)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", table, err)
	}
	return rows, nil
}

func (s *Store) query(ctx context.Context, t versioned.Table, q versioned.Query) ([]versioned.Row, error) {
	text, args := selectSQL(t, q)
	rows, err := s.conn.Query(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []versioned.Row
	for rows.Next() {
		dest, read := holders(t)
		var version uint64
		if err := rows.Scan(append(dest, &version)...); err != nil {
			return nil, err
		}
		out = append(out, versioned.Row{Values: read(), Version: version})
	}
	return out, rows.Err()
}

// holders returns scan destinations for t's columns and a function that
// reads the scanned values.
func holders(t versioned.Table) ([]any, func() []any) {
	dest := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		switch c.Type {
		case versioned.Int64:
			dest[i] = new(int64)
		case versioned.Float64:
			dest[i] = new(float64)
		default:
			dest[i] = new(string)
		}
	}
	return dest, func() []any {
		vals := make([]any, len(dest))
		for i, d := range dest {
			switch v := d.(type) {
			case *int64:
				vals[i] = *v
			case *float64:
				vals[i] = *v
			case *string:
				vals[i] = *v
			}
		}
		return vals
	}
}

// Erase sends the queued rows, writes a tombstone at pos for every
// readable key under prefix, then deletes the older versions under it;
// see versioned.Store.
func (s *Store) Erase(ctx context.Context, table string, prefix []any, pos eventlog.Position) error {
	t, p, err := s.tables.Erasure(table, prefix, pos)
	if err != nil {
		return err
	}
	if err := s.Flush(ctx); err != nil {
		return fmt.Errorf("erase from %s: %w", table, err)
	}
	q := versioned.Query{Prefix: p, Limit: versioned.MaxLimit}
	for {
		rows, err := s.query(ctx, t, q)
		if err != nil {
			return fmt.Errorf("erase from %s: read keys: %w", table, err)
		}
		if len(rows) == 0 {
			break
		}
		stones := make([]versioned.Row, len(rows))
		for i, r := range rows {
			if stones[i], err = t.NormalizeRow(versioned.Row{Values: r.Values, Version: pos, Deleted: true}, pos); err != nil {
				return fmt.Errorf("erase from %s: %w", table, err)
			}
		}
		b := batch.Seal(t.Name, stones, pos, pos)
		if err := s.ins.insert(ctx, insertSQL(t), b.Token, insertRows(b.Rows)); err != nil {
			return fmt.Errorf("erase from %s: tombstones: %w", table, err)
		}
		if len(rows) < q.Limit {
			break
		}
		q.After = t.KeyOf(rows[len(rows)-1].Values)
	}
	text, args := deleteSQL(t, p, pos)
	if err := s.conn.Exec(ctx, text, args...); err != nil {
		return fmt.Errorf("erase from %s: delete: %w", table, err)
	}
	return nil
}
