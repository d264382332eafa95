package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/internal/follow"
	"github.com/cgp-platform/cgp/eventlog/internal/logutil"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
)

const (
	// busyTimeoutMS is how long a connection waits for a lock another
	// process holds before the operation fails with ErrUnavailable.
	busyTimeoutMS = 5000
	// readConns is the size of the read pool (one more connection is kept
	// for the cross-process change check).
	readConns = 4
	// writerCacheKiB is the writer's page cache: it keeps the index pages
	// that appends touch. Readers stream mostly cold pages, which the
	// operating system caches anyway.
	writerCacheKiB = 16 * 1024
	readerCacheKiB = 4 * 1024
)

// Log is the SQLite event log. It implements eventlog.Log; all methods are
// safe for concurrent use.
type Log struct {
	cfg Config

	writeDB *sql.DB
	readDB  *sql.DB
	w       *writer

	// The checkpointer's own connection (see checkpoint.go).
	ckptDB     *sql.DB
	ckptConn   *sql.Conn
	ckptWake   chan struct{} // the writer wakes the checkpointer
	ckptDone   chan struct{}
	tailWanted atomic.Bool // the checkpointer asks the writer to copy the WAL's tail
	ckptActive atomic.Bool // the writer has woken the checkpointer, which is not done

	headStmt    *sql.Stmt
	metaStmt    *sql.Stmt
	pollConn    *sql.Conn
	pollVersion int64 // data_version seen by pollConn at Open

	// maxPages caps the database's size in pages (PRAGMA max_page_count
	// on the writer's connection; 0: SQLite's own maximum), applied by
	// the writer before its next transaction. writeFailed is set when a
	// batch failed for a reason of the store (not of a request: a wrong
	// expected revision is no failure), and cleared when one commits.
	maxPages    atomic.Int64
	writeFailed atomic.Bool

	// mu guards closed: Append and the read methods hold it shared while
	// they enqueue or query, Close takes it exclusively to flip closed.
	mu     sync.RWMutex
	closed bool

	reqs       chan *request // to the writer; closed by Close
	syncs      chan syncJob  // writer to syncer; closed by the writer on exit
	done       chan struct{} // closed by Close: stops the poller and subscriptions
	writerDone chan struct{}
	syncerDone chan struct{}
	pollerDone chan struct{}
	subs       sync.WaitGroup
	// changed wakes the subscriptions: after every fsync of this
	// process's commits, and when the poller sees another process commit.
	changed   *follow.Broadcast
	closeOnce sync.Once
	closeErr  error
	stats     counters

	// inSync counts the batches handed to the syncer and not yet
	// answered; synced is signalled (without blocking) each time the
	// syncer has answered some, so the writer can wait for it.
	inSync atomic.Int64
	synced chan struct{}

	// wal is fsynced by the syncer; vis caps reads below the batches
	// committed but not yet fsynced; failed is set for good when an
	// fsync failed (see failClosed).
	wal    *walFile
	vis    *visibility
	failed atomic.Pointer[error]
}

var _ eventlog.Log = (*Log)(nil)

// Stats counts the writer's work since Open.
type Stats struct {
	// Commits is the number of group-commit transactions committed.
	Commits uint64
	// Appends is the number of Append calls that wrote events.
	Appends uint64
	// Events is the number of events written.
	Events uint64
	// Syncs is the number of fsyncs of the write-ahead log that made
	// committed batches durable; Commits/Syncs is how many batches one
	// fsync served.
	Syncs uint64
}

type counters struct {
	commits, appends, events, syncs atomic.Uint64
}

// Open opens (creating it if needed) the log in cfg.Path, brings its schema
// up to date and starts the writer. Close the log when done.
func Open(cfg Config) (*Log, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l := &Log{
		cfg:        cfg,
		reqs:       make(chan *request, cfg.MaxBatch),
		syncs:      make(chan syncJob, syncQueue),
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
		syncerDone: make(chan struct{}),
		synced:     make(chan struct{}, 1),
		ckptWake:   make(chan struct{}, 1),
		ckptDone:   make(chan struct{}),
		pollerDone: make(chan struct{}),
		changed:    follow.NewBroadcast(),
		vis:        newVisibility(),
	}
	if err := l.open(); err != nil {
		_ = l.closeDBs()
		return nil, fmt.Errorf("open event log %s: %w", cfg.Path, err)
	}
	go l.runWriter()
	go l.runSyncer()
	go l.runCheckpointer()
	go l.runPoller()
	return l, nil
}

