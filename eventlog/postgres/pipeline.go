package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// runWriter is the writer goroutine (group commit). It takes the first
// queued request and every request queued behind it (up to MaxBatch
// events) as one batch, committed in one transaction; requests that
// arrive meanwhile make the next batch, so the more appenders, the larger
// the batches.
//
// Batches that the writer's cached stream heads decide are pipelined: the
// writer sends batch N+1, decided as if N had committed, before it reads
// N's outcome, so the server never waits for this process between two
// commits. N+1's insert is conditional on N being the log's last commit
// (see takeOff), so a wrong guess inserts nothing and N+1 is decided
// again; there are never more than two batches in flight.
//
// It exits when Close has closed reqs and every queued request is
// answered.
func (l *Log) runWriter() {
	defer close(l.writerDone)
	defer l.wc.release()
	var (
		next     *request // taken from reqs, not yet in a batch
		inflight *flight  // sent, not yet landed
	)
	for {
		if next == nil {
			select {
			case r, ok := <-l.reqs:
				if !ok {
					if inflight != nil {
						l.land(inflight, nil)
					}
					return
				}
				next = r
			default:
				// Nothing queued: land what is in flight, then wait.
				if inflight != nil {
					l.land(inflight, nil)
					inflight = nil
					continue
				}
				r, ok := <-l.reqs
				if !ok {
					return
				}
				next = r
			}
		}
		var batch []*request
		batch, next = l.fill(next)
		if len(batch) == 0 {
			continue
		}
		f := l.takeOff(batch, inflight)
		if inflight != nil {
			landedF := l.land(inflight, f)
			inflight = nil
			if landedF {
				continue // the batch was answered with inflight
			}
		}
		if f == nil {
			l.slowCommit(batch)
			continue
		}
		inflight = f
	}
}

// fill returns the batch that first opens: first and the requests queued
// behind it, up to MaxBatch events, less those whose ctx ended (answered
// at once); and the request that opens the following batch, if one was
// taken.
func (l *Log) fill(first *request) (batch []*request, next *request) {
	all := []*request{first}
	events := len(first.events)
fill:
	for events < l.cfg.MaxBatch {
		select {
		case r, ok := <-l.reqs:
			if !ok {
				break fill // the writer's next receive sees it
			}
			if events+len(r.events) > l.cfg.MaxBatch {
				next = r
				break fill
			}
			all = append(all, r)
			events += len(r.events)
		default:
			break fill
		}
	}
	for _, r := range all {
		if err := r.ctx.Err(); err != nil {
			r.answer(response{err: err})
			continue
		}
		batch = append(batch, r)
	}
	return batch, next
}

// flight is a batch sent in one round trip (the append lock and the
// conditional insert, committed by a Sync) whose outcome is not read yet.
type flight struct {
	reqs    []*request
	answers []response
	d       *decider
	// watchdog ends the pipeline (closing the connection) when the flight
	// has not landed within batchTimeout; sendErr is a failure to send it.
	watchdog *time.Timer
	sendErr  error
	// pl is the pipeline the flight was sent on: its results are read
	// from it only if the connection was not replaced since.
	pl *pgconn.Pipeline
	// end is the last position once the flight committed, and endID the
	// id of the event there when the flight (or the one it was decided
	// on) wrote it: the condition a flight decided on this one checks.
	end   uint64
	endID pgtype.UUID
}

// outcome is how a flight's transaction ended.
type outcome struct {
	stale bool // committed nothing: decided on heads that did not hold
	err   error
}

