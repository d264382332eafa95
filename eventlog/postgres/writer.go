package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

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

// runBatch is one group-commit transaction, in two round trips:
//
//  1. BEGIN; take the schema's append lock (pg_advisory_xact_lock, held
//     until the transaction ends); read the last position, the heads of
//     the batch's streams and where any of the batch's event ids is
//     already recorded. The lock is taken before the reads, so what they
//     return cannot change before the COMMIT: no other writer of the
//     schema can append meanwhile.
//  2. Decide each request in Go (expected revision, repeat, id clash),
//     number the accepted events from the last position on, chain their
//     hashes, then INSERT them in one statement, pg_notify the new head
//     and COMMIT.
//
// A request refused (wrong revision, id used elsewhere) is answered with
// its own error and the others still commit. An error return means the
// transaction failed and nothing was committed (or, for a failed COMMIT,
// that it is unknown).
func (l *Log) runBatch(ctx context.Context, reqs []*request) (answers []response, err error) {
	conn, err := l.writer.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release() // the pool closes a connection left inside a transaction
	inTx := false
	defer func() {
		if err != nil && inTx {
			_, _ = conn.Exec(ctx, "ROLLBACK")
		}
	}()

	streams := make([]string, 0, len(reqs))
	var ids []pgtype.UUID
	seenStream := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		if !seenStream[r.stream] {
			seenStream[r.stream] = true
			streams = append(streams, r.stream)
		}
		for i := range r.events {
			ids = append(ids, pgtype.UUID{Bytes: r.events[i].data.ID, Valid: true})
		}
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock($1, $2)", appendLockClass, l.lockKey)
	b.Queue(l.q.maxPosition)
	b.Queue(l.q.heads, streams)
	b.Queue(l.q.byIDs, ids)
	br := conn.SendBatch(ctx, b)
	inTx = true
	var last int64
	heads := make(map[string]streamHead, len(streams))
	known := make(map[uuid.UUID]recorded, len(ids))
	err = func() error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("take the append lock: %w", err)
		}
		if err := br.QueryRow().Scan(&last); err != nil {
			return fmt.Errorf("read the last position: %w", err)
		}
		rows, _ := br.Query()
		for rows.Next() {
			var (
				stream   string
				rev, pos int64
				hash     []byte
			)
			if err := rows.Scan(&stream, &rev, &pos, &hash); err != nil {
				rows.Close()
				return fmt.Errorf("read stream heads: %w", err)
			}
			heads[stream] = streamHead{exists: true, rev: uint64(rev), pos: uint64(pos), hash: hash}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read stream heads: %w", err)
		}
		rows, _ = br.Query()
		for rows.Next() {
			var (
				id       [16]byte
				stream   string
				rev, pos int64
			)
			if err := rows.Scan(&id, &stream, &rev, &pos); err != nil {
				rows.Close()
				return fmt.Errorf("look up event ids: %w", err)
			}
			known[id] = recorded{stream: stream, rev: uint64(rev), pos: uint64(pos)}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("look up event ids: %w", err)
		}
		return nil
	}()
	if closeErr := br.Close(); err == nil && closeErr != nil {
		err = closeErr
	}
	if err != nil {
		return nil, err
	}

	d := decider{heads: heads, known: known, next: uint64(last) + 1}
	answers = make([]response, len(reqs))
	for i, r := range reqs {
		answers[i] = d.decide(r)
	}

	b = &pgx.Batch{}
	if n := len(d.rows.pos); n > 0 {
		rs := &d.rows
		b.Queue(l.q.insert, rs.pos, rs.id, rs.stream, rs.rev, rs.typ, rs.schema, rs.shop, rs.occurred,
			l.cfg.Now().UTC().UnixNano(), rs.data, rs.meta, rs.prev, rs.hash)
		b.Queue("SELECT pg_notify($1, $2)", l.channel, strconv.FormatInt(rs.pos[n-1], 10))
	}
	b.Queue("COMMIT")
	br = conn.SendBatch(ctx, b)
	err = func() error {
		if len(d.rows.pos) > 0 {
			tag, err := br.Exec()
			if err != nil {
				if isUniqueViolation(err) {
					// Only a writer that does not take the append lock can
					// get here: the reads above were current.
					return fmt.Errorf("insert events: the log changed under the append lock; retry: %w", err)
				}
				return fmt.Errorf("insert events: %w", err)
			}
			if tag.RowsAffected() != int64(len(d.rows.pos)) {
				return fmt.Errorf("insert events: %d rows inserted, want %d", tag.RowsAffected(), len(d.rows.pos))
			}
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("notify: %w", err)
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("commit: the server answered %s", tag)
		}
		return nil
	}()
	if closeErr := br.Close(); err == nil && closeErr != nil {
		err = closeErr
	}
	if err != nil {
		return nil, err
	}
	inTx = false
	return answers, nil
}

