package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/internal/follow"
	"github.com/cgp-platform/cgp/eventlog/internal/logutil"
)

// batchTimeout bounds one group-commit transaction: a server that stops
// answering fails the batch (ErrUnavailable) instead of stalling the
// writer, and so Close, for good.
const batchTimeout = 30 * time.Second

// Log is the PostgreSQL event log. It implements eventlog.Log; all methods
// are safe for concurrent use, and any number of processes may share one
// schema.
type Log struct {
	cfg Config
	q   queries
	// lockKey is the second key of the advisory locks (schemaKey);
	// channel is the LISTEN/NOTIFY channel of the schema.
	lockKey int32
	channel string

	pool   *pgxpool.Pool // reads, stream metadata
	writer *pgxpool.Pool // the writer goroutine's own, one connection
	// listenConfig connects the listener (listen.go).
	listenConfig *pgx.ConnConfig

	// mu guards closed: Append and the read methods hold it shared while
	// they enqueue or query, Close takes it exclusively to flip closed.
	mu     sync.RWMutex
	closed bool

	reqs         chan *request // to the writer; closed by Close
	done         chan struct{} // closed by Close: ends subscriptions
	writerDone   chan struct{}
	listenerDone chan struct{}
	stopListener context.CancelFunc
	subs         sync.WaitGroup
	// changed wakes the subscriptions: after every commit of this
	// process's writer, and on every notification of the schema's
	// channel (commits of any process).
	changed   *follow.Broadcast
	closeOnce sync.Once
	closeErr  error
	stats     counters
	// ws and wc are the writer goroutine's own state (batch.go) and
	// connection (wconn.go).
	ws writerState
	wc writerConn
	// takeOffHook, set only by tests, runs on the writer after each batch
	// sent from the cache.
	takeOffHook func()
	// writeFailed is set when a batch failed for a reason of the store
	// (not of a request: a wrong expected revision is no failure), and
	// cleared when one commits.
	writeFailed atomic.Bool
}

var (
	_ eventlog.Log                = (*Log)(nil)
	_ eventlog.WriteHealthChecker = (*Log)(nil)
)

// Stats counts the writer's work since Open.
type Stats struct {
	// Commits is the number of group-commit transactions committed.
	Commits uint64
	// Appends is the number of Append calls that wrote events.
	Appends uint64
	// Events is the number of events written.
	Events uint64
	// Rereads is the number of batches decided on fresh reads under the
	// append lock (two round trips) rather than from the writer's cached
	// stream heads (one): the first batch, batches with a refusal, a
	// stream the writer has not seen, or after another process appended.
	Rereads uint64
}

type counters struct {
	commits, appends, events, rereads atomic.Uint64
}

// Open connects, creates the schema and its tables when missing (or brings
// them up to date), and starts the writer and the listener. Close the log
// when done.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, errors.New("open event log: cannot parse URL")
	}
	l := &Log{
		cfg:          cfg,
		q:            newQueries(cfg.Schema),
		lockKey:      schemaKey(cfg.Schema),
		channel:      channelName(cfg.Schema),
		listenConfig: pcfg.ConnConfig.Copy(),
		reqs:         make(chan *request, cfg.MaxBatch),
		done:         make(chan struct{}),
		writerDone:   make(chan struct{}),
		listenerDone: make(chan struct{}),
		changed:      follow.NewBroadcast(),
	}
	l.listenConfig.RuntimeParams["application_name"] = "cgp-eventlog-listener"
	// The writer has a pool of its own, one connection, so that its
	// transactions never queue behind readers.
	wcfg := pcfg.Copy()
	wcfg.MaxConns, wcfg.MinConns = 1, 0
	wcfg.ConnConfig.RuntimeParams["application_name"] = "cgp-eventlog-writer"
	// The writer's statements after the append lock must see what was
	// committed while it waited for it: a snapshot per statement.
	wcfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	if l.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, unavailable("open event log", err)
	}
	if l.writer, err = pgxpool.NewWithConfig(ctx, wcfg); err != nil {
		l.pool.Close()
		return nil, unavailable("open event log", err)
	}
	if err := migrate(ctx, l.pool, cfg.Schema); err != nil {
		l.pool.Close()
		l.writer.Close()
		return nil, storeErr(ctx, "open event log (schema "+cfg.Schema+")", err)
	}
	listenCtx, stop := context.WithCancel(context.Background())
	l.stopListener = stop
	go l.runWriter()
	go l.runListener(listenCtx)
	return l, nil
}

