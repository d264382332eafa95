package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
)

// eventColumns lists the columns scanRows reads, in its order.
const eventColumns = `position, event_id, stream, revision, type, schema_version, shop_id,
	occurred_at, recorded_at, data, metadata, prev_hash, hash`

const (
	// Both take the read cap (visibility.max) as their second-to-last
	// argument.
	readAllQuery    = "SELECT " + eventColumns + " FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT ?"
	readStreamQuery = "SELECT " + eventColumns + " FROM events WHERE stream = ? AND revision >= ? AND position <= ? ORDER BY revision LIMIT ?"
	// skimAllQuery is readAllQuery for a TypeSubscriber: the payload
	// columns of an event whose type is not in the JSON array ?4 stay in
	// the file (a skeleton row; decodeRow knows it by its NULL data).
	skimAllQuery = `SELECT position, event_id, stream, revision, type, schema_version, shop_id, occurred_at, recorded_at,
	CASE WHEN w THEN data END, CASE WHEN w THEN metadata END, CASE WHEN w THEN prev_hash END, CASE WHEN w THEN hash END
FROM (SELECT *, type IN (SELECT value FROM json_each(?4)) AS w FROM events
	WHERE position > ?1 AND position <= ?2 ORDER BY position LIMIT ?3)`
)

// queryEvents runs an event query on a pooled read connection. It talks to
// the driver connection directly: rows arrive as freshly allocated Go values
// that need no second copy through database/sql's conversions, which makes
// catch-up reads markedly cheaper. Statements come from the connection's
// statement cache (_stmt_cache_size).
func (l *Log) queryEvents(ctx context.Context, query string, capacity int, args ...any) ([]eventlog.Event, error) {
	conn, err := l.readDB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	var evs []eventlog.Event
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		rows, err := sc.QueryContext(ctx, query, named)
		if err != nil {
			return err
		}
		defer rows.Close()
		evs, err = scanRows(rows, capacity)
		return err
	})
	return evs, err
}

// scanRows reads every row of rows (eventColumns) into events.
func scanRows(rows driver.Rows, capacity int) ([]eventlog.Event, error) {
	evs := make([]eventlog.Event, 0, min(capacity, 16)) // most reads are short: grow on demand
	dest := make([]driver.Value, 13)
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return evs, nil
			}
			return nil, err
		}
		var e eventlog.Event
		if err := decodeRow(dest, &e); err != nil {
			return nil, err
		}
		evs = append(evs, e)
	}
}

// decodeRow fills e from one row of eventColumns as go-sqlite3 returns it:
// INTEGER as int64, TEXT as string, BLOB as []byte, NULL as nil.
func decodeRow(v []driver.Value, e *eventlog.Event) error {
	pos, ok := v[0].(int64)
	if !ok {
		return fmt.Errorf("event row: position is %T", v[0])
	}
	bad := func(col string) error {
		return fmt.Errorf("event at position %d: unexpected %s", pos, col)
	}
	id, ok := v[1].([]byte)
	if !ok || len(id) != len(e.ID) {
		return bad("event_id")
	}
	copy(e.ID[:], id)
	if e.StreamID, ok = v[2].(string); !ok {
		return bad("stream")
	}
	rev, ok := v[3].(int64)
	if !ok {
		return bad("revision")
	}
	if e.Type, ok = v[4].(string); !ok {
		return bad("type")
	}
	schema, ok := v[5].(int64)
	if !ok {
		return bad("schema_version")
	}
	if e.ShopID, ok = v[6].(string); !ok {
		return bad("shop_id")
	}
	occurred, ok1 := v[7].(int64)
	recorded, ok2 := v[8].(int64)
	if !ok1 || !ok2 {
		return bad("timestamps")
	}
	e.Position = uint64(pos)
	e.Revision = uint64(rev)
	e.SchemaVersion = int(schema)
	e.OccurredAt = time.Unix(0, occurred).UTC()
	e.RecordedAt = time.Unix(0, recorded).UTC()
	if v[9] == nil {
		return nil // a skeleton of skimAllQuery (data is NOT NULL in the table)
	}
	if e.Data, ok = v[9].([]byte); !ok {
		return bad("data")
	}
	meta, ok := v[10].(string)
	if !ok {
		return bad("metadata")
	}
	if err := decodeMetadata(meta, &e.Metadata); err != nil {
		return fmt.Errorf("event at position %d: metadata: %w", pos, err)
	}
	if v[11] != nil {
		if e.PrevHash, ok = v[11].([]byte); !ok {
			return bad("prev_hash")
		}
	}
	if e.Hash, ok = v[12].([]byte); !ok {
		return bad("hash")
	}
	return nil
}
