package sqlite

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// add runs r inside the open batch's transaction, beginning one if needed.
// A request whose ctx ended, or that comes after the log failed closed, is
// answered at once. When the transaction itself fails, the whole batch is
// rolled back and answered with the failure (see abort).
func (w *writer) add(r *request) {
	if err := r.ctx.Err(); err != nil {
		r.done <- response{err: err}
		return
	}
	if err := w.l.failure(); err != nil {
		r.done <- response{err: err}
		return
	}
	w.reqs = append(w.reqs, r)
	w.answers = append(w.answers, response{})
	w.events += len(r.events)
	if !w.inTx {
		if err := w.begin(); err != nil {
			w.abort("begin", err)
			return
		}
	}
	resp, err := w.apply(r, w.l.cfg.Now().UTC())
	if err != nil {
		w.abort("append to "+r.stream, err)
		return
	}
	w.answers[len(w.answers)-1] = resp
	if resp.wrote > 0 {
		w.wroteAppends++
		w.wroteEvents += uint64(resp.wrote)
	}
}

// begin opens the batch's transaction.
func (w *writer) begin() error {
	if m := w.l.maxPages.Load(); m != 0 && m != w.appliedMaxPages {
		if err := w.execSQL(fmt.Sprintf("PRAGMA max_page_count = %d", m)); err != nil {
			return err
		}
		w.appliedMaxPages = m
	}
	if err := w.execSQL("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	w.inTx = true
	found, err := w.queryRow(w.dataVersion)
	if err != nil || !found {
		return errors.Join(err, errors.New("no data_version"))
	}
	if version := w.dest[0].(int64); version != w.lastVersion || len(w.heads) > maxCachedHeads {
		// Another connection committed since our last transaction: cached
		// heads may be stale.
		clear(w.heads)
		w.lastVersion = version
	}
	clear(w.pending)
	return nil
}

// commit commits the open batch and hands it to the syncer.
func (w *writer) commit() {
	if !w.inTx {
		return // every request of the batch was answered already
	}
	if err := w.execSQL("COMMIT"); err != nil {
		w.abort("commit", err)
		return
	}
	w.l.writeFailed.Store(false)
	for stream, h := range w.pending {
		w.heads[stream] = h
	}
	w.l.stats.commits.Add(1)
	w.l.stats.appends.Add(w.wroteAppends)
	w.l.stats.events.Add(w.wroteEvents)
	// Every answer, even a wrong-revision one or a repeat, waits for the
	// fsync: it reports a state that is not durable before it.
	w.handOff()
	w.afterCommit()
}

// abort rolls the open transaction back and answers every request of the
// batch with the failure. The cached heads are forgotten: the transaction
// may have changed them.
func (w *writer) abort(op string, err error) {
	w.l.writeFailed.Store(true)
	if w.inTx {
		_ = w.execSQL("ROLLBACK")
	}
	clear(w.heads)
	for i := range w.answers {
		w.answers[i] = response{err: unavailable(op, err)}
	}
	if w.floor == 0 {
		for i, r := range w.reqs {
			r.done <- w.answers[i]
		}
		w.reset()
		return
	}
	// The batch holds the read cap, which only the syncer lifts, after an
	// fsync: that is also right should a failed COMMIT have left the
	// batch in the WAL after all.
	w.handOff()
}

// handOff passes the batch to the syncer and starts a new one.
func (w *writer) handOff() {
	w.l.inSync.Add(1)
	w.l.syncs <- syncJob{reqs: w.reqs, answers: w.answers, floor: w.floor}
	// The syncer owns the slices now.
	w.reqs, w.answers = nil, nil
	w.reset()
}

func (w *writer) reset() {
	w.inTx = false
	w.reqs = w.reqs[:0]
	w.answers = w.answers[:0]
	w.events = 0
	w.wroteAppends, w.wroteEvents = 0, 0
	w.floor = 0
}

// apply runs one request inside the open transaction. A failure that
// concerns the request alone is returned in the response; an error return
// means the transaction itself failed and must be rolled back.
func (w *writer) apply(r *request, now time.Time) (response, error) {
	if r.meta != nil {
		if _, err := w.exec(w.setMeta, r.stream, string(r.meta), now.UnixNano()); err != nil {
			return response{}, err
		}
		return response{}, nil
	}
	h, err := w.headOf(r.stream)
	if err != nil {
		return response{}, err
	}
	if !r.expected.Check(h.rev, h.exists) {
		res, repeat, err := w.repeat(r)
		if err != nil {
			return response{}, err
		}
		if repeat {
			return response{res: res}, nil
		}
		return response{err: &eventlog.WrongRevisionError{
			Stream: r.stream, Expected: r.expected, Actual: h.rev, ActualExists: h.exists,
		}}, nil
	}
	if len(r.events) == 0 {
		return response{res: eventlog.AppendResult{NextExpectedRevision: h.rev, Position: h.pos}}, nil
	}
	multi := len(r.events) > 1
	if multi {
		// A statement that fails rolls back alone; the savepoint makes the
		// request's several inserts all-or-nothing within the batch.
		if err := w.execSQL("SAVEPOINT request"); err != nil {
			return response{}, err
		}
	}
	next := h
	recorded := now.UnixNano()
	for i := range r.events {
		pe := &r.events[i]
		e := &eventlog.Event{EventData: pe.data, StreamID: r.stream}
		var rev uint64
		if next.exists {
			rev = next.rev + 1
		}
		e.Revision = rev
		hash := eventlog.ChainHash(next.hash, e)
		data := e.Data
		if data == nil {
			data = []byte{}
		}
		var prev any
		if next.hash != nil {
			prev = next.hash
		}
		res, err := w.exec(w.insert, e.ID[:], r.stream, int64(rev), e.Type, int64(e.SchemaVersion),
			e.ShopID, e.OccurredAt.UnixNano(), recorded, data, pe.metaJSON, prev, hash)
		if err == nil {
			var pos int64
			pos, err = res.LastInsertId()
			next = streamHead{exists: true, rev: rev, pos: uint64(pos), hash: hash}
			if err == nil && w.floor == 0 {
				// The batch's first event: from here until its fsync,
				// readers of this process stop below it. Positions grow,
				// so the batch's later events lie above it.
				w.floor = pos
				w.l.vis.hold(pos)
			}
		}
		if err != nil {
			if multi {
				if rbErr := w.execSQL("ROLLBACK TO request; RELEASE request"); rbErr != nil {
					return response{}, rbErr
				}
			}
			switch {
			case isUniqueViolation(err):
				return w.rejected(r)
			case isConstraint(err):
				// Another constraint refused the row: this request alone fails.
				return response{err: fmt.Errorf("insert event %s: %w", e.ID, err)}, nil
			default:
				return response{}, err
			}
		}
	}
	if multi {
		if err := w.execSQL("RELEASE request"); err != nil {
			return response{}, err
		}
	}
	w.pending[r.stream] = next
	return response{res: eventlog.AppendResult{NextExpectedRevision: next.rev, Position: next.pos}, wrote: len(r.events)}, nil
}

// rejected answers a request whose insert hit a UNIQUE constraint: either
// it repeats an earlier append (its first event id is already in the
// stream), or one of its ids is used elsewhere, or the cached head was
// stale.
func (w *writer) rejected(r *request) (response, error) {
	res, repeat, err := w.repeat(r)
	if err != nil {
		return response{}, err
	}
	if repeat {
		return response{res: res}, nil
	}
	seen := make(map[uuid.UUID]bool, len(r.events))
	for i := range r.events {
		id := r.events[i].data.ID
		if seen[id] {
			return response{err: fmt.Errorf("event id %s appears twice in the append", id)}, nil
		}
		seen[id] = true
		found, err := w.queryRow(w.byID, id[:])
		if err != nil {
			return response{}, err
		}
		if found {
			return response{err: fmt.Errorf("event id %s is already recorded in stream %s", id, w.dest[0])}, nil
		}
	}
	// No id clashes, so (stream, revision) did: the cached head was stale.
	delete(w.heads, r.stream)
	delete(w.pending, r.stream)
	return response{err: unavailable("append", errors.New("stream head changed concurrently; retry"))}, nil
}

// repeat reports whether r repeats an earlier append: its first event id is
// already recorded in the same stream. It then returns that append's
// result: the last of r's events found at consecutive revisions.
func (w *writer) repeat(r *request) (eventlog.AppendResult, bool, error) {
	var (
		res   eventlog.AppendResult
		found bool
	)
	for i := range r.events {
		id := r.events[i].data.ID
		ok, err := w.queryRow(w.byID, id[:])
		if err != nil {
			return eventlog.AppendResult{}, false, err
		}
		if !ok {
			break
		}
		stream, _ := w.dest[0].(string)
		rev, _ := w.dest[1].(int64)
		pos, _ := w.dest[2].(int64)
		if stream != r.stream || (found && uint64(rev) != res.NextExpectedRevision+1) {
			break
		}
		res = eventlog.AppendResult{NextExpectedRevision: uint64(rev), Position: uint64(pos)}
		found = true
	}
	return res, found, nil
}

// headOf returns the stream's head as the open transaction sees it.
func (w *writer) headOf(stream string) (streamHead, error) {
	if h, ok := w.pending[stream]; ok {
		return h, nil
	}
	if h, ok := w.heads[stream]; ok {
		return h, nil
	}
	var h streamHead
	found, err := w.queryRow(w.head, stream)
	if err != nil {
		return streamHead{}, err
	}
	if found {
		rev, ok1 := w.dest[0].(int64)
		pos, ok2 := w.dest[1].(int64)
		hash, ok3 := w.dest[2].([]byte)
		if !ok1 || !ok2 || !ok3 {
			return streamHead{}, fmt.Errorf("head of %s: unexpected row %v", stream, w.dest)
		}
		h = streamHead{exists: true, rev: uint64(rev), pos: uint64(pos), hash: hash}
	}
	w.heads[stream] = h
	return h, nil
}