// decider decides the requests of one batch in order, against the heads
// and ids read under the append lock plus what the batch's earlier
// requests add, and collects the rows to insert.
type decider struct {
	heads map[string]streamHead
	known map[uuid.UUID]recorded
	next  uint64 // the position of the next event
	rows  rows
}

// rows holds the columns of the events to insert, as unnest takes them.
type rows struct {
	pos, rev, occurred      []int64
	id                      []pgtype.UUID
	stream, typ, shop, meta []string
	schema                  []int32
	data, prev, hash        [][]byte
}

// decide answers r: an error of its own (wrong expected revision, an id
// used elsewhere), the result of the earlier append it repeats, or the
// result of its events, which it adds to the rows.
func (d *decider) decide(r *request) response {
	h := d.heads[r.stream]
	if !r.expected.Check(h.rev, h.exists) {
		if res, ok := d.repeat(r); ok {
			return response{res: res}
		}
		return response{err: &eventlog.WrongRevisionError{
			Stream: r.stream, Expected: r.expected, Actual: h.rev, ActualExists: h.exists,
		}}
	}
	if len(r.events) == 0 {
		return response{res: eventlog.AppendResult{NextExpectedRevision: h.rev, Position: h.pos}}
	}
	if res, ok := d.repeat(r); ok {
		return response{res: res}
	}
	seen := make(map[uuid.UUID]bool, len(r.events))
	for i := range r.events {
		id := r.events[i].data.ID
		if seen[id] {
			return response{err: fmt.Errorf("event id %s appears twice in the append", id)}
		}
		seen[id] = true
		if at, ok := d.known[id]; ok {
			return response{err: fmt.Errorf("event id %s is already recorded in stream %s", id, at.stream)}
		}
	}
	for i := range r.events {
		pe := &r.events[i]
		e := &eventlog.Event{EventData: pe.data, StreamID: r.stream}
		if h.exists {
			e.Revision = h.rev + 1
		}
		hash := eventlog.ChainHash(h.hash, e)
		pos := d.next
		d.next++
		rs := &d.rows
		rs.pos = append(rs.pos, int64(pos))
		rs.id = append(rs.id, pgtype.UUID{Bytes: e.ID, Valid: true})
		rs.stream = append(rs.stream, r.stream)
		rs.rev = append(rs.rev, int64(e.Revision))
		rs.typ = append(rs.typ, e.Type)
		rs.schema = append(rs.schema, int32(e.SchemaVersion))
		rs.shop = append(rs.shop, e.ShopID)
		rs.occurred = append(rs.occurred, e.OccurredAt.UnixNano())
		rs.data = append(rs.data, e.Data)
		rs.meta = append(rs.meta, pe.metaJSON)
		rs.prev = append(rs.prev, h.hash) // nil (NULL) for revision 0
		rs.hash = append(rs.hash, hash)
		d.known[e.ID] = recorded{stream: r.stream, rev: e.Revision, pos: pos}
		h = streamHead{exists: true, rev: e.Revision, pos: pos, hash: hash}
	}
	d.heads[r.stream] = h
	return response{res: eventlog.AppendResult{NextExpectedRevision: h.rev, Position: h.pos}, wrote: len(r.events)}
}

// repeat reports whether r repeats an earlier append: its first event id
// is already recorded in the same stream. It then returns that append's
// result: the last of r's events found at consecutive revisions.
func (d *decider) repeat(r *request) (eventlog.AppendResult, bool) {
	var (
		res   eventlog.AppendResult
		found bool
	)
	for i := range r.events {
		at, ok := d.known[r.events[i].data.ID]
		if !ok || at.stream != r.stream || (found && at.rev != res.NextExpectedRevision+1) {
			break
		}
		res = eventlog.AppendResult{NextExpectedRevision: at.rev, Position: at.pos}
		found = true
	}
	return res, found
}
