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

// answer hands the writer's answer to the waiting Append.
func (r *request) answer(resp response) { r.done <- resp }

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