// channelName is the LISTEN/NOTIFY channel of schema: its name when that
// fits in an identifier, a digest of it otherwise.
func channelName(schema string) string {
	const prefix = "cgp_eventlog_"
	if len(prefix)+len(schema) <= 63 {
		return prefix + schema
	}
	sum := sha256.Sum256([]byte(schema))
	return prefix + hex.EncodeToString(sum[:16])
}

// Close answers every append queued before it (committing them), ends the
// subscriptions (their Err is eventlog.ErrClosed), waits for every
// goroutine of the log and closes the connections. Later calls return
// eventlog.ErrClosed; closing again returns the first Close's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.done)
		l.mu.Unlock()
		// Every sender holds mu shared, so none is mid-send now.
		close(l.reqs)
		<-l.writerDone // every queued request is answered
		l.stopListener()
		<-l.listenerDone
		l.subs.Wait()
		l.writer.Close()
		l.pool.Close()
	})
	return l.closeErr
}

// Stats reports the writer's counters; Events/Commits is the mean group
// commit size.
func (l *Log) Stats() Stats {
	return Stats{
		Commits: l.stats.commits.Load(),
		Appends: l.stats.appends.Load(),
		Events:  l.stats.events.Load(),
		Rereads: l.stats.rereads.Load(),
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
// revision order. An unknown stream yields no events.
func (l *Log) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventlog.Event, error) {
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("read stream %s: %w", stream, err)
	}
	defer l.mu.RUnlock()
	if limit <= 0 {
		return nil, nil
	}
	evs, err := l.queryEvents(ctx, l.q.readStream, limit, stream, logutil.ClampInt64(from), limit)
	if err != nil {
		return nil, storeErr(ctx, "read stream "+stream, err)
	}
	return evs, nil
}

// ReadAll returns up to limit events with Position > after, in position
// order. Positions are assigned in commit order (see doc.go), so a page
// never skips an event that a later read would show below its end.
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
	evs, err := l.queryEvents(ctx, l.q.readAll, limit, logutil.ClampInt64(after), limit)
	if err != nil {
		return nil, storeErr(ctx, "read all", err)
	}
	return evs, nil
}

// skimAll is readAll returning skeletons of the events whose type is not
// in types.
func (l *Log) skimAll(ctx context.Context, after eventlog.Position, limit int, types []string) ([]eventlog.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	evs, err := l.queryEvents(ctx, l.q.skimAll, limit, logutil.ClampInt64(after), limit, types)
	if err != nil {
		return nil, storeErr(ctx, "read all", err)
	}
	return evs, nil
}

