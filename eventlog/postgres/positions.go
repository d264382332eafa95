package postgres

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/internal/logutil"
)

// maxPositionsPerQuery bounds the array of one query.
const maxPositionsPerQuery = 1000

var _ eventlog.PositionReader = (*Log)(nil)

// ReadPositions returns the events at positions, in position order, each
// at most once; positions holding no event are left out. Each lookup is
// one descent of the primary-key index.
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
		evs, err := l.queryEvents(ctx, l.q.readPositions, n, chunk)
		if err != nil {
			return nil, storeErr(ctx, "read positions", err)
		}
		out = append(out, evs...)
	}
	return out, nil
}
