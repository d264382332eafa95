package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/readmodel"
)

// Config configures a Store.
type Config struct {
	// Path of the SQLite file; created when missing. Required.
	Path string
	// ReadConns is the size of the read pool. Default 4.
	ReadConns int
	// BusyTimeout is how long a connection waits for a lock held by
	// another process. Default 5 s.
	BusyTimeout time.Duration
	// WriterCacheKiB is the page cache of the writer connection, which
	// every projector shares: large read models are folded by random
	// b-tree updates, and pages it keeps need no read and no parse.
	// Default DefaultWriterCacheKiB.
	WriterCacheKiB int
	// ReaderCacheKiB is the page cache of each read connection. Default
	// DefaultReaderCacheKiB.
	ReaderCacheKiB int
	// NoSync, when true, never fsyncs the store (SQLite synchronous=OFF):
	// a process crash loses nothing committed, but an operating-system
	// crash or a power loss may corrupt the file, which is then deleted
	// and rebuilt from the event log. It makes a rebuild of large read
	// models write a fraction to disk (the WAL is rewritten in place in
	// the page cache). Default false (synchronous=NORMAL: fsync at each
	// WAL checkpoint).
	NoSync bool
	// Build, when true, is for building a version nobody reads yet (a
	// replay): the rollback journal is kept in memory instead of a WAL and
	// nothing is fsynced, so each page reaches the file once per commit
	// instead of twice. A crash may leave the file unusable (a replay then
	// starts it again); Finish makes it an ordinary WAL file.
	Build bool
	// Now stamps checkpoints, migrations and parked events. Default
	// time.Now.
	Now func() time.Time
}

// Default page caches: the writer's holds the hot index pages of the
// read models being folded; readers walk indexes in order and mostly need
// the pages of the query at hand.
const (
	writerAutoCheckpoint  = 16384 // pages: 64 MiB of WAL
	DefaultWriterCacheKiB = 128 * 1024
	DefaultReaderCacheKiB = 8 * 1024
)

func (c *Config) setDefaults() {
	if c.ReadConns == 0 {
		c.ReadConns = 4
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.WriterCacheKiB == 0 {
		c.WriterCacheKiB = DefaultWriterCacheKiB
	}
	if c.ReaderCacheKiB == 0 {
		c.ReaderCacheKiB = DefaultReaderCacheKiB
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c Config) journal() string {
	if c.Build {
		return "MEMORY"
	}
	return "WAL"
}

func (c Config) synchronous() string {
	if c.NoSync || c.Build {
		return "OFF"
	}
	return "NORMAL"
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("read-model store: Path is required"))
	}
	if c.ReadConns < 0 {
		errs = append(errs, errors.New("read-model store: ReadConns must not be negative"))
	}
	if c.BusyTimeout < 0 {
		errs = append(errs, errors.New("read-model store: BusyTimeout must not be negative"))
	}
	if c.WriterCacheKiB < 0 || c.ReaderCacheKiB < 0 {
		errs = append(errs, errors.New("read-model store: page caches must not be negative"))
	}
	return errors.Join(errs...)
}

// Store is the SQLite read-model store. See readmodel.Store for the
// contract. The *sql.Tx handed to Apply's fn runs on the single writer
// connection: do every read and write of fn through it.
type Store struct {
	cfg Config
	w   *sql.DB // one connection: every write
	r   *sql.DB // read-only pool
	// The pools' connectors: Switch moves both to another file.
	wc, rc *sqlitedb.Switchable
}