func (l *Log) open() error {
	ctx := context.Background()
	// The file (and so the WAL and shared-memory files SQLite adds with
	// its mode) is the owner's only.
	if err := sqlitedb.PrivateFile(l.cfg.Path); err != nil {
		return unavailable("create database file", err)
	}
	var err error
	// The writer's connection: WAL, and synchronous=NORMAL: a commit does
	// not fsync the WAL, the syncer does, while the writer commits the
	// next batch (see doc.go). Checkpoints still fsync the WAL before
	// copying it and the database after.
	l.writeDB, err = sql.Open("sqlite3", dsn(l.cfg.Path,
		"_journal_mode=WAL", "_synchronous=NORMAL", fmt.Sprintf("_busy_timeout=%d", busyTimeoutMS),
		"_mutex=no", fmt.Sprintf("_cache_size=-%d", writerCacheKiB)))
	if err != nil {
		return unavailable("open writer", err)
	}
	l.writeDB.SetMaxOpenConns(1)
	l.writeDB.SetMaxIdleConns(1)
	l.writeDB.SetConnMaxLifetime(0)
	l.writeDB.SetConnMaxIdleTime(0)
	conn, err := l.writeDB.Conn(ctx)
	if err != nil {
		return unavailable("connect writer", err)
	}
	if err := migrate(ctx, conn, l.cfg.Now().UTC()); err != nil {
		_ = conn.Close()
		return unavailable("migrate", err)
	}
	// The checkpointer does the checkpoints (checkpoint.go).
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		_ = conn.Close()
		return unavailable("turn auto-checkpoint off", err)
	}
	// SQLite resolves the path (symbolic links included) and keeps the
	// WAL next to the file it resolved.
	var dbFile string
	if err := conn.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&dbFile); err != nil {
		_ = conn.Close()
		return unavailable("locate database file", err)
	}
	l.wal = newWALFile(dbFile)
	// Make the schema (and the files' directory entries) durable before
	// the first append; the syncer takes over from here.
	if err := l.wal.sync(); err != nil {
		_ = conn.Close()
		return unavailable("sync write-ahead log", err)
	}
	l.w, err = newWriter(conn, l)
	if err != nil {
		_ = conn.Close()
		return unavailable("prepare writer", err)
	}

	l.readDB, err = sql.Open("sqlite3", dsn(l.cfg.Path,
		fmt.Sprintf("_busy_timeout=%d", busyTimeoutMS), "_query_only=1", "_mutex=no",
		fmt.Sprintf("_cache_size=-%d", readerCacheKiB), "_stmt_cache_size=8"))
	if err != nil {
		return unavailable("open readers", err)
	}
	l.readDB.SetMaxOpenConns(readConns + 1)
	l.readDB.SetMaxIdleConns(readConns + 1)
	l.readDB.SetConnMaxIdleTime(0)
	l.readDB.SetConnMaxLifetime(0)
	prepare := func(dst **sql.Stmt, query string) {
		if err != nil {
			return
		}
		*dst, err = l.readDB.PrepareContext(ctx, query)
	}
	prepare(&l.headStmt, "SELECT COALESCE((SELECT position FROM events WHERE position <= ? ORDER BY position DESC LIMIT 1), 0)")
	prepare(&l.metaStmt, "SELECT metadata FROM stream_metadata WHERE stream = ? ORDER BY seq DESC LIMIT 1")
	if err != nil {
		return unavailable("prepare reads", err)
	}
	l.ckptDB, err = sql.Open("sqlite3", dsn(l.cfg.Path,
		"_synchronous=NORMAL", fmt.Sprintf("_busy_timeout=%d", busyTimeoutMS), "_mutex=no"))
	if err != nil {
		return unavailable("open checkpointer", err)
	}
	l.ckptDB.SetMaxOpenConns(1)
	l.ckptDB.SetConnMaxIdleTime(0)
	l.ckptDB.SetConnMaxLifetime(0)
	if l.ckptConn, err = l.ckptDB.Conn(ctx); err != nil {
		return unavailable("connect checkpointer", err)
	}
	l.pollConn, err = l.readDB.Conn(ctx)
	if err != nil {
		return unavailable("connect poller", err)
	}
	// Read before any subscription exists, so no later commit goes unseen.
	if err := l.pollConn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&l.pollVersion); err != nil {
		return unavailable("read data version", err)
	}
	return nil
}

// dsn builds a go-sqlite3 data source name for path with params.
func dsn(path string, params ...string) string {
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + escaped + "?" + strings.Join(params, "&")
}

