package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
)

// Entry is a row of the index: where an event of the shop is in the log.
type Entry struct {
	Position eventlog.Position
	Stream   string
	Revision uint64
}

// Query selects a page of a shop's history. Empty filters match all.
type Query struct {
	Shop       string
	Stream     string
	ResourceID string
	Type       string
	Actor      string
	Subject    string
	// RecordedFrom (inclusive) and RecordedBefore (exclusive) bound the
	// log's commit time; zero for no bound.
	RecordedFrom, RecordedBefore time.Time
	// After is the position the page continues after (before, when Desc);
	// 0 for the first page.
	After eventlog.Position
	Desc  bool
	Limit int
}

// Queries reads the audit index.
type Queries struct {
	db *sql.DB
}

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// List returns up to Limit entries of the query in position order, and
// whether more follow.
func (q *Queries) List(ctx context.Context, lq Query) ([]Entry, bool, error) {
	query, args, err := q.listSQL(ctx, lq)
	if err != nil || query == "" {
		return nil, false, err
	}
	rows, err := q.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	out := make([]Entry, 0, lq.Limit+1)
	for rows.Next() {
		var e Entry
		var pos, rev int64
		if err := rows.Scan(&pos, &e.Stream, &rev); err != nil {
			return nil, false, fmt.Errorf("list audit events: %w", err)
		}
		e.Position, e.Revision = eventlog.Position(pos), uint64(rev)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list audit events: %w", err)
	}
	if len(out) > lq.Limit {
		return out[:lq.Limit], true, nil
	}
	return out, false, nil
}

// listSQL builds the page's query. A time range is turned into a range of
// positions first (recorded_at is non-decreasing along the log), so that
// every page walks an index in position order. An empty query means the
// range holds nothing.
func (q *Queries) listSQL(ctx context.Context, lq Query) (string, []any, error) {
	var where strings.Builder
	args := []any{lq.Shop}
	where.WriteString("shop_id = ?")
	// The filters from the most selective: the first one given names the
	// index the page walks. SQLite's planner, left alone, prefers walking
	// the primary key in position order (no sort) and testing the filter
	// on every row of the shop, which costs O(the shop's history).
	index := ""
	for _, f := range []struct{ col, v, index string }{{"stream", lq.Stream, "audit_events_stream"},
		{"resource_id", lq.ResourceID, "audit_events_resource"}, {"subject", lq.Subject, "audit_events_subject"},
		{"actor", lq.Actor, "audit_events_actor"}, {"type", lq.Type, "audit_events_type"}} {
		if f.v != "" {
			where.WriteString(" AND " + f.col + " = ?")
			args = append(args, f.v)
			if index == "" {
				index = " INDEXED BY " + f.index
			}
		}
	}
	if !lq.RecordedFrom.IsZero() {
		lo, ok, err := q.bound(ctx, lq.Shop, lq.RecordedFrom)
		if err != nil {
			return "", nil, err
		}
		if !ok {
			return "", nil, nil // nothing recorded since
		}
		where.WriteString(" AND position >= ?")
		args = append(args, lo)
	}
	if !lq.RecordedBefore.IsZero() {
		hi, ok, err := q.bound(ctx, lq.Shop, lq.RecordedBefore)
		if err != nil {
			return "", nil, err
		}
		if ok {
			where.WriteString(" AND position < ?")
			args = append(args, hi)
		}
	}
	dir := "ASC"
	if lq.Desc {
		dir = "DESC"
		if lq.After != 0 {
			where.WriteString(" AND position < ?")
			args = append(args, int64(lq.After))
		}
	} else if lq.After != 0 {
		where.WriteString(" AND position > ?")
		args = append(args, int64(lq.After))
	}
	args = append(args, lq.Limit+1)
	return `SELECT position, stream, revision FROM audit_events` + index + ` WHERE ` + where.String() +
		` ORDER BY position ` + dir + ` LIMIT ?`, args, nil
}

// bound is the position of the shop's first event recorded at or after t
// (false when there is none).
func (q *Queries) bound(ctx context.Context, shop string, t time.Time) (int64, bool, error) {
	var pos int64
	err := q.db.QueryRowContext(ctx, `SELECT position FROM audit_events WHERE shop_id = ? AND recorded_at >= ?
		ORDER BY recorded_at, position LIMIT 1`, shop, t.UnixMicro()).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("audit time bound: %w", err)
	}
	return pos, true, nil
}

// Streams returns the distinct streams of the shop's events that have the
// given subject or resource id, among those at or before position upTo.
func (q *Queries) Streams(ctx context.Context, shop, id string, upTo eventlog.Position) ([]string, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT stream FROM audit_events INDEXED BY audit_events_subject
		WHERE shop_id = ? AND subject = ? AND position <= ?
		UNION SELECT stream FROM audit_events INDEXED BY audit_events_resource
		WHERE shop_id = ? AND resource_id = ? AND position <= ?`,
		shop, id, int64(upTo), shop, id, int64(upTo))
	if err != nil {
		return nil, fmt.Errorf("audit streams: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("audit streams: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// LastRecordedBefore is the position of the shop's last event recorded at
// or before t (0 when there is none).
func (q *Queries) LastRecordedBefore(ctx context.Context, shop string, t time.Time) (eventlog.Position, error) {
	var pos sql.NullInt64
	err := q.db.QueryRowContext(ctx, `SELECT position FROM audit_events WHERE shop_id = ? AND recorded_at <= ?
		ORDER BY recorded_at DESC, position DESC LIMIT 1`, shop, t.UnixMicro()).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("audit time bound: %w", err)
	}
	return eventlog.Position(pos.Int64), nil
}

// StreamPositions returns the positions of the shop's events of streams at
// or before position upTo, in position order.
func (q *Queries) StreamPositions(ctx context.Context, shop string, streams []string, upTo eventlog.Position) ([]Entry, error) {
	var out []Entry
	for _, s := range streams {
		rows, err := q.db.QueryContext(ctx, `SELECT position, stream, revision FROM audit_events
			INDEXED BY audit_events_stream WHERE shop_id = ? AND stream = ? AND position <= ? ORDER BY position`, shop, s, int64(upTo))
		if err != nil {
			return nil, fmt.Errorf("audit stream positions: %w", err)
		}
		for rows.Next() {
			var e Entry
			var pos, rev int64
			if err := rows.Scan(&pos, &e.Stream, &rev); err != nil {
				rows.Close()
				return nil, fmt.Errorf("audit stream positions: %w", err)
			}
			e.Position, e.Revision = eventlog.Position(pos), uint64(rev)
			out = append(out, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
