package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/internal/logutil"
)

// readPositionsQuery fetches events by primary key: ?1 is a JSON array of
// positions, ?2 the read cap. Each lookup is one B-tree descent of the
// events table (position is its rowid).
const readPositionsQuery = "SELECT " + eventColumns + ` FROM events
WHERE position IN (SELECT value FROM json_each(?1)) AND position <= ?2 ORDER BY position`

// maxPositionsPerQuery bounds the JSON array of one query.
const maxPositionsPerQuery = 1000

var _ eventlog.PositionReader = (*Log)(nil)

// ReadPositions returns the events at positions, in position order, each
// at most once; positions with no (durable) event are left out.
func (l *Log) ReadPositions(ctx context.Context, positions []eventlog.Position) ([]eventlog.Event, error) {
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	defer l.mu.RUnlock()
	if len(positions) == 0 {
		return nil, nil
	}
	var out []eventlog.Event
	for _, chunk := range logutil.PositionChunks(positions, maxPositionsPerQuery) {
		n := len(chunk)
		arr, _ := json.Marshal(chunk) // integers: never fails
		evs, err := l.queryEvents(ctx, readPositionsQuery, n, string(arr), l.vis.max())
		if err != nil {
			return nil, storeErr(ctx, "read positions", err)
		}
		out = append(out, l.durableOnly(evs)...)
	}
	return out, nil
}