// Close answers every append queued before it (committing and fsyncing
// them), ends the subscriptions (their Err is eventlog.ErrClosed), waits for
// every goroutine of the log and closes the database. Later calls return
// eventlog.ErrClosed; closing again returns the first Close's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.done)
		l.mu.Unlock()
		// Every sender holds mu shared, so none is mid-send now.
		close(l.reqs)
		<-l.writerDone // it closes syncs once every request is committed
		<-l.syncerDone // every request is answered
		<-l.ckptDone
		<-l.pollerDone
		l.subs.Wait()
		l.closeErr = l.closeDBs()
	})
	return l.closeErr
}

func (l *Log) closeDBs() error {
	var errs []error
	for _, s := range []*sql.Stmt{l.headStmt, l.metaStmt} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	if l.pollConn != nil {
		errs = append(errs, l.pollConn.Close())
	}
	if l.readDB != nil {
		errs = append(errs, l.readDB.Close())
	}
	if l.ckptConn != nil {
		errs = append(errs, l.ckptConn.Close())
	}
	if l.ckptDB != nil {
		errs = append(errs, l.ckptDB.Close())
	}
	if l.w != nil {
		errs = append(errs, l.w.close())
	}
	if l.writeDB != nil {
		errs = append(errs, l.writeDB.Close())
	}
	if l.wal != nil {
		errs = append(errs, l.wal.close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close event log: %w", err)
	}
	return nil
}

// Stats reports the writer's counters; Events/Commits is the mean group
// commit size.
func (l *Log) Stats() Stats {
	return Stats{
		Commits: l.stats.commits.Load(),
		Appends: l.stats.appends.Load(),
		Events:  l.stats.events.Load(),
		Syncs:   l.stats.syncs.Load(),
	}
}

// readLock takes mu shared for a read method; it fails once the log is
// closed.
func (l *Log) readLock() error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return eventlog.ErrClosed
	}
	return nil
}

// ReadStream returns up to limit events of stream from revision from, in
// revision order. An unknown stream yields no events. Like ReadAll, it
// never returns an event this process appended but has not yet fsynced.
func (l *Log) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventlog.Event, error) {
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("read stream %s: %w", stream, err)
	}
	defer l.mu.RUnlock()
	if limit <= 0 {
		return nil, nil
	}
	evs, err := l.queryEvents(ctx, readStreamQuery, limit, stream, logutil.ClampInt64(from), l.vis.max(), int64(limit))
	if err != nil {
		return nil, storeErr(ctx, "read stream "+stream, err)
	}
	return l.durableOnly(evs), nil
}

// ReadAll returns up to limit events with Position > after, in position
// order. It never returns an event this process appended but has not yet
// fsynced (see doc.go): the page then ends before it.
func (l *Log) ReadAll(ctx context.Context, after eventlog.Position, limit int) ([]eventlog.Event, error) {
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("read all: %w", err)
	}
	defer l.mu.RUnlock()
	return l.readAll(ctx, after, limit)
}

func (l *Log) readAll(ctx context.Context, after eventlog.Position, limit int) ([]eventlog.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	evs, err := l.queryEvents(ctx, readAllQuery, limit, logutil.ClampInt64(after), l.vis.max(), int64(limit))
	if err != nil {
		return nil, storeErr(ctx, "read all", err)
	}
	return l.durableOnly(evs), nil
}

// skimAll is readAll returning skeletons of the events whose type is not
// in typesJSON (a JSON array of strings).
func (l *Log) skimAll(ctx context.Context, after eventlog.Position, limit int, typesJSON string) ([]eventlog.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	evs, err := l.queryEvents(ctx, skimAllQuery, limit, logutil.ClampInt64(after), l.vis.max(), int64(limit), typesJSON)
	if err != nil {
		return nil, storeErr(ctx, "read all", err)
	}
	return l.durableOnly(evs), nil
}

// durableOnly cuts evs (in position order) before the first event above
// the read cap as it stands after the query: the query ran with the cap
// read before it, and a batch may have been committed in between (its cap
// is set before its COMMIT, so the second reading covers it).
func (l *Log) durableOnly(evs []eventlog.Event) []eventlog.Event {
	limit := uint64(l.vis.max())
	for i := range evs {
		if evs[i].Position > limit {
			return evs[:i]
		}
	}
	return evs
}

// HeadPosition returns the position of the last event, 0 for an empty log.
// Events this process appended but has not yet fsynced do not count.
func (l *Log) HeadPosition(ctx context.Context) (eventlog.Position, error) {
	if err := l.readLock(); err != nil {
		return 0, fmt.Errorf("head position: %w", err)
	}
	defer l.mu.RUnlock()
	limit := l.vis.max()
	for {
		var pos int64
		if err := l.headStmt.QueryRowContext(ctx, limit).Scan(&pos); err != nil {
			return 0, storeErr(ctx, "head position", err)
		}
		// As in durableOnly: a batch committed since limit was read may
		// have lowered the cap. Every batch committed later lies above
		// every position seen now, so the second query is the last.
		now := l.vis.max()
		if pos <= now {
			return uint64(pos), nil
		}
		limit = now
	}
}

