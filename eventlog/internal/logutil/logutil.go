// Package logutil holds small pieces the event-log adapters share.
package logutil

import (
	"math"
	"slices"

	"github.com/cgp-platform/cgp/eventlog"
)

// PositionChunks sorts positions, drops repeats, and cuts them into
// chunks of at most size, as int64 for the database (a position above
// math.MaxInt64 is clamped: no event is there).
func PositionChunks(positions []eventlog.Position, size int) [][]int64 {
	sorted := slices.Clone(positions)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var out [][]int64
	for len(sorted) > 0 {
		n := min(len(sorted), size)
		chunk := make([]int64, n)
		for i, p := range sorted[:n] {
			chunk[i] = ClampInt64(p)
		}
		out = append(out, chunk)
		sorted = sorted[n:]
	}
	return out
}

// ClampInt64 is v as the databases' signed position, math.MaxInt64 above
// it (no event is there).
func ClampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
