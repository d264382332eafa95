package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Names of the writer's prepared statements.
const (
	insertStatement = "cgp_eventlog_insert"
	lockStatement   = "cgp_eventlog_lock"
)

// writerConn is the writer goroutine's connection, held from its first
// batch until Close (or until it fails: then dropped and taken again),
// with its prepared statements and, while batches are in flight, its
// pipeline. Only the writer goroutine uses it.
type writerConn struct {
	conn         *pgxpool.Conn
	insert, lock *pgconn.StatementDescription
	pl           *pgconn.Pipeline
	// cancel ends the pipeline's context, which closes the connection:
	// the watchdog of a flight that does not land calls it.
	cancel context.CancelFunc
}

// connect takes the writer's connection from its pool and prepares the
// statements, unless it holds one already.
func (w *writerConn) connect(ctx context.Context, l *Log) error {
	if w.conn != nil {
		return nil
	}
	conn, err := l.writer.Acquire(ctx)
	if err != nil {
		return err
	}
	w.conn = conn
	if w.insert, err = conn.Conn().Prepare(ctx, insertStatement, l.q.insert); err == nil {
		w.lock, err = conn.Conn().Prepare(ctx, lockStatement, "SELECT pg_advisory_xact_lock($1, $2)")
	}
	if err != nil {
		w.drop()
		return fmt.Errorf("prepare the writer's statements: %w", err)
	}
	return nil
}

// startPipeline puts the connection in pipeline mode, unless it is.
func (w *writerConn) startPipeline(l *Log) error {
	if w.pl != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	err := w.connect(ctx, l)
	cancel()
	if err != nil {
		return err
	}
	pctx, pcancel := context.WithCancel(context.Background())
	w.pl = w.conn.Conn().PgConn().StartPipeline(pctx)
	w.cancel = pcancel
	return nil
}

// stopPipeline leaves pipeline mode (nothing may be in flight).
func (w *writerConn) stopPipeline() error {
	if w.pl == nil {
		return nil
	}
	err := w.pl.Close()
	w.cancel()
	w.pl, w.cancel = nil, nil
	return err
}

// drop closes the connection (its pool replaces it) and forgets it.
func (w *writerConn) drop() {
	if w.pl != nil {
		_ = w.pl.Close()
		w.cancel()
		w.pl, w.cancel = nil, nil
	}
	if w.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = w.conn.Hijack().Close(ctx)
		cancel()
		w.conn = nil
	}
}

// release hands the connection back to its pool (Close).
func (w *writerConn) release() {
	if err := w.stopPipeline(); err != nil {
		w.drop()
	}
	if w.conn != nil {
		w.conn.Release()
		w.conn = nil
	}
}

// readFlight reads the results of one flight sent by send: the lock,
// the insert when rows > 0, then the Sync, whose ReadyForQuery reports
// that the implicit transaction committed. After a server error the
// pipeline skips to that Sync (the transaction rolled back), and the
// error is returned once it is read. Any other failure leaves the
// connection unusable: it is dropped.
func (w *writerConn) readFlight(rows int) (stale bool, err error) {
	if w.pl == nil {
		return false, errors.New("the writer's connection was dropped")
	}
	var first error // the first server error
	for statement := 0; ; {
		res, err := w.pl.GetResults()
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				w.drop()
				return false, err
			}
			if first == nil {
				first = err
			}
			continue
		}
		switch res := res.(type) {
		case *pgconn.PipelineSync:
			return stale && first == nil, first
		case *pgconn.ResultReader:
			if statement == 1 {
				inserted, err := readInserted(res)
				switch {
				case err != nil:
					if first == nil {
						first = err
					}
				case inserted == 0:
					stale = true
				case inserted != int64(rows):
					if first == nil {
						first = fmt.Errorf("insert events: %d rows inserted, want %d", inserted, rows)
					}
				}
			} else if _, err := res.Close(); err != nil && first == nil {
				first = err
			}
			statement++
		default:
			w.drop()
			return false, fmt.Errorf("pipeline: unexpected result %T", res)
		}
	}
}

// readInserted reads the insert's row (inserted, notified) in text.
func readInserted(rr *pgconn.ResultReader) (int64, error) {
	var n int64
	var err error
	got := false
	for rr.NextRow() {
		v := rr.Values()
		if len(v) < 1 {
			continue
		}
		n, err = strconv.ParseInt(string(v[0]), 10, 64)
		got = err == nil
	}
	if _, cerr := rr.Close(); cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return 0, err
	}
	if !got {
		return 0, errors.New("insert events: no row")
	}
	return n, nil
}
