package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
)

// queryEvents runs an event query (eventColumns) on a pooled connection.
func (l *Log) queryEvents(ctx context.Context, query string, capacity int, args ...any) ([]eventlog.Event, error) {
	rows, err := l.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	evs := make([]eventlog.Event, 0, min(capacity, 16)) // most reads are short: grow on demand
	var (
		pos, rev, occurred, recorded int64
		schema                       int32
		meta                         []byte
	)
	for rows.Next() {
		var e eventlog.Event
		if err := rows.Scan(&pos, &e.ID, &e.StreamID, &rev, &e.Type, &schema, &e.ShopID,
			&occurred, &recorded, &e.Data, &meta, &e.PrevHash, &e.Hash); err != nil {
			return nil, fmt.Errorf("event row: %w", err)
		}
		e.Position = uint64(pos)
		e.Revision = uint64(rev)
		e.SchemaVersion = int(schema)
		e.OccurredAt = time.Unix(0, occurred).UTC()
		e.RecordedAt = time.Unix(0, recorded).UTC()
		if meta != nil { // NULL in a skeleton row
			if err := json.Unmarshal(meta, &e.Metadata); err != nil {
				return nil, fmt.Errorf("event at position %d: metadata: %w", pos, err)
			}
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return evs, nil
}
