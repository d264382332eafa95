package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cgp-platform/cgp/eventlog"
)

// maxCachedHeads bounds the writer's stream-head cache; past it the cache
// restarts empty (heads are read from the database on demand).
const maxCachedHeads = 100_000

// writerState is what the writer goroutine alone knows between batches:
// the heads of the streams it has seen and the last position committed,
// both current as long as no other process appended since (valid says
// whether last is known at all).
type writerState struct {
	heads map[string]streamHead
	last  uint64
	valid bool
}

func (w *writerState) forget() {
	clear(w.heads)
	w.valid = false
}

// remember takes the heads a committed batch read and wrote into the
// cache.
func (l *Log) remember(d *decider) {
	if l.ws.heads == nil || len(l.ws.heads) > maxCachedHeads {
		l.ws.heads = make(map[string]streamHead)
	}
	for stream, h := range d.read {
		l.ws.heads[stream] = h
	}
	for stream, h := range d.pending {
		l.ws.heads[stream] = h
	}
	l.ws.last = d.next - 1
	l.ws.valid = true
}

// slowBatch decides and commits the batch on fresh reads:
//
//  1. BEGIN; take the schema's append lock (pg_advisory_xact_lock, held
//     until the transaction ends); read the last position, the heads of
//     the batch's streams and where any of the batch's event ids is
//     already recorded. The lock is taken before the reads, so what they
//     return cannot change before the COMMIT: no other writer of the
//     schema can append meanwhile.
//  2. Decide each request in Go, then insert (queueInsert), notify and
//     commit.
func (l *Log) slowBatch(ctx context.Context, conn *pgxpool.Conn, reqs []*request) ([]response, *decider, error) {
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
	var last int64
	heads := make(map[string]streamHead, len(streams))
	for _, s := range streams {
		heads[s] = streamHead{} // absent unless read below
	}
	known := make(map[uuid.UUID]recorded, len(ids))
	err := func() error {
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
		rollback(ctx, conn)
		return nil, nil, err
	}
	d := newDecider(heads, known, uint64(last))
	d.read = heads
	answers := make([]response, len(reqs))
	for i, r := range reqs {
		answers[i], _ = d.decide(r)
	}
	b = &pgx.Batch{}
	l.queueInsert(b, d, uint64(last), pgtype.UUID{})
	b.Queue("COMMIT")
	br = conn.SendBatch(ctx, b)
	stale, err := readInsert(br, len(d.rows.pos))
	if closeErr := br.Close(); err == nil && !stale && closeErr != nil {
		err = closeErr
	}
	if err == nil && stale {
		// Only a writer that does not take the append lock can get here:
		// the reads above were current.
		err = errors.New("the log changed under the append lock; retry")
	}
	if err != nil {
		rollback(ctx, conn)
		return nil, nil, err
	}
	return answers, d, nil
}

// rollback ends a transaction a failed pipeline may have left open (or in
// the aborted state). When it cannot, the pool closes the connection on
// release.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(ctx, "ROLLBACK")
	}
}

// decider decides the requests of one batch in order, against the heads
// it is given (read under the append lock, or the writer's cache) plus
// what the batch's earlier requests add, and collects the rows to insert.
type decider struct {
	base    map[string]streamHead // not modified
	over    map[string]streamHead // heads of the flight decided before, over base (not modified)
	read    map[string]streamHead // heads read under the lock (slow path)
	pending map[string]streamHead // heads after the batch's rows
	// known is where event ids are recorded: read under the lock (slow
	// path) or unknown (fast path: nil), plus the batch's rows.
	known map[uuid.UUID]recorded
	// complete says whether base and known hold everything the database
	// does for the batch (slow path).
	complete bool
	next     uint64 // the position of the next event
	rows     rows
}

func newDecider(base map[string]streamHead, known map[uuid.UUID]recorded, last uint64) *decider {
	d := &decider{base: base, pending: make(map[string]streamHead), known: known, complete: known != nil, next: last + 1}
	if d.known == nil {
		d.known = make(map[uuid.UUID]recorded)
	}
	return d
}

// decideAll decides every request on the cache alone (fast path); ok is
// false as soon as one cannot be accepted with certainty.
func (d *decider) decideAll(reqs []*request) (answers []response, ok bool) {
	answers = make([]response, len(reqs))
	for i, r := range reqs {
		if answers[i], ok = d.decide(r); !ok {
			return nil, false
		}
	}
	return answers, true
}

// rows holds the columns of the events to insert, as unnest takes them.
type rows struct {
	pos, rev, occurred      []int64
	id                      []pgtype.UUID
	stream, typ, shop, meta []string
	schema                  []int32
	data, prev, hash        [][]byte
}

// head returns the stream's head as the batch sees it, and whether it is
// certain. Without complete reads, a stream never seen is taken as absent
// for a NoStream append only: should it exist, its revision 0 makes the
// insert fail and the batch is decided again.
func (d *decider) head(r *request) (streamHead, bool) {
	if h, ok := d.pending[r.stream]; ok {
		return h, true
	}
	if h, ok := d.over[r.stream]; ok {
		return h, true
	}
	h, ok := d.base[r.stream]
	if ok || d.complete {
		return h, true
	}
	return streamHead{}, r.expected.IsNoStream()
}

// decide answers r: an error of its own (wrong expected revision, an id
// used elsewhere), the result of the earlier append it repeats, or the
// result of its events, which it adds to the rows. Without complete reads
// it accepts r or reports (false) that it cannot decide it.
func (d *decider) decide(r *request) (response, bool) {
	h, ok := d.head(r)
	if !ok {
		return response{}, false
	}
	if !r.expected.Check(h.rev, h.exists) {
		if !d.complete {
			return response{}, false
		}
		if res, ok := d.repeat(r); ok {
			return response{res: res}, true
		}
		return response{err: &eventlog.WrongRevisionError{
			Stream: r.stream, Expected: r.expected, Actual: h.rev, ActualExists: h.exists,
		}}, true
	}
	if len(r.events) == 0 {
		// Nothing is inserted, so no condition would check the cache:
		// only fresh reads answer an append of no events.
		return response{res: eventlog.AppendResult{NextExpectedRevision: h.rev, Position: h.pos}}, d.complete
	}
	if res, ok := d.repeat(r); ok {
		return response{res: res}, d.complete
	}
	seen := make(map[uuid.UUID]bool, len(r.events))
	for i := range r.events {
		id := r.events[i].data.ID
		if seen[id] {
			return response{err: fmt.Errorf("event id %s appears twice in the append", id)}, d.complete
		}
		seen[id] = true
		if at, ok := d.known[id]; ok {
			return response{err: fmt.Errorf("event id %s is already recorded in stream %s", id, at.stream)}, d.complete
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
	d.pending[r.stream] = h
	return response{res: eventlog.AppendResult{NextExpectedRevision: h.rev, Position: h.pos}, wrote: len(r.events)}, true
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