// takeOff decides batch from the cache, as if inflight (when not nil)
// had committed, and sends it on the writer's connection in pipeline mode:
// the append lock and the conditional insert, then a Sync, which commits
// the implicit transaction they form. The server runs what a connection
// sends in order, so the batch takes the append lock after inflight's
// transaction ended. It returns nil, having sent nothing, when the cache
// cannot decide every request (see decider.head) or is not valid.
//
// The insert applies only if the last position is the one the batch was
// decided on and, when that position was written by a flight not yet
// landed, holds that flight's last event: event ids are unique and only
// that flight's transaction writes them, so this holds exactly when the
// flight committed and nothing was appended after it. Otherwise the
// transaction inserts nothing.
func (l *Log) takeOff(batch []*request, inflight *flight) *flight {
	if !l.ws.valid {
		return nil
	}
	last, lastID := l.ws.last, pgtype.UUID{}
	d := newDecider(l.ws.heads, nil, last)
	if inflight != nil {
		last, lastID = inflight.end, inflight.endID
		d = newDecider(l.ws.heads, nil, last)
		d.over = inflight.d.pending
	}
	answers, ok := d.decideAll(batch)
	if !ok {
		return nil
	}
	f := &flight{reqs: batch, answers: answers, d: d, end: last, endID: lastID}
	if n := len(d.rows.pos); n > 0 {
		f.end = uint64(d.rows.pos[n-1])
		f.endID = d.rows.id[n-1]
	}
	f.sendErr = l.send(f, last, lastID)
	if l.takeOffHook != nil {
		l.takeOffHook()
	}
	if f.sendErr == nil {
		f.watchdog = time.AfterFunc(batchTimeout, l.wc.cancel)
	}
	return f
}

// send queues f's statements on the pipeline and flushes them. On a
// failure the connection is dropped: a pipeline must never keep half a
// flight queued.
func (l *Log) send(f *flight, last uint64, lastID pgtype.UUID) error {
	if err := l.wc.startPipeline(l); err != nil {
		return err
	}
	err := func() error {
		m := l.wc.conn.Conn().TypeMap()
		var lock pgx.ExtendedQueryBuilder
		if err := lock.Build(m, l.wc.lock, []any{appendLockClass, l.lockKey}); err != nil {
			return err
		}
		l.wc.pl.SendQueryStatement(l.wc.lock, lock.ParamValues, lock.ParamFormats, nil)
		if len(f.d.rows.pos) > 0 {
			var ins pgx.ExtendedQueryBuilder
			if err := ins.Build(m, l.wc.insert, l.insertArgs(f.d, last, lastID)); err != nil {
				return err
			}
			l.wc.pl.SendQueryStatement(l.wc.insert, ins.ParamValues, ins.ParamFormats, nil) // text results
		}
		f.pl = l.wc.pl
		return l.wc.pl.Sync()
	}()
	if err != nil {
		l.wc.drop()
		return fmt.Errorf("send batch: %w", err)
	}
	return nil
}

// land reads f's outcome and answers its requests, deciding them again
// on fresh reads when f was stale. next is the flight sent after f and
// decided on it, or nil: when f did not commit, next's outcome is read
// first (it can only have committed if f did after all, its COMMIT's
// answer being lost), so that nothing is decided again while next may
// still commit; next is then landed too, and land reports true.
func (l *Log) land(f, next *flight) (landedNext bool) {
	of := l.collect(f)
	if of.err == nil && !of.stale {
		l.settle(f, of)
		return false
	}
	var on outcome
	if next != nil {
		on = l.collect(next)
	}
	l.settle(f, of)
	if next != nil {
		l.settle(next, on)
		return true
	}
	return false
}

// collect reads the outcome of f's round trip: its transaction was
// committed (or rolled back, on an error) by the Sync.
func (l *Log) collect(f *flight) outcome {
	if f.sendErr != nil {
		return outcome{err: f.sendErr}
	}
	defer f.watchdog.Stop()
	if l.wc.pl != f.pl {
		return outcome{err: errors.New("the writer's connection was dropped")}
	}
	stale, err := l.wc.readFlight(len(f.d.rows.pos))
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return outcome{stale: true} // a UNIQUE constraint refused a row: rolled back
		}
		return outcome{err: err}
	}
	return outcome{stale: stale}
}

// settle answers f's requests after its outcome: the answers it was sent
// with once committed; answers decided again on fresh reads when it was
// stale; the failure otherwise.
func (l *Log) settle(f *flight, o outcome) {
	switch {
	case o.err == nil && !o.stale:
		l.remember(f.d)
		l.answerAll(f.reqs, f.answers)
	case o.stale:
		l.ws.forget()
		l.slowCommit(f.reqs)
	default:
		l.ws.forget()
		l.failAll(f.reqs, o.err)
	}
}