var _ readmodel.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS _projector_checkpoints (
	projector  TEXT PRIMARY KEY,
	position   INTEGER NOT NULL CHECK (position >= 0),
	updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS _projector_migrations (
	projector  TEXT NOT NULL,
	version    INTEGER NOT NULL,
	applied_at TEXT NOT NULL,
	PRIMARY KEY (projector, version)
);
CREATE TABLE IF NOT EXISTS _projector_parked (
	projector  TEXT NOT NULL,
	position   INTEGER NOT NULL,
	event_id   TEXT NOT NULL,
	stream     TEXT NOT NULL,
	event_type TEXT NOT NULL,
	error      TEXT NOT NULL,
	parked_at  TEXT NOT NULL,
	PRIMARY KEY (projector, position)
);`

// Open opens (creating when missing) the store at cfg.Path.
func Open(cfg Config) (*Store, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open read-model store: %w", err)
	}
	query := fmt.Sprintf("_busy_timeout=%d&_secure_delete=on&_foreign_keys=on&_stmt_cache_size=64", cfg.BusyTimeout.Milliseconds())
	// The writer checkpoints the WAL into the file only every
	// writerAutoCheckpoint pages (SQLite's default is 1,000): a page
	// written again and again while read models are folded reaches the
	// file once per checkpoint, not once per thousand pages of WAL.
	wc := sqlitedb.NewSwitchable(cfg.Path,
		query+fmt.Sprintf("&_journal_mode=%s&_synchronous=%s&_txlock=immediate&_cache_size=-%d", cfg.journal(), cfg.synchronous(), cfg.WriterCacheKiB),
		fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", writerAutoCheckpoint))
	w := sql.OpenDB(wc)
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if _, err := w.Exec(schema); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open read-model store %s: create schema: %w", cfg.Path, err)
	}
	rc := sqlitedb.NewSwitchable(cfg.Path, query+fmt.Sprintf("&_query_only=1&_cache_size=-%d", cfg.ReaderCacheKiB), "")
	r := sql.OpenDB(rc)
	r.SetMaxOpenConns(cfg.ReadConns)
	r.SetMaxIdleConns(cfg.ReadConns)
	if err := r.Ping(); err != nil {
		_ = w.Close()
		_ = r.Close()
		return nil, fmt.Errorf("open read-model store %s: read pool: %w", cfg.Path, err)
	}
	return &Store{cfg: cfg, w: w, r: r, wc: wc, rc: rc}, nil
}

// Path returns the file the store reads and writes.
func (s *Store) Path() string { return s.wc.Path() }

// Switch moves the store to the file at path (a read-model version built
// beside the live one, by a replay) without closing it: the pools keep
// their *sql.DB, queries started before the switch finish on the old file,
// every later one reads the new file. The caller makes sure no write is in
// flight (the projection runtime is paused: Runtime.Reload). The new file
// must exist; the store's own tables are created in it when missing.
func (s *Store) Switch(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("switch read-model store: %w", err)
	}
	old := s.wc.Path()
	s.wc.Switch(path)
	if _, err := s.w.ExecContext(ctx, schema); err != nil {
		s.wc.Switch(old)
		return fmt.Errorf("switch read-model store to %s: %w", path, err)
	}
	s.rc.Switch(path)
	return nil
}

// DB returns the read-only pool for read-model queries.
func (s *Store) DB() *sql.DB { return s.r }

// Close closes both pools.
func (s *Store) Close() error {
	return errors.Join(s.w.Close(), s.r.Close())
}

// Finish makes a file built with Config.Build an ordinary one: WAL mode
// (recorded in the file) and every page on disk, fsynced.
func (s *Store) Finish(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `PRAGMA journal_mode = WAL`); err != nil {
		return fmt.Errorf("read-model store: finish: %w", err)
	}
	if err := s.CheckpointWAL(ctx); err != nil {
		return err
	}
	if err := syncPath(s.Path()); err != nil {
		return fmt.Errorf("read-model store: finish: %w", err)
	}
	return nil
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// CheckpointWAL copies the write-ahead log into the database file and
// truncates it, so that erased rows survive neither in the WAL nor (with
// secure_delete) in free pages.
func (s *Store) CheckpointWAL(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("read-model store: wal checkpoint: %w", err)
	}
	return nil
}

func (s *Store) now() string { return s.cfg.Now().UTC().Format(time.RFC3339Nano) }

// Migrate runs projector's pending migrations; see readmodel.Store.
func (s *Store) Migrate(ctx context.Context, projector string, migs []readmodel.Migration) error {
	if projector == "" {
		return errors.New("migrate: empty projector name")
	}
	if err := readmodel.ValidateMigrations(migs); err != nil {
		return fmt.Errorf("migrate %s: %w", projector, err)
	}
	applied, err := s.appliedVersions(ctx, projector)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", projector, err)
	}
	if len(applied) > len(migs) {
		return fmt.Errorf("migrate %s: %d versions applied, %d known: %w", projector, len(applied), len(migs), readmodel.ErrMigrationHistory)
	}
	for i, v := range applied {
		if migs[i].Version != v {
			return fmt.Errorf("migrate %s: applied version %d where version %d is expected: %w", projector, v, migs[i].Version, readmodel.ErrMigrationHistory)
		}
	}
	for _, m := range migs[len(applied):] {
		if err := s.migrate(ctx, projector, m); err != nil {
			return fmt.Errorf("migrate %s to version %d: %w", projector, m.Version, err)
		}
	}
	return nil
}

func (s *Store) appliedVersions(ctx context.Context, projector string) ([]int, error) {
	rows, err := s.w.QueryContext(ctx, `SELECT version FROM _projector_migrations WHERE projector = ? ORDER BY version`, projector)
	if err != nil {
		return nil, fmt.Errorf("read migration history: %w", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read migration history: %w", err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read migration history: %w", err)
	}
	return vs, nil
}

// migrate runs m unless a concurrent Migrate already did.
func (s *Store) migrate(ctx context.Context, projector string, m readmodel.Migration) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM _projector_migrations WHERE projector = ? AND version = ?`, projector, m.Version).Scan(&one)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO _projector_migrations (projector, version, applied_at) VALUES (?, ?, ?)`, projector, m.Version, s.now())
		return err
	})
}

// Apply runs fn and moves the checkpoint in one transaction; see
// readmodel.Store.
func (s *Store) Apply(ctx context.Context, projector string, pos eventlog.Position, fn func(tx *sql.Tx) error) (bool, error) {
	if projector == "" {
		return false, errors.New("apply: empty projector name")
	}
	p, err := toInt64(pos)
	if err != nil {
		return false, fmt.Errorf("apply %s: %w", projector, err)
	}
	applied := false
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		cp, err := checkpoint(ctx, tx, projector)
		if err != nil {
			return err
		}
		if cp >= p {
			return nil
		}
		if err := fn(tx); err != nil {
			return err
		}
		if err := setCheckpoint(ctx, tx, projector, p, s.now()); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("apply %s at %d: %w", projector, pos, err)
	}
	return applied, nil
}

// Maintain runs fn in a write transaction without touching checkpoints.
func (s *Store) Maintain(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.inTx(ctx, fn); err != nil {
		return fmt.Errorf("maintain: %w", err)
	}
	return nil
}

// Checkpoint returns projector's checkpoint (0 when none).
func (s *Store) Checkpoint(ctx context.Context, projector string) (eventlog.Position, error) {
	var p int64
	err := s.r.QueryRowContext(ctx, `SELECT position FROM _projector_checkpoints WHERE projector = ?`, projector).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint of %s: %w", projector, err)
	}
	return uint64(p), nil
}

// Park records e as given up and moves the checkpoint past it; see
// readmodel.Store.
func (s *Store) Park(ctx context.Context, projector string, e eventlog.Event, cause error) error {
	if projector == "" {
		return errors.New("park: empty projector name")
	}
	p, err := toInt64(e.Position)
	if err != nil {
		return fmt.Errorf("park %s: %w", projector, err)
	}
	text := "unknown error"
	if cause != nil {
		text = cutError(cause.Error())
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO _projector_parked (projector, position, event_id, stream, event_type, error, parked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (projector, position) DO NOTHING`,
			projector, p, e.ID.String(), e.StreamID, e.Type, text, s.now()); err != nil {
			return err
		}
		return setCheckpoint(ctx, tx, projector, p, s.now())
	})
	if err != nil {
		return fmt.Errorf("park %s at %d: %w", projector, e.Position, err)
	}
	return nil
}

