package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/google/uuid"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
)

// maxCachedHeads bounds the stream-head cache; past it the cache restarts
// empty (heads are re-read from the database on demand).
const maxCachedHeads = 100_000

// request is one Append (or SetStreamMetadata, when meta is set) queued for
// the writer.
type request struct {
	ctx      context.Context
	stream   string
	expected eventlog.ExpectedRevision
	events   []pendingEvent
	meta     []byte // JSON; set for a stream-metadata write
	done     chan response
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

// streamHead is the last event of a stream as the writer knows it.
type streamHead struct {
	exists bool
	rev    uint64
	pos    uint64
	hash   []byte
}

// writer owns the single write connection. Only the writer goroutine
// (runWriter) uses it after Open. It talks to the driver connection
// directly, inside conn.Raw, so that the statements of a batch skip
// database/sql's per-call argument conversion and locking.
type writer struct {
	l    *Log
	conn *sql.Conn // pinned for the log's lifetime
	dc   *sqlite3.SQLiteConn

	// Prepared on dc; used only inside conn.Raw.
	insert, head, byID, setMeta, dataVersion driver.Stmt
	// walInfo reads the WAL's size, checkpoint copies it (checkpoint.go).
	walInfo, checkpoint driver.Stmt

	args []driver.NamedValue
	dest []driver.Value

	// heads caches committed stream heads; valid while data_version (which
	// changes when another connection commits) stays the same.
	heads       map[string]streamHead
	lastVersion int64
	// pending holds the heads written by the open transaction.
	pending map[string]streamHead

	// The open batch: whether its transaction is open, its requests and
	// their answers in order, how many events they carry, and what it
	// wrote.
	inTx         bool
	reqs         []*request
	answers      []response
	events       int
	wroteAppends uint64
	wroteEvents  uint64
	// appliedMaxPages is the max_page_count last set on the connection.
	appliedMaxPages int64
	// floor is the position of the first event the open transaction
	// inserted (0 before any): the batch's hold on the read cap.
	floor int64
}

func newWriter(conn *sql.Conn, l *Log) (*writer, error) {
	w := &writer{
		l:           l,
		conn:        conn,
		dest:        make([]driver.Value, 3),
		heads:       make(map[string]streamHead),
		pending:     make(map[string]streamHead),
		lastVersion: -1,
	}
	err := w.raw(func() error {
		var err error
		prepare := func(dst *driver.Stmt, query string) {
			if err == nil {
				*dst, err = w.dc.PrepareContext(context.Background(), query)
			}
		}
		prepare(&w.insert, `INSERT INTO events (event_id, stream, revision, type, schema_version, shop_id,
			occurred_at, recorded_at, data, metadata, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		prepare(&w.head, "SELECT revision, position, hash FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1")
		prepare(&w.byID, "SELECT stream, revision, position FROM events WHERE event_id = ?")
		prepare(&w.setMeta, "INSERT INTO stream_metadata (stream, metadata, recorded_at) VALUES (?, ?, ?)")
		prepare(&w.dataVersion, "PRAGMA data_version")
		prepare(&w.walInfo, "PRAGMA wal_checkpoint(NOOP)")
		prepare(&w.checkpoint, "PRAGMA wal_checkpoint(PASSIVE)")
		if err != nil {
			w.closeStmts()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// raw runs f with w.dc set to the driver connection.
func (w *writer) raw(f func() error) error {
	return w.conn.Raw(func(dc any) error {
		sc, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		w.dc = sc
		defer func() { w.dc = nil }()
		return f()
	})
}

// execSQL runs statements without arguments (BEGIN, COMMIT, SAVEPOINT…).
func (w *writer) execSQL(query string) error {
	_, err := w.dc.ExecContext(context.Background(), query, nil)
	return err
}

func (w *writer) bind(args []any) []driver.NamedValue {
	w.args = w.args[:0]
	for i, a := range args {
		w.args = append(w.args, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	return w.args
}

// exec runs a prepared statement. Arguments must be driver values (int64,
// string, []byte, nil): nothing converts them on this path.
func (w *writer) exec(st driver.Stmt, args ...any) (driver.Result, error) {
	return st.(driver.StmtExecContext).ExecContext(context.Background(), w.bind(args))
}

// queryRow runs a prepared query and reads its first row into w.dest,
// reporting whether there was one.
func (w *writer) queryRow(st driver.Stmt, args ...any) (bool, error) {
	rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), w.bind(args))
	if err != nil {
		return false, err
	}
	defer rows.Close()
	dest := w.dest[:len(rows.Columns())]
	if err := rows.Next(dest); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (w *writer) closeStmts() {
	for _, s := range []driver.Stmt{w.insert, w.head, w.byID, w.setMeta, w.dataVersion, w.walInfo, w.checkpoint} {
		if s != nil {
			_ = s.Close()
		}
	}
}

func (w *writer) close() error {
	err := w.raw(func() error {
		w.closeStmts()
		return nil
	})
	return errors.Join(err, w.conn.Close())
}

// Append adds events to stream if its state matches expected; see
// eventlog.Log. It returns once the events are durable (the write-ahead log
// fsynced), batched with concurrent appends into one transaction. Once an
// fsync has failed, every Append fails with eventlog.ErrUnavailable.
func (l *Log) Append(ctx context.Context, stream string, expected eventlog.ExpectedRevision, events ...eventlog.EventData) (eventlog.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return eventlog.AppendResult{}, fmt.Errorf("append to %s: %w", stream, err)
	}
	if stream == "" {
		return eventlog.AppendResult{}, errors.New("append: empty stream id")
	}
	r := &request{ctx: ctx, stream: stream, expected: expected, events: make([]pendingEvent, len(events))}
	now := l.cfg.Now().UTC()
	for i := range events {
		e := &events[i]
		if e.ID == uuid.Nil {
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: event %d has no id", stream, i)
		}
		if e.Type == "" {
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: event %s has no type", stream, e.ID)
		}
		if !validMetadata(&e.Metadata) {
			// encoding/json would replace the bad bytes, and the event
			// read back would no longer match its hash.
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: metadata of %s is not valid UTF-8", stream, e.ID)
		}
		meta, err := json.Marshal(e.Metadata)
		if err != nil {
			return eventlog.AppendResult{}, fmt.Errorf("append to %s: encode metadata of %s: %w", stream, e.ID, err)
		}
		pe := pendingEvent{data: *e, metaJSON: string(meta)}
		pe.data.Data = bytes.Clone(e.Data)
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

func validMetadata(m *eventlog.Metadata) bool {
	ok := utf8.ValidString(m.CorrelationID) && utf8.ValidString(m.CausationID) &&
		utf8.ValidString(m.Actor) && utf8.ValidString(m.Source)
	for _, id := range m.KeyIDs {
		ok = ok && utf8.ValidString(id)
	}
	return ok
}

// submit queues r for the writer and waits for its answer or ctx.
func (l *Log) submit(ctx context.Context, r *request) (eventlog.AppendResult, error) {
	r.done = make(chan response, 1)
	if err := l.readLock(); err != nil {
		return eventlog.AppendResult{}, err
	}
	if err := l.failure(); err != nil {
		l.mu.RUnlock()
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

// earlyCommitEvents is the batch size from which the writer commits as
// soon as no request is queued, even while the syncer is still fsyncing the
// batch before: the COMMIT (writing the batch's pages to the WAL) then
// overlaps that fsync, and the syncer can start on this batch the moment it
// is done. Smaller batches wait for the syncer, so that a trickle of
// requests does not become a trickle of commits.
const earlyCommitEvents = 16

// runWriter is the writer goroutine. It runs one group-commit transaction
// after another, pipelined with the syncer: a transaction takes the queued
// requests and, while the syncer is fsyncing earlier batches, every request
// that arrives meanwhile, so that the SQL work of a batch overlaps the
// fsync of the one before. It commits and hands the batch to the syncer
// (which answers it once it is durable) as soon as the syncer is idle, or
// when nothing is queued and the batch holds earlyCommitEvents events, or
// at MaxBatch events. It exits when Close has closed reqs and every queued
// request is committed (or answered), closing syncs behind the last batch.
func (l *Log) runWriter() {
	defer close(l.writerDone)
	defer close(l.syncs)
	if err := l.w.raw(l.w.loop); err != nil {
		// The connection is unusable: answer everything until Close.
		for r := range l.reqs {
			r.done <- response{err: unavailable("append", err)}
		}
	}
}

// loop is runWriter's body, run with w.dc set. It returns once reqs is
// closed and drained.
func (w *writer) loop() error {
	reqs := w.l.reqs
	var next *request // taken from reqs, not yet in a batch
	for {
		if next == nil {
			r, ok := <-reqs
			if !ok {
				return nil
			}
			next = r
		}
		closed := false
	batch:
		for next != nil {
			if w.events > 0 && w.events+len(next.events) > w.l.cfg.MaxBatch {
				break // next opens the following batch
			}
			w.add(next)
			next = nil
			for next == nil && w.events < w.l.cfg.MaxBatch {
				if w.l.syncerIdle() {
					break batch // the syncer waits for work: commit now
				}
				select {
				case r, ok := <-reqs:
					if !ok {
						closed = true
						break batch
					}
					next = r
					continue
				default:
				}
				if w.events >= earlyCommitEvents {
					break batch
				}
				// Nothing queued and the syncer busy: wait for either.
				select {
				case r, ok := <-reqs:
					if !ok {
						closed = true
						break batch
					}
					next = r
				case <-w.l.synced:
				}
			}
		}
		w.commit()
		if closed {
			return nil
		}
	}
}

// syncerIdle reports whether every batch handed to the syncer is answered.
func (l *Log) syncerIdle() bool { return l.inSync.Load() == 0 }
