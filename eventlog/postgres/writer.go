package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// request is one Append queued for the writer.
type request struct {
	ctx      context.Context
	stream   string
	expected eventlog.ExpectedRevision
	events   []pendingEvent
	done     chan response // buffered: the writer never blocks on it
}

// pendingEvent is an event to insert: a copy of the caller's (so a caller
// whose ctx ended may reuse its buffers while the writer still works),
// with its occurred-at time filled in and its metadata already encoded by
// the caller's goroutine, off the writer's critical path.
type pendingEvent struct {
	data     eventlog.EventData
	metaJSON string
}

type response struct {
	res   eventlog.AppendResult
	err   error
	wrote int // events written by the request
}

// streamHead is the last event of a stream.
type streamHead struct {
	exists bool
	rev    uint64
	pos    uint64
	hash   []byte
}

// recorded is where an event id already lies.
type recorded struct {
	stream   string
	rev, pos uint64
}

// Append adds events to stream if its state matches expected; see
// eventlog.Log. It returns once the events are committed, batched with
// concurrent appends of this process into one transaction (see doc.go).
// Text fields (stream, type, shop id, metadata) must be valid UTF-8
// without NUL bytes, as PostgreSQL's text requires.
func (l *Log) Append(ctx context.Context, stream string, expected eventlog.ExpectedRevision, events ...eventlog.EventData) (eventlog.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return eventlog.AppendResult{}, fmt.Errorf("append to %s: %w", stream, err)
	}
	if stream == "" {
		return eventlog.AppendResult{}, errors.New("append: empty stream id")
	}
	if !validText(stream) {
		return eventlog.AppendResult{}, fmt.Errorf("append to %q: stream id is not valid UTF-8 without NUL", stream)
	}
	r := &request{ctx: ctx, stream: stream, expected: expected, events: make([]pendingEvent, len(events)), done: make(chan response, 1)}
	now := l.cfg.Now().UTC()
	for i := range events {
		e := &events[i]
		if e.ID == uuid.Nil {
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: event %d has no id", stream, i)
		}
		if e.Type == "" {
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: event %s has no type", stream, e.ID)
		}
		if !validText(e.Type) || !validText(e.ShopID) || !validMetadata(&e.Metadata) {
			// encoding/json would replace bad bytes (and the event read
			// back would no longer match its hash); PostgreSQL refuses NUL
			// in text and jsonb.
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: type, shop id or metadata of %s is not valid UTF-8 without NUL", stream, e.ID)
		}
		meta, err := json.Marshal(e.Metadata)
		if err != nil {
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: encode metadata of %s: %w", stream, e.ID, err)
		}
		pe := pendingEvent{data: *e, metaJSON: string(meta)}
		pe.data.Data = bytes.Clone(e.Data)
		if pe.data.Data == nil {
			pe.data.Data = []byte{}
		}
		pe.data.Metadata.KeyIDs = slices.Clone(e.Metadata.KeyIDs)
		if pe.data.OccurredAt.IsZero() {
			pe.data.OccurredAt = now
		}
		r.events[i] = pe
	}
	res, err := l.submit(ctx, r)
	if err != nil {
		return eventlog.AppendResult{}, fmt.Errorf("append to %s: %w", stream, err)
	}
	return res, nil
}

func validText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func validMetadata(m *eventlog.Metadata) bool {
	ok := validText(m.CorrelationID) && validText(m.CausationID) && validText(m.Actor) && validText(m.Source)
	for _, id := range m.KeyIDs {
		ok = ok && validText(id)
	}
	return ok
}

// submit queues r for the writer and waits for its answer or ctx.
func (l *Log) submit(ctx context.Context, r *request) (eventlog.AppendResult, error) {
	if err := l.readLock(); err != nil {
		return eventlog.AppendResult{}, err
	}
	select {
	case l.reqs <- r:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		return eventlog.AppendResult{}, ctx.Err()
	}
	select {
	case resp := <-r.done:
		return resp.res, resp.err
	case <-ctx.Done():
		// The writer still answers into the buffered channel; the append
		// may or may not be applied.
		return eventlog.AppendResult{}, ctx.Err()
	}
}

// runWriter is the writer goroutine (group commit). It takes the first
// queued request and every request queued behind it (up to MaxBatch
// events) and commits them in one transaction; requests that arrive
// meanwhile wait in reqs and make the next batch, so the more appenders,
// the larger the batches. It exits when Close has closed reqs and every
// queued request is answered.
func (l *Log) runWriter() {
	defer close(l.writerDone)
	var next *request // taken from reqs, not yet in a batch
	for {
		if next == nil {
			r, ok := <-l.reqs
			if !ok {
				return
			}
			next = r
		}
		batch := []*request{next}
		events := len(next.events)
		next = nil
	fill:
		for events < l.cfg.MaxBatch {
			select {
			case r, ok := <-l.reqs:
				if !ok {
					break fill // the loop's next receive returns
				}
				if events+len(r.events) > l.cfg.MaxBatch {
					next = r // it opens the following batch
					break fill
				}
				batch = append(batch, r)
				events += len(r.events)
			default:
				break fill
			}
		}
		l.commitBatch(batch)
	}
}

// commitBatch runs one group-commit transaction and answers its requests.
// A request whose ctx ended is answered at once and left out. When the
// transaction fails, every request of the batch is answered with the
// failure (ErrUnavailable): nothing of it was committed, unless the
// failure hit the COMMIT itself, which is the ambiguity eventlog.Log
// documents for any append that returns an error.
func (l *Log) commitBatch(batch []*request) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- response{err: err}
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	answers, err := l.runBatch(ctx, live)
	if err != nil {
		l.writeFailed.Store(true)
		for _, r := range live {
			r.done <- response{err: unavailable("append", err)}
		}
		return
	}
	l.writeFailed.Store(false)
	var appends, events uint64
	for i, r := range live {
		if answers[i].wrote > 0 {
			appends++
			events += uint64(answers[i].wrote)
		}
		r.done <- answers[i]
	}
	l.stats.commits.Add(1)
	l.stats.appends.Add(appends)
	l.stats.events.Add(events)
	if events > 0 {
		l.changed.notify()
	}
}
