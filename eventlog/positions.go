package eventlog

import "context"

// PositionReader is implemented by logs that can fetch events by their
// global positions directly, so that an index kept elsewhere (the audit
// read model) can page through a subset of the log without reading the
// events in between.
type PositionReader interface {
	// ReadPositions returns the events at the given positions, in
	// ascending position order, each at most once. A position holding no
	// event (never used, or an event removed behind the log's back) is
	// left out: the caller compares what it asked with what it got.
	ReadPositions(ctx context.Context, positions []Position) ([]Event, error)
}
