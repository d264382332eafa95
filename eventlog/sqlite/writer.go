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
	"runtime"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
)

// gatherWait bounds how long the writer waits for the appenders answered
// by the previous commit to send their next request. It is far below the
// cost of the fsync that a larger batch saves.
const gatherWait = 100 * time.Microsecond

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

	args []driver.NamedValue
	dest []driver.Value

	// heads caches committed stream heads; valid while data_version (which
	// changes when another connection commits) stays the same.
	heads       map[string]streamHead
	lastVersion int64
	// pending holds the heads written by the open transaction.
	pending map[string]streamHead
	answers []response
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
	for _, s := range []driver.Stmt{w.insert, w.head, w.byID, w.setMeta, w.dataVersion} {
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
// eventlog.Log. It returns once the events are durable (fsynced), batched
// with concurrent appends into one transaction.
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

// runWriter is the writer goroutine: it takes every queued request (up to
// MaxBatch events), commits them in one transaction and answers them. It
// exits when Close has closed reqs and every queued request is answered.
func (l *Log) runWriter() {
	defer close(l.writerDone)
	var (
		batch     []*request
		carry     *request
		lastBatch int
	)
	for {
		first := carry
		carry = nil
		if first == nil {
			var ok bool
			if first, ok = <-l.reqs; !ok {
				return
			}
		}
		batch = append(batch[:0], first)
		n := len(first.events)
		// Appenders answered by the previous commit are waking up to send
		// their next request: let them, so that one fsync serves them all.
		// Wait (yielding the processor, for at most gatherWait) until as
		// many requests are queued as the previous batch answered.
		if want := min(lastBatch, cap(l.reqs)) - 1; len(l.reqs) < want {
			deadline := time.Now().Add(gatherWait)
			for len(l.reqs) < want && time.Now().Before(deadline) {
				runtime.Gosched()
			}
		}
	drain:
		for n < l.cfg.MaxBatch {
			select {
			case r, ok := <-l.reqs:
				if !ok {
					break drain
				}
				if n+len(r.events) > l.cfg.MaxBatch {
					carry = r
					break drain
				}
				batch = append(batch, r)
				n += len(r.events)
			default:
				break drain
			}
		}
		lastBatch = len(batch)
		l.w.run(batch)
		clear(batch)
	}
}