// slowCommit decides reqs on fresh reads under the append lock, commits
// them and answers them (see slowBatch). Nothing is in flight: it leaves
// pipeline mode for the two round trips of one explicit transaction.
func (l *Log) slowCommit(reqs []*request) {
	l.stats.rereads.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if err := l.wc.stopPipeline(); err != nil {
		l.wc.drop()
	}
	if err := l.wc.connect(ctx, l); err != nil {
		l.ws.forget()
		l.failAll(reqs, err)
		return
	}
	answers, d, err := l.slowBatch(ctx, l.wc.conn, reqs)
	if err != nil {
		if l.wc.conn.Conn().IsClosed() || l.wc.conn.Conn().PgConn().TxStatus() != 'I' {
			l.wc.drop()
		}
		l.ws.forget()
		l.failAll(reqs, err)
		return
	}
	l.remember(d)
	l.answerAll(reqs, answers)
}

// answerAll answers a committed batch's requests and wakes the
// subscriptions.
func (l *Log) answerAll(reqs []*request, answers []response) {
	l.writeFailed.Store(false)
	var appends, events uint64
	for i := range reqs {
		if answers[i].wrote > 0 {
			appends++
			events += uint64(answers[i].wrote)
		}
	}
	// Counted before answering, so that a caller who saw its append
	// succeed sees it counted.
	l.stats.commits.Add(1)
	l.stats.appends.Add(appends)
	l.stats.events.Add(events)
	for i, r := range reqs {
		r.answer(answers[i])
	}
	if events > 0 {
		l.changed.Notify()
	}
}

// failAll answers every request of a batch whose transaction failed with
// the failure (ErrUnavailable): nothing of it was committed, unless the
// failure hit the COMMIT itself, which is the ambiguity eventlog.Log
// documents for any append that returns an error.
func (l *Log) failAll(reqs []*request, err error) {
	l.writeFailed.Store(true)
	for _, r := range reqs {
		r.answer(response{err: unavailable("append", err)})
	}
}

// insertArgs are the arguments of the conditional insert of d's rows: it
// applies only if the last position is last and, when lastID is valid,
// the event at last has that id.
func (l *Log) insertArgs(d *decider, last uint64, lastID pgtype.UUID) []any {
	rs := &d.rows
	return []any{rs.pos, rs.id, rs.stream, rs.rev, rs.typ, rs.schema, rs.shop, rs.occurred,
		l.cfg.Now().UTC().UnixNano(), rs.data, rs.meta, rs.prev, rs.hash, int64(last), l.channel, lastID}
}

// queueInsert queues the conditional insert of d's rows (when it has any)
// into b (see insertArgs).
func (l *Log) queueInsert(b *pgx.Batch, d *decider, last uint64, lastID pgtype.UUID) {
	if len(d.rows.pos) == 0 {
		return
	}
	b.Queue(l.q.insert, l.insertArgs(d, last, lastID)...)
}

// readInsert reads the results of what queueInsert and a COMMIT queued:
// stale when the insert's condition failed or a UNIQUE constraint refused
// a row.
func readInsert(br pgx.BatchResults, rows int) (stale bool, err error) {
	if rows > 0 {
		var inserted, notified int64
		if err := br.QueryRow().Scan(&inserted, &notified); err != nil {
			if isUniqueViolation(err) {
				return true, nil // the caller rolls back: the COMMIT never ran
			}
			return false, fmt.Errorf("insert events: %w", err)
		}
		if inserted == 0 {
			stale = true // the COMMIT below commits nothing
		} else if inserted != int64(rows) {
			return false, fmt.Errorf("insert events: %d rows inserted, want %d", inserted, rows)
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return false, fmt.Errorf("commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		return false, fmt.Errorf("commit: the server answered %s", tag)
	}
	return stale, nil
}
