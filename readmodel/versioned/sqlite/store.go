package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/internal/batch"
)

// Config configures a Store.
type Config struct {
	// Path of the SQLite file; created when missing. Required.
	Path string
	// MaxRows and MaxDelay cut batches (see Store.Write): a table's rows
	// are written when MaxRows are queued or MaxDelay after the first.
	// Defaults 5000 and 1 s.
	MaxRows  int
	MaxDelay time.Duration
	// OnError receives the failures of background sends (the rows stay
	// queued and are sent again). Default: ignored.
	OnError func(error)
	// Now is the clock of the batcher. Default time.Now.
	Now func() time.Time
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("versioned store: Path is required"))
	}
	if c.MaxRows < 0 || c.MaxDelay < 0 {
		errs = append(errs, errors.New("versioned store: MaxRows and MaxDelay must not be negative"))
	}
	return errors.Join(errs...)
}

// Store is the SQLite versioned.Store.
type Store struct {
	w, r *sql.DB
	b    *batch.Batcher

	tables batch.Tables

	cancel context.CancelFunc // ends the background sender's send in flight
	done   chan struct{}
	once   sync.Once
}

var _ versioned.Store = (*Store)(nil)

const schema = `CREATE TABLE IF NOT EXISTS _checkpoints (
	projector TEXT PRIMARY KEY,
	position  INTEGER NOT NULL
)`

// Open opens (creating when missing) the store at cfg.Path and starts its
// background sender, which runs until Close.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open versioned store: %w", err)
	}
	query := "_busy_timeout=5000&_secure_delete=on"
	w := sql.OpenDB(sqlitedb.Connector(cfg.Path, query+"&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate", ""))
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if _, err := w.Exec(schema); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open versioned store %s: %w", cfg.Path, err)
	}
	r := sql.OpenDB(sqlitedb.Connector(cfg.Path, query+"&_query_only=1", ""))
	r.SetMaxOpenConns(4)
	s := &Store{w: w, r: r, done: make(chan struct{})}
	bcfg := batch.Config{MaxRows: cfg.MaxRows, MaxDelay: cfg.MaxDelay, Now: cfg.Now}
	s.b = batch.New(bcfg, sender{s})
	interval := cfg.MaxDelay / 4
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.loop(ctx, interval, cfg.OnError)
	return s, nil
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

// Close stops the background sender and closes the file.
func (s *Store) Close() error {
	s.once.Do(s.cancel)
	<-s.done
	return errors.Join(s.w.Close(), s.r.Close())
}

func quote(name string) string { return `"` + name + `"` }

// createSQL is t's CREATE TABLE statement.
func createSQL(t versioned.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", quote(t.Name))
	for _, c := range t.Columns {
		typ := "TEXT"
		switch c.Type {
		case versioned.Int64:
			typ = "INTEGER"
		case versioned.Float64:
			typ = "REAL"
		}
		fmt.Fprintf(&b, "%s %s NOT NULL, ", quote(c.Name), typ)
	}
	fmt.Fprintf(&b, "_version INTEGER NOT NULL, _deleted INTEGER NOT NULL, PRIMARY KEY (%s))", quotedList(t.Key))
	return b.String()
}

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

func columnNames(t versioned.Table) []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// Migrate creates the missing tables; see versioned.Store.
func (s *Store) Migrate(ctx context.Context, tables []versioned.Table) error {
	for _, t := range tables {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	for _, t := range tables {
		if _, err := s.w.ExecContext(ctx, createSQL(t)); err != nil {
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
		return fmt.Errorf("flush versioned store: %w", err)
	}
	return nil
}

// Checkpoint returns projector's saved checkpoint.
func (s *Store) Checkpoint(ctx context.Context, projector string) (eventlog.Position, error) {
	var p int64
	err := s.r.QueryRowContext(ctx, `SELECT position FROM _checkpoints WHERE projector = ?`, projector).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint of %s: %w", projector, err)
	}
	return uint64(p), nil
}

// sender writes batches for the batcher.
type sender struct{ s *Store }

func upsertSQL(t versioned.Table) string {
	cols := append(columnNames(t), "_version", "_deleted")
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	set := make([]string, 0, len(cols))
	for _, c := range cols {
		set = append(set, fmt.Sprintf("%s = excluded.%s", quote(c), quote(c)))
	}
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET %s WHERE excluded._version >= %s._version",
		quote(t.Name), quotedList(cols), marks, quotedList(t.Key), strings.Join(set, ", "), quote(t.Name))
}

// Send writes b in one transaction.
func (se sender) Send(ctx context.Context, b *batch.Batch) error {
	t, err := se.s.tables.Table(b.Table)
	if err != nil {
		return err
	}
	return se.s.inTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, upsertSQL(t))
		if err != nil {
			return err
		}
		defer st.Close()
		args := make([]any, len(t.Columns)+2)
		for _, r := range b.Rows {
			copy(args, r.Values)
			args[len(t.Columns)] = int64(r.Version)
			args[len(t.Columns)+1] = r.Deleted
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// SaveCheckpoints moves the checkpoints forward in one transaction.
func (se sender) SaveCheckpoints(ctx context.Context, cps []batch.Checkpoint) error {
	return se.s.inTx(ctx, func(tx *sql.Tx) error {
		for _, cp := range cps {
			if _, err := tx.ExecContext(ctx, `INSERT INTO _checkpoints (projector, position) VALUES (?, ?)
				ON CONFLICT (projector) DO UPDATE SET position = MAX(position, excluded.position)`, cp.Projector, int64(cp.Position)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