var _ eventlog.CommittedHeader = (*Log)(nil)

// CommittedHead returns the newest committed position, this process's
// batches not yet durable included (HeadPosition leaves those out until
// their fsync: readers see them within it).
func (l *Log) CommittedHead(ctx context.Context) (eventlog.Position, error) {
	if err := l.readLock(); err != nil {
		return 0, fmt.Errorf("committed head: %w", err)
	}
	defer l.mu.RUnlock()
	var pos int64
	if err := l.headStmt.QueryRowContext(ctx, int64(math.MaxInt64)).Scan(&pos); err != nil {
		return 0, storeErr(ctx, "committed head", err)
	}
	return uint64(pos), nil
}

// StreamMetadata returns the stream's latest metadata; nil when it has none.
func (l *Log) StreamMetadata(ctx context.Context, stream string) (map[string]string, error) {
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("stream metadata of %s: %w", stream, err)
	}
	defer l.mu.RUnlock()
	var raw []byte
	err := l.metaStmt.QueryRowContext(ctx, stream).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(ctx, "stream metadata of "+stream, err)
	}
	var meta map[string]string
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("stream metadata of %s: decode: %w", stream, err)
	}
	if len(meta) == 0 {
		return nil, nil
	}
	return meta, nil
}

// ProbeStream is the stream whose metadata WriteHealth writes to find out
// whether the log takes writes again.
const ProbeStream = "$cgp-write-probe"

// probePad makes a probe write need new pages (two, at the default page
// size), as an append of a few events would: a write that fits in a page
// already allocated would prove nothing about a full disk.
var probePad = strings.Repeat("p", 8<<10)

// WriteHealth reports whether the log takes writes (readiness): nil while
// the last write committed. After a write failed for a reason of the
// store (a full disk or SQLITE_FULL, an I/O error, a lock held too long)
// it probes with a real, durable write (ProbeStream's metadata, a few
// pages) and reports the failure until one succeeds, so a load balancer
// moves traffic away while the disk is full and back once it is not.
// Once an fsync has failed it reports that for good (see doc.go).
func (l *Log) WriteHealth(ctx context.Context) error {
	if err := l.failure(); err != nil {
		return err
	}
	if !l.writeFailed.Load() {
		return nil
	}
	err := l.SetStreamMetadata(ctx, ProbeStream, map[string]string{"probed_at": l.cfg.Now().UTC().Format(time.RFC3339Nano), "pad": probePad})
	if err != nil {
		return fmt.Errorf("the event log takes no writes: %w", err)
	}
	return nil
}

// SetMaxPages caps the size of the database file at n pages (PRAGMA
// max_page_count; n <= 0 lifts the cap), from the writer's next
// transaction on. A write that would grow the file past it fails with
// ErrUnavailable, as it would on a full disk. The cap cannot go below
// the file's current size (SQLite keeps the larger).
func (l *Log) SetMaxPages(n int64) {
	if n <= 0 {
		n = noPageCap
	}
	l.maxPages.Store(n)
}

// noPageCap is SQLite's largest max_page_count (a larger value is
// clamped to the build's limit).
const noPageCap = 4294967294

// SetStreamMetadata replaces the stream's metadata. The old value is kept
// (the table is append-only); the newest row wins. It is durable on return.
func (l *Log) SetStreamMetadata(ctx context.Context, stream string, meta map[string]string) error {
	if stream == "" {
		return errors.New("set stream metadata: empty stream id")
	}
	if meta == nil {
		meta = map[string]string{}
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("set stream metadata of %s: %w", stream, err)
	}
	_, err = l.submit(ctx, &request{ctx: ctx, stream: stream, meta: raw})
	if err != nil {
		return fmt.Errorf("set stream metadata of %s: %w", stream, err)
	}
	return nil
}

// unavailable marks err as a store failure a caller may retry.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, eventlog.ErrUnavailable, err)
}

// storeErr classifies an error of a database call made with ctx: the
// context's own end is returned as such, everything else from the store is
// ErrUnavailable.
func storeErr(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return unavailable(op, err)
}

// isConstraint reports whether err is a SQLite constraint violation (a
// UNIQUE index refusing a row), which the statement rolled back alone.
func isConstraint(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint
}

// isUniqueViolation reports whether err is a UNIQUE (or primary key)
// constraint violation.
func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) &&
		(se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// broadcast wakes every waiter at once: wait returns a channel that the
// next notify closes.
