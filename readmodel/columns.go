package readmodel

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// Helpers the projectors and their queries share to store values in SQL
// columns and read them back.

// Micros is a time as an INTEGER column stores it: Unix microseconds, 0
// for the zero time.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// Time reads a time stored as Unix microseconds, in UTC: 0 is the zero
// time (as Micros writes it), and so is the value time.Time.UnixMicro
// gives the zero time.
func Time(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// NullTime is Time for a nullable column: NULL is the zero time.
func NullTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return Time(v.Int64)
}

// NullIfEmpty is s for a nullable TEXT column: NULL when s is empty.
func NullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// JSONText serialises v for a TEXT column; empty when v is nil (or
// marshals to null) or cannot be marshalled.
func JSONText(v any, empty string) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return empty
	}
	return string(b)
}

// FindError is the error of a query for one row of what ("order", …):
// nil for nil, a not_found *domain.Error for sql.ErrNoRows, any other
// error wrapped with what.
func FindError(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.NotFound(what)
	}
	if err != nil {
		return fmt.Errorf("find %s: %w", what, err)
	}
	return nil
}

// Scanner is a row to scan: *sql.Row or *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// List runs query on db and scans every row with scan, in the query's
// order (nil when there is none). A failure is wrapped with "list " and
// what.
func List[T any](ctx context.Context, db *sql.DB, what string, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	return out, nil
}

// Querier runs a query: a *sql.DB, *sql.Tx or *sql.Conn.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Strings runs query, which selects one text column, and returns its
// values in the order of the rows.
func Strings(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
