package esdb

import (
	"fmt"
	"math"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

// toPosition maps the server's $all position of an event to the port's
// Position: its prepare position, the byte offset of the event's own record
// in the transaction log. See the package documentation for why that is
// unique and strictly increasing in $all order. The server reports an
// unknown position as -1 (MaxUint64 on the wire): that, and anything beyond
// the signed 64-bit range the server uses, is an error.
func toPosition(p es.Position) (eventlog.Position, error) {
	if p.Prepare > math.MaxInt64 || p.Commit > math.MaxInt64 {
		return 0, fmt.Errorf("server reported no $all position (commit %d, prepare %d): EventStoreDB 22.10 or later is required", p.Commit, p.Prepare)
	}
	if p.Prepare == 0 && p.Commit == 0 {
		// Offset 0 holds the log's first system record, never an event;
		// zero is how the client reports a missing position.
		return 0, fmt.Errorf("server reported position 0/0 for an event")
	}
	return p.Prepare, nil
}

// fromPosition maps a port Position other than 0 back to the server
// position of the event at it: every event the adapter writes commits
// itself, so its commit position equals its prepare position and (p, p) is
// its exact $all position. Reads start there (including the event, which
// the cursor then skips), subscriptions after it. Position 0 ("before the
// first event") maps to es.Start instead; see cursor.from.
func fromPosition(p eventlog.Position) es.Position {
	return es.Position{Commit: p, Prepare: p}
}

// chunkSize is the server's default transaction-log chunk size. Records
// never span chunks, so a multiple of it is the start of a record (or the
// end of the log).
const chunkSize = 256 << 20

// cursor tracks how far a reader of $all has got, so that a read or a
// subscription can be resumed exactly after the last event handled. It
// keeps the full server position of that event, which is where a resumed
// subscription starts (exclusive) or a read starts (inclusive), and its
// mapped Position, which every later event must exceed: anything at or
// before it has been handled already and is skipped.
//
// A cursor started from a caller's Position may not be at a record: the
// port allows any value, and a server asked to read from the middle of a
// record fails with "invalid position". retreat then moves the start back
// to the chunk holding it, then to the start of the log; the mapped
// Position still skips everything up to the caller's. The first event seen
// pins the cursor to a real record again.
type cursor struct {
	last     es.Position       // where to resume
	mapped   eventlog.Position // events at or before it are skipped
	started  bool              // false: nothing handled and no start given
	exact    bool              // last is a record the server reported
	retreats int               // 0: at the caller's position, 1: chunk start, 2: log start
}

// newCursor returns a cursor positioned after the port Position after.
func newCursor(after eventlog.Position) cursor {
	if after == 0 {
		return cursor{}
	}
	return cursor{last: fromPosition(after), mapped: after, started: true}
}

// from is where to (re)subscribe or read.
func (c *cursor) from() es.AllPosition {
	switch {
	case !c.started:
		return es.Start{}
	case c.exact || c.retreats == 0:
		return c.last
	case c.retreats == 1:
		floor := c.mapped / chunkSize * chunkSize
		return es.Position{Commit: floor, Prepare: floor}
	default:
		return es.Start{}
	}
}

// retreat moves an unverified start back after the server rejected it as
// an invalid position; it reports false when there is nowhere to retreat
// to (the start is a record the server reported, or already the log start).
func (c *cursor) retreat() bool {
	if !c.started || c.exact || c.retreats >= 2 {
		return false
	}
	c.retreats++
	if c.retreats == 1 && c.mapped/chunkSize == 0 {
		c.retreats = 2 // the chunk start is the log start
	}
	return true
}

// admit decides whether the event at p is new. It returns the mapped
// Position and true for an event after everything handled so far, and marks
// it handled; false for an event at or before the cursor (a server
// re-delivering the event a read or subscription started from, the events
// skipped after a retreat, or those of a transaction that started before the
// cursor). An unknown position is an error.
func (c *cursor) admit(p es.Position) (eventlog.Position, bool, error) {
	pos, err := toPosition(p)
	if err != nil {
		return 0, false, err
	}
	if c.started && pos <= c.mapped {
		if !c.exact || tfLess(c.last, p) {
			c.last, c.exact = p, true
		}
		return pos, false, nil
	}
	c.last, c.mapped, c.started, c.exact = p, pos, true, true
	return pos, true, nil
}

// tfLess orders server positions the way $all is ordered.
func tfLess(a, b es.Position) bool {
	return a.Commit < b.Commit || (a.Commit == b.Commit && a.Prepare < b.Prepare)
}
