package esdb

import (
	"context"
	"errors"
	"fmt"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

// maxAppendAttempts bounds how often an Any or StreamExists append re-reads
// the stream head and tries again after losing a race with another writer.
const maxAppendAttempts = 8

// Append adds events to the end of stream if its state matches expected.
//
// The adapter chains every event to the previous one of its stream, so it
// must know the stream's last event: it reads the stream's tail, checks the
// expectation and idempotent repeats against it, computes the hashes, and
// appends with the exact revision it read (or NoStream) as the server-side
// expectation. A concurrent writer thus makes the append fail on the server
// instead of forking the chain; the adapter then re-evaluates: Any and
// StreamExists appends try again (up to maxAppendAttempts times), NoStream
// and Exact ones report a *eventlog.WrongRevisionError unless the winner was
// a repeat of this very append.
func (l *Log) Append(ctx context.Context, stream string, expected eventlog.ExpectedRevision, events ...eventlog.EventData) (eventlog.AppendResult, error) {
	op := "append to " + stream
	if err := validateStream(stream); err != nil {
		return eventlog.AppendResult{}, fmt.Errorf("append: %w", err)
	}
	for i := range events {
		if err := validateEventData(i, &events[i]); err != nil {
			return eventlog.AppendResult{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	c, done, err := l.begin()
	if err != nil {
		return eventlog.AppendResult{}, fmt.Errorf("%s: %w", op, err)
	}
	defer done()
	ctx, cancel := l.opContext(ctx)
	defer cancel()

	for attempt := 1; ; attempt++ {
		res, conflict, err := l.appendOnce(ctx, c, stream, expected, events)
		if err != nil {
			var wrong *eventlog.WrongRevisionError
			if errors.As(err, &wrong) && ctx.Err() == nil {
				return eventlog.AppendResult{}, err
			}
			l.noteErr(c, err)
			return eventlog.AppendResult{}, wrapErr(ctx, op, err)
		}
		if !conflict {
			return res, nil
		}
		if attempt == maxAppendAttempts {
			return eventlog.AppendResult{}, fmt.Errorf("%s: lost %d races with concurrent writers: %w", op, attempt, eventlog.ErrUnavailable)
		}
	}
}

// appendOnce makes one attempt. It reports conflict=true when the server
// rejected the append because the stream changed after its tail was read.
func (l *Log) appendOnce(ctx context.Context, c *es.Client, stream string, expected eventlog.ExpectedRevision, events []eventlog.EventData) (res eventlog.AppendResult, conflict bool, err error) {
	window := 1
	if len(events) > 0 {
		window = l.cfg.IdempotencyWindow
	}
	name := l.codec.server(stream)
	tail, err := l.readStream(ctx, c, name, es.ReadStreamOptions{Direction: es.Backwards, From: es.End{}}, window)
	if err != nil {
		return res, false, fmt.Errorf("read stream head: %w", err)
	}
	if len(events) > 0 {
		if res, ok := findRepeat(tail, events); ok {
			return res, false, nil
		}
	}
	var head *eventlog.Event
	if len(tail) > 0 {
		head = &tail[0]
	}
	var current uint64
	if head != nil {
		current = head.Revision
	}
	if !expected.Check(current, head != nil) {
		if len(events) > 0 {
			res, ok, err := l.repeatAfter(ctx, c, stream, expected, current, head != nil, events)
			if err != nil || ok {
				return res, false, err
			}
		}
		return res, false, &eventlog.WrongRevisionError{Stream: stream, Expected: expected, Actual: current, ActualExists: head != nil}
	}
	if len(events) == 0 {
		if head == nil {
			return res, false, nil
		}
		return eventlog.AppendResult{NextExpectedRevision: current, Position: head.Position}, false, nil
	}

	next, prev, want := uint64(0), []byte(nil), es.ExpectedRevision(es.NoStream{})
	if head != nil {
		next, prev, want = current+1, head.Hash, es.Revision(current)
	}
	data, err := chainAll(stream, next, prev, events)
	if err != nil {
		return res, false, err
	}
	wr, err := clientCall(ctx, l, c, func() (*es.WriteResult, error) {
		return c.AppendToStream(ctx, name, es.AppendToStreamOptions{ExpectedRevision: want}, data...)
	})
	if err != nil {
		if isWrongExpectedVersion(err) {
			return res, true, nil
		}
		return res, false, err
	}
	last := next + uint64(len(events)) - 1
	pos, err := l.positionOf(ctx, c, stream, last, events[len(events)-1], wr)
	if err != nil {
		return res, false, err
	}
	return eventlog.AppendResult{NextExpectedRevision: last, Position: pos}, false, nil
}

// chainAll maps events to the client's form as revisions next, next+1, …
// of stream, the first linked to prev.
func chainAll(stream string, next uint64, prev []byte, events []eventlog.EventData) ([]es.EventData, error) {
	data := make([]es.EventData, len(events))
	for i := range events {
		e := chainEvent(stream, next+uint64(i), prev, events[i])
		d, err := toEventData(&e)
		if err != nil {
			return nil, err
		}
		data[i], prev = d, e.Hash
	}
	return data, nil
}

// findRepeat looks for events[0] among tail (the stream's latest events,
// newest first). When found, the append repeats an earlier one: the result
// is that append's, ending at the last event that continues to match
// events in order.
func findRepeat(tail []eventlog.Event, events []eventlog.EventData) (eventlog.AppendResult, bool) {
	if len(events) == 0 {
		return eventlog.AppendResult{}, false
	}
	for i := range tail {
		if tail[i].ID != events[0].ID {
			continue
		}
		last := i
		for j := 1; j < len(events) && i-j >= 0 && tail[i-j].ID == events[j].ID; j++ {
			last = i - j
		}
		return eventlog.AppendResult{NextExpectedRevision: tail[last].Revision, Position: tail[last].Position}, true
	}
	return eventlog.AppendResult{}, false
}

// matchRepeat is findRepeat for events read forwards (oldest first) from
// where the append would have landed: the first one must be events[0].
func matchRepeat(got []eventlog.Event, events []eventlog.EventData) (eventlog.AppendResult, bool) {
	if len(got) == 0 || len(events) == 0 || got[0].ID != events[0].ID {
		return eventlog.AppendResult{}, false
	}
	last := 0
	for j := 1; j < len(events) && j < len(got) && got[j].ID == events[j].ID; j++ {
		last = j
	}
	return eventlog.AppendResult{NextExpectedRevision: got[last].Revision, Position: got[last].Position}, true
}

// repeatAfter finds a repeat of an append whose NoStream or Exact(r)
// expectation failed, however long the stream has grown since: the earlier
// append, made with the same expectation, landed at revision 0 or r+1.
func (l *Log) repeatAfter(ctx context.Context, c *es.Client, stream string, expected eventlog.ExpectedRevision, current uint64, exists bool, events []eventlog.EventData) (eventlog.AppendResult, bool, error) {
	var from uint64
	switch rev, exact := expected.Revision(); {
	case exact:
		from = rev + 1
	case expected.IsNoStream():
		from = 0
	default:
		return eventlog.AppendResult{}, false, nil
	}
	if !exists || from > current {
		return eventlog.AppendResult{}, false, nil
	}
	got, err := l.readStream(ctx, c, l.codec.server(stream), es.ReadStreamOptions{From: es.Revision(from)}, len(events))
	if err != nil {
		return eventlog.AppendResult{}, false, fmt.Errorf("read stream from %d: %w", from, err)
	}
	res, ok := matchRepeat(got, events)
	return res, ok, nil
}

// positionOf returns the global position of the event just appended at
// revision rev. It reads the event back rather than trusting the write
// result: for a multi-event append the server's result carries a single
// position, and for an append the server found to be a repeat it may carry
// none. The write result is the fallback for servers that report no position
// on stream reads.
func (l *Log) positionOf(ctx context.Context, c *es.Client, stream string, rev uint64, want eventlog.EventData, wr *es.WriteResult) (eventlog.Position, error) {
	got, err := l.readStream(ctx, c, l.codec.server(stream), es.ReadStreamOptions{From: es.Revision(rev)}, 1)
	if err == nil && len(got) == 1 {
		if got[0].ID != want.ID {
			return 0, fmt.Errorf("revision %d holds event %s, not the appended %s", rev, got[0].ID, want.ID)
		}
		return got[0].Position, nil
	}
	if wr != nil {
		if p, perr := toPosition(es.Position{Commit: wr.CommitPosition, Prepare: wr.PreparePosition}); perr == nil {
			return p, nil
		}
	}
	if err == nil {
		err = fmt.Errorf("revision %d not found after append", rev)
	}
	return 0, fmt.Errorf("position of appended event: %w", err)
}