// HeadPosition returns the position of the last event, 0 for an empty log.
func (l *Log) HeadPosition(ctx context.Context) (eventlog.Position, error) {
	if err := l.readLock(); err != nil {
		return 0, fmt.Errorf("head position: %w", err)
	}
	defer l.mu.RUnlock()
	var pos int64
	if err := l.pool.QueryRow(ctx, l.q.head).Scan(&pos); err != nil {
		return 0, storeErr(ctx, "head position", err)
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
	err := l.pool.QueryRow(ctx, l.q.getMeta, stream).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
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

// SetStreamMetadata replaces the stream's metadata. The old value is kept
// (the table is append-only); the newest row wins. It is durable on return.
func (l *Log) SetStreamMetadata(ctx context.Context, stream string, meta map[string]string) error {
	if stream == "" {
		return errors.New("set stream metadata: empty stream id")
	}
	if !validText(stream) {
		return fmt.Errorf("set stream metadata of %q: stream id is not valid UTF-8 without NUL", stream)
	}
	if meta == nil {
		meta = map[string]string{}
	}
	for k, v := range meta {
		if !validText(k) || !validText(v) {
			return fmt.Errorf("set stream metadata of %s: entries must be valid UTF-8 without NUL", stream)
		}
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("set stream metadata of %s: %w", stream, err)
	}
	if err := l.readLock(); err != nil {
		return fmt.Errorf("set stream metadata of %s: %w", stream, err)
	}
	defer l.mu.RUnlock()
	if _, err := l.pool.Exec(ctx, l.q.setMeta, stream, string(raw), l.cfg.Now().UTC().UnixNano()); err != nil {
		return storeErr(ctx, "set stream metadata of "+stream, err)
	}
	return nil
}

// ProbeStream is the stream whose metadata WriteHealth writes to find out
// whether the log takes writes again.
const ProbeStream = "$cgp-write-probe"

// WriteHealth reports whether the log takes writes (readiness): nil while
// the last group commit committed. After one failed for a reason of the
// store (the server down or read-only, a full disk, a timeout) it probes
// with a real write (ProbeStream's metadata) and reports the failure until
// one succeeds, so a load balancer moves traffic away meanwhile.
func (l *Log) WriteHealth(ctx context.Context) error {
	if !l.writeFailed.Load() {
		return nil
	}
	err := l.SetStreamMetadata(ctx, ProbeStream, map[string]string{"probed_at": l.cfg.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return fmt.Errorf("the event log takes no writes: %w", err)
	}
	return nil
}

// queries holds the SQL text with the schema's quoted name filled in.
type queries struct {
	readAll, readStream, skimAll, readPositions, head, getMeta, setMeta string
	// The writer's (writer.go).
	maxPosition, heads, byIDs, insert string
}

// eventColumns lists the columns scanEvents reads, in its order.
const eventColumns = `position, event_id, stream, revision, type, schema_version, shop_id,
	occurred_at, recorded_at, data, metadata, prev_hash, hash`

func newQueries(schema string) queries {
	r := strings.NewReplacer("$schema", pgx.Identifier{schema}.Sanitize(), "$columns", eventColumns)
	return queries{
		readAll:    r.Replace(`SELECT $columns FROM $schema.events WHERE position > $1 ORDER BY position LIMIT $2`),
		readStream: r.Replace(`SELECT $columns FROM $schema.events WHERE stream = $1 AND revision >= $2 ORDER BY revision LIMIT $3`),
		// The payload of an event whose type is not in $3 stays on the
		// server: a skeleton row, known by its NULL data.
		skimAll: r.Replace(`SELECT position, event_id, stream, revision, type, schema_version, shop_id, occurred_at, recorded_at,
			CASE WHEN w THEN data END, CASE WHEN w THEN metadata END, CASE WHEN w THEN prev_hash END, CASE WHEN w THEN hash END
			FROM (SELECT *, type = ANY ($3::text[]) AS w FROM $schema.events
				WHERE position > $1 ORDER BY position LIMIT $2) AS page ORDER BY position`),
		readPositions: r.Replace(`SELECT $columns FROM $schema.events WHERE position = ANY ($1::bigint[]) ORDER BY position`),
		head:          r.Replace(`SELECT COALESCE(MAX(position), 0) FROM $schema.events`),
		getMeta:       r.Replace(`SELECT metadata FROM $schema.stream_metadata WHERE stream = $1 ORDER BY seq DESC LIMIT 1`),
		setMeta:       r.Replace(`INSERT INTO $schema.stream_metadata (stream, metadata, recorded_at) VALUES ($1, $2::jsonb, $3)`),
		maxPosition:   r.Replace(`SELECT COALESCE(MAX(position), 0) FROM $schema.events`),
		heads: r.Replace(`SELECT s.stream, e.revision, e.position, e.hash
			FROM unnest($1::text[]) AS s (stream)
			CROSS JOIN LATERAL (SELECT revision, position, hash FROM $schema.events
				WHERE stream = s.stream ORDER BY revision DESC LIMIT 1) AS e`),
		byIDs: r.Replace(`SELECT event_id, stream, revision, position FROM $schema.events WHERE event_id = ANY ($1::uuid[])`),
		// The insert is conditional on the last position being $14 and,
		// when $16 is not NULL, holding event $16 (the checks of the
		// batches decided from the writer's cache: see takeOff), and
		// notifies the new head only when it inserted.
		insert: r.Replace(`WITH ins AS (
				INSERT INTO $schema.events (position, event_id, stream, revision, type, schema_version, shop_id,
					occurred_at, recorded_at, data, metadata, prev_hash, hash)
				SELECT p, i, s, r, t, v, sh, o, $9::bigint, d, m::jsonb, ph, h
				FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::text[], $6::integer[], $7::text[],
					$8::bigint[], $10::bytea[], $11::text[], $12::bytea[], $13::bytea[])
					AS u (p, i, s, r, t, v, sh, o, d, m, ph, h)
				WHERE (SELECT COALESCE(MAX(position), 0) FROM $schema.events) = $14::bigint
					AND ($16::uuid IS NULL OR EXISTS (SELECT FROM $schema.events WHERE position = $14 AND event_id = $16))
				RETURNING position),
			c AS (SELECT count(*) AS n, max(position) AS last FROM ins),
			notified AS (SELECT pg_notify($15::text, last::text) FROM c WHERE n > 0)
			SELECT n, (SELECT count(*) FROM notified) FROM c`),
	}
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

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// broadcast wakes every waiter at once: wait returns a channel that the
// next notify closes.
