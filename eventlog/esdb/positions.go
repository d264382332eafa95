package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

// positionReads is how many single-event reads of $all ReadPositions runs
// at once.
const positionReads = 16

var _ eventlog.PositionReader = (*Log)(nil)

// ReadPositions returns the events at positions, in position order, each at
// most once. Every event the adapter writes commits itself, so its Position
// is an exact $all position (see fromPosition): each is one read of $all
// from there, of one record, run positionReads at a time. A position that
// is not one of our events (none there, the server rejects it, or the
// record there belongs to another namespace) is left out.
func (l *Log) ReadPositions(ctx context.Context, positions []eventlog.Position) ([]eventlog.Event, error) {
	const op = "read positions"
	c, done, err := l.begin()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer done()
	if len(positions) == 0 {
		return nil, nil
	}
	ctx, cancel := l.opContext(ctx)
	defer cancel()
	sorted := slices.Clone(positions)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	if sorted[0] == 0 {
		sorted = sorted[1:] // 0 is "before the first event": never an event
	}
	found := make([]*eventlog.Event, len(sorted))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, positionReads)
	for i, p := range sorted {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			e, err := clientCall(ctx, l, c, func() (*eventlog.Event, error) { return l.readAt(ctx, c, p) })
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			found[i] = e
		}()
	}
	wg.Wait()
	if firstErr != nil {
		l.noteErr(c, firstErr)
		return nil, wrapErr(ctx, op, firstErr)
	}
	out := make([]eventlog.Event, 0, len(found))
	for _, e := range found {
		if e != nil {
			out = append(out, *e)
		}
	}
	return out, nil
}

// readAt reads the record of $all at p; nil when it is not one of our
// events.
func (l *Log) readAt(ctx context.Context, c *es.Client, p eventlog.Position) (*eventlog.Event, error) {
	rs, err := c.ReadAll(ctx, es.ReadAllOptions{Direction: es.Forwards, From: fromPosition(p)}, 1)
	if err != nil {
		if isInvalidPosition(err) {
			return nil, nil
		}
		return nil, err
	}
	defer rs.Close()
	re, err := rs.Recv()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		if isInvalidPosition(err) {
			return nil, nil
		}
		return nil, err
	}
	rec := re.OriginalEvent()
	pos, err := toPosition(rec.Position)
	if err != nil {
		return nil, fmt.Errorf("event %s@%d: %w", rec.StreamID, rec.EventNumber, err)
	}
	if pos != p || !l.codec.belongs(rec.StreamID, rec.EventType) {
		return nil, nil
	}
	e, err := l.codec.decode(rec)
	if err != nil {
		return nil, err
	}
	return &e, nil
}