// Parked lists projector's parked events in position order.
func (s *Store) Parked(ctx context.Context, projector string) ([]readmodel.ParkedEvent, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT position, event_id, stream, event_type, error, parked_at
		FROM _projector_parked WHERE projector = ? ORDER BY position`, projector)
	if err != nil {
		return nil, fmt.Errorf("parked of %s: %w", projector, err)
	}
	defer rows.Close()
	var out []readmodel.ParkedEvent
	for rows.Next() {
		var (
			pe        = readmodel.ParkedEvent{Projector: projector}
			pos       int64
			id, stamp string
		)
		if err := rows.Scan(&pos, &id, &pe.Stream, &pe.Type, &pe.Error, &stamp); err != nil {
			return nil, fmt.Errorf("parked of %s: %w", projector, err)
		}
		pe.Position = uint64(pos)
		if pe.EventID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("parked of %s at %d: event id: %w", projector, pos, err)
		}
		if pe.ParkedAt, err = time.Parse(time.RFC3339Nano, stamp); err != nil {
			return nil, fmt.Errorf("parked of %s at %d: parked_at: %w", projector, pos, err)
		}
		out = append(out, pe)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("parked of %s: %w", projector, err)
	}
	return out, nil
}

// inTx runs fn in a write transaction (BEGIN IMMEDIATE on the writer). The
// transaction is rolled back when fn fails or panics (the panic goes on), so
// the single writer connection is never left inside a transaction.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	done = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func checkpoint(ctx context.Context, tx *sql.Tx, projector string) (int64, error) {
	var p int64
	err := tx.QueryRowContext(ctx, `SELECT position FROM _projector_checkpoints WHERE projector = ?`, projector).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read checkpoint: %w", err)
	}
	return p, nil
}

// setCheckpoint moves the checkpoint forward to p (never backwards).
func setCheckpoint(ctx context.Context, tx *sql.Tx, projector string, p int64, now string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO _projector_checkpoints (projector, position, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (projector) DO UPDATE SET position = MAX(position, excluded.position), updated_at = excluded.updated_at`,
		projector, p, now)
	if err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}

func toInt64(pos eventlog.Position) (int64, error) {
	if pos == 0 {
		return 0, errors.New("position 0 is before the first event")
	}
	if pos > math.MaxInt64 {
		return 0, fmt.Errorf("position %d out of range", pos)
	}
	return int64(pos), nil
}

// cutError keeps the first MaxParkedErrorLen bytes of s, on a rune boundary.
func cutError(s string) string {
	if len(s) <= readmodel.MaxParkedErrorLen {
		return s
	}
	return strings.ToValidUTF8(s[:readmodel.MaxParkedErrorLen], "")
}
