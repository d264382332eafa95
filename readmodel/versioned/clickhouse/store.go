package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/internal/batch"
)

// Config configures a Store.
type Config struct {
	// URL is the server, e.g. clickhouse://user:password@host:9000/db.
	// Required.
	URL string
	// MaxRows and MaxDelay cut each table's batches: an insert when
	// MaxRows rows are queued or MaxDelay after the first of them, so a
	// table gets at most about one insert per MaxDelay. Defaults 5000 and
	// 1 s.
	MaxRows  int
	MaxDelay time.Duration
	// OnError receives the failures of background sends (the rows stay
	// queued and are sent again with the same token). Default: ignored.
	OnError func(error)
	// Now is the clock of the batcher. Default time.Now.
	Now func() time.Time
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("clickhouse store: URL is required"))
	}
	if c.MaxRows < 0 || c.MaxDelay < 0 {
		errs = append(errs, errors.New("clickhouse store: MaxRows and MaxDelay must not be negative"))
	}
	return errors.Join(errs...)
}

// inserter sends one batch insert; the token, when set, is the insert's
// insert_deduplication_token. The store's is the server; tests use a fake.
type inserter interface {
	insert(ctx context.Context, query, token string, rows [][]any) error
}

// Store is the ClickHouse versioned.Store.
type Store struct {
	conn driver.Conn
	ins  inserter
	b    *batch.Batcher

	tables batch.Tables

	cancel context.CancelFunc // ends the background sender's send in flight
	done   chan struct{}
	once   sync.Once
}

var _ versioned.Store = (*Store)(nil)

// Open connects to cfg.URL, creates the checkpoint table when missing and
// starts the background sender, which runs until Close.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open clickhouse store: %w", err)
	}
	opts, err := ch.ParseDSN(cfg.URL)
	if err != nil {
		// The URL may hold a password: never quote it.
		return nil, errors.New("open clickhouse store: malformed URL")
	}
	conn, err := ch.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse store: %w", err)
	}
	if err := conn.Exec(ctx, createCheckpointsSQL); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("open clickhouse store: create checkpoints: %w", err)
	}
	s := newStore(cfg, conn, serverInserter{conn})
	return s, nil
}

func newStore(cfg Config, conn driver.Conn, ins inserter) *Store {
	s := &Store{conn: conn, ins: ins, done: make(chan struct{})}
	s.b = batch.New(batch.Config{MaxRows: cfg.MaxRows, MaxDelay: cfg.MaxDelay, Now: cfg.Now}, sender{s})
	interval := cfg.MaxDelay / 4
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.loop(ctx, interval, cfg.OnError)
	return s
}

// loop sends due batches until Close.
func (s *Store) loop(ctx context.Context, interval time.Duration, onErr func(error)) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.b.FlushDue(ctx); err != nil && onErr != nil && ctx.Err() == nil {
				onErr(err)
			}
		}
	}
}

// Close stops the background sender and closes the connection.
func (s *Store) Close() error {
	s.once.Do(s.cancel)
	<-s.done
	if s.conn == nil {
		return nil
	}
	return s.conn.Close()
}

// Migrate creates the missing tables; see versioned.Store.
func (s *Store) Migrate(ctx context.Context, tables []versioned.Table) error {
	for _, t := range tables {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	for _, t := range tables {
		if err := s.conn.Exec(ctx, createSQL(t)); err != nil {
			return fmt.Errorf("migrate %s: %w", t.Name, err)
		}
	}
	s.tables.Register(tables)
	return nil
}

// Write queues changes; see versioned.Store.
func (s *Store) Write(ctx context.Context, projector string, pos eventlog.Position, changes []versioned.Change) error {
	entries, err := s.tables.Entries(ctx, projector, pos, changes)
	if err != nil {
		return err
	}
	s.b.Add(projector, pos, entries)
	return nil
}

// Flush sends every queued row; see versioned.Store.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.b.Flush(ctx); err != nil {
		return fmt.Errorf("flush clickhouse store: %w", err)
	}
	return nil
}

// Checkpoint returns projector's saved checkpoint.
func (s *Store) Checkpoint(ctx context.Context, projector string) (eventlog.Position, error) {
	var p uint64
	if err := s.conn.QueryRow(ctx, checkpointSQL, projector).Scan(&p); err != nil {
		return 0, fmt.Errorf("checkpoint of %s: %w", projector, err)
	}
	return p, nil
}

// sender inserts batches for the batcher.
type sender struct{ s *Store }

// insertRows is the argument of one insert: values, _version, _deleted.
func insertRows(rows []versioned.Row) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		var deleted uint8
		if r.Deleted {
			deleted = 1
		}
		out[i] = append(append(make([]any, 0, len(r.Values)+2), r.Values...), r.Version, deleted)
	}
	return out
}

// Send inserts b with its deduplication token.
func (se sender) Send(ctx context.Context, b *batch.Batch) error {
	t, err := se.s.tables.Table(b.Table)
	if err != nil {
		return err
	}
	return se.s.ins.insert(ctx, insertSQL(t), b.Token, insertRows(b.Rows))
}

// SaveCheckpoints inserts the new checkpoints (max(position) reads them).
func (se sender) SaveCheckpoints(ctx context.Context, cps []batch.Checkpoint) error {
	rows := make([][]any, len(cps))
	for i, cp := range cps {
		rows[i] = []any{cp.Projector, cp.Position}
	}
	return se.s.ins.insert(ctx, insertCheckpointsSQL, "", rows)
}

// serverInserter inserts with PrepareBatch.
type serverInserter struct{ conn driver.Conn }

func (si serverInserter) insert(ctx context.Context, query, token string, rows [][]any) error {
	if token != "" {
		ctx = ch.Context(ctx, ch.WithSettings(ch.Settings{"insert_deduplication_token": token}))
	}
	b, err := si.conn.PrepareBatch(ctx, query)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	for _, r := range rows {
		if err := b.Append(r...); err != nil {
			_ = b.Abort()
			return fmt.Errorf("append to insert: %w", err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("send insert: %w", err)
	}
	return nil
}

// Query runs an analytical query (aggregates over the shipped tables, read
// with FINAL) with bound arguments. Callers build the SQL from constants;
// values only ever travel as arguments.
func (s *Store) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	rows, err := s.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("clickhouse query: %w", err)
	}
	return rows, nil
}
