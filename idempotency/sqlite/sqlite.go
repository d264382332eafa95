package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
)

// Config configures a SQLite idempotency store.
type Config struct {
	// Path is the database file, created when missing; its directory must
	// exist. Give the store its own file: the WAL and shared-memory files
	// sit beside it (Path-wal, Path-shm).
	Path string
	// Lease is how long a claim in progress keeps the key from other
	// requests; after it the claim can be taken over. Defaults to
	// idempotency.DefaultLease.
	Lease time.Duration
	// Window is how long a record lives from its first claim. Defaults to
	// idempotency.DefaultWindow.
	Window time.Duration
	// Now is the clock of leases and windows. Defaults to time.Now.
	// Processes sharing a file should have their clocks in sync: a clock
	// ahead takes over leases early.
	Now func() time.Time
	// NewToken makes the owner token of a claim; it must not repeat.
	// Defaults to 26 random base32 characters from crypto/rand.
	NewToken func() string
	// BusyTimeout bounds how long a statement waits for a lock held by
	// another process. Defaults to 10 s.
	BusyTimeout time.Duration
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	if c.Lease < 0 {
		errs = append(errs, errors.New("lease must not be negative"))
	}
	if c.Window < 0 {
		errs = append(errs, errors.New("window must not be negative"))
	}
	if c.BusyTimeout < 0 {
		errs = append(errs, errors.New("busy timeout must not be negative"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Lease == 0 {
		c.Lease = idempotency.DefaultLease
	}
	if c.Window == 0 {
		c.Window = idempotency.DefaultWindow
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewToken == nil {
		c.NewToken = rand.Text
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 10 * time.Second
	}
}

// schemaVersion is recorded in PRAGMA user_version.
const schemaVersion = 1

// The table is a rowid table, not WITHOUT ROWID: rows hold response bodies
// of up to a megabyte, which a clustered index handles badly.
const schema = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
	scope       TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	fingerprint TEXT    NOT NULL,
	token       TEXT    NOT NULL, -- owner of the claim in progress; '' once completed
	lease_until INTEGER NOT NULL, -- Unix ms; meaningful while in progress
	expires_at  INTEGER NOT NULL, -- Unix ms: first claim + window
	status      INTEGER,          -- NULL while in progress
	headers     TEXT,             -- JSON object of the replayed headers
	body        BLOB,
	UNIQUE (scope, key)
) STRICT;
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_at);
PRAGMA user_version = 1;
`

// purgePerClaim is how many expired records each writing Begin deletes in
// its transaction: more than the one record it adds, so the table never
// grows past the live keys for long, and few enough to keep Begin short.
const purgePerClaim = 16

// purgeBatch is how many records one transaction of Purge deletes.
const purgeBatch = 1000

// Store is the SQLite idempotency.Store. It is safe for concurrent use;
// several processes may share the file.
type Store struct {
	db     *sql.DB
	cfg    Config
	lease  int64 // ms
	window int64 // ms
	// write admits one writer of this process at a time, so that writers
	// queue here (honouring ctx) instead of spinning in SQLite's busy
	// handler; other processes are kept out by BEGIN IMMEDIATE.
	write     chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ idempotency.Store = (*Store)(nil)

// Open opens or creates the store at cfg.Path.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open sqlite idempotency store: %w", err)
	}
	cfg.setDefaults()
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite idempotency store: %w", err)
	}
	db := sql.OpenDB(newConnector(path, cfg.BusyTimeout))
	conns := max(4, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	s := &Store{
		db:     db,
		cfg:    cfg,
		lease:  cfg.Lease.Milliseconds(),
		window: cfg.Window.Milliseconds(),
		write:  make(chan struct{}, 1),
	}
	if err := s.init(context.Background()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite idempotency store %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		var version int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if version > schemaVersion {
			return fmt.Errorf("schema version %d is newer than this build's %d", version, schemaVersion)
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		return nil
	})
}

// Close closes the database. SQLite checkpoints and removes the WAL when
// the last connection of the last process closes. Calling Close again
// returns the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("close sqlite idempotency store: %w", err)
		}
	})
	return s.closeErr
}

// record is a row as Begin needs it.
type record struct {
	fingerprint string
	leaseUntil  int64
	expiresAt   int64
	done        bool
	resp        idempotency.Response
}

// decide applies the contract to the record found for a key (nil: none).
func decide(rec *record, fingerprint string, now int64) (out idempotency.Outcome, takeover bool) {
	switch {
	case rec == nil || rec.expiresAt <= now:
		return idempotency.Started, false
	case rec.fingerprint != fingerprint:
		return idempotency.Mismatch, false
	case rec.done:
		return idempotency.Replay, false
	case rec.leaseUntil > now:
		return idempotency.InProgress, false
	}
	return idempotency.Started, true
}

// Begin implements idempotency.Store. It first reads without the write
// lock: a replay, a mismatch or a live claim needs no write. Otherwise it
// decides again inside a BEGIN IMMEDIATE transaction, which excludes every
// other writer of every process, and records the claim there.
func (s *Store) Begin(ctx context.Context, scope, key, fingerprint string) (idempotency.Claim, error) {
	if err := idempotency.CheckBegin(scope, key, fingerprint); err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	c := idempotency.Claim{Scope: scope, Key: key, Fingerprint: fingerprint}
	rec, err := s.read(ctx, s.db, scope, key)
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	if out, _ := decide(rec, fingerprint, s.now()); out != idempotency.Started {
		return answer(c, out, rec), nil
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
			(SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`, now, purgePerClaim); err != nil {
			return fmt.Errorf("purge expired: %w", err)
		}
		rec, err := s.read(ctx, tx, scope, key)
		if err != nil {
			return err
		}
		out, takeover := decide(rec, fingerprint, now)
		if out != idempotency.Started {
			c = answer(c, out, rec)
			return nil
		}
		token := s.cfg.NewToken()
		if takeover {
			_, err = tx.ExecContext(ctx,
				"UPDATE idempotency_keys SET token = ?, lease_until = ? WHERE scope = ? AND key = ?",
				token, now+s.lease, scope, key)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys
				(scope, key, fingerprint, token, lease_until, expires_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint,
					token = excluded.token, lease_until = excluded.lease_until,
					expires_at = excluded.expires_at, status = NULL, headers = NULL, body = NULL`,
				scope, key, fingerprint, token, now+s.lease, now+s.window)
		}
		if err != nil {
			return fmt.Errorf("record claim: %w", err)
		}
		c.Outcome, c.Token, c.TakenOver = idempotency.Started, token, takeover
		return nil
	})
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	return c, nil
}

func answer(c idempotency.Claim, out idempotency.Outcome, rec *record) idempotency.Claim {
	c.Outcome = out
	if out == idempotency.Replay {
		c.Response = rec.resp
	}
	return c
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// read returns the record of (scope, key), or nil.
func (s *Store) read(ctx context.Context, q querier, scope, key string) (*record, error) {
	var (
		rec     record
		status  sql.NullInt64
		headers sql.NullString
	)
	err := q.QueryRowContext(ctx, `SELECT fingerprint, lease_until, expires_at, status, headers, body
		FROM idempotency_keys WHERE scope = ? AND key = ?`, scope, key).
		Scan(&rec.fingerprint, &rec.leaseUntil, &rec.expiresAt, &status, &headers, &rec.resp.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read record: %w", err)
	}
	if status.Valid {
		rec.done = true
		rec.resp.Status = int(status.Int64)
		if headers.Valid && headers.String != "" {
			if err := json.Unmarshal([]byte(headers.String), &rec.resp.Header); err != nil {
				return nil, fmt.Errorf("decode stored headers: %w", err)
			}
		}
	}
	return &rec, nil
}

// Complete implements idempotency.Store: one fsynced UPDATE that succeeds
// only while the claim's token still owns the key.
func (s *Store) Complete(ctx context.Context, c idempotency.Claim, resp idempotency.Response) error {
	if err := idempotency.CheckEnd(c); err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	if err := resp.Validate(); err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	headers, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("complete: encode headers: %w", err)
	}
	body := resp.Body
	if body == nil {
		body = []byte{}
	}
	return s.end(ctx, "complete", `UPDATE idempotency_keys
		SET token = '', lease_until = 0, status = ?, headers = ?, body = ?
		WHERE scope = ? AND key = ? AND token = ? AND status IS NULL`,
		resp.Status, string(headers), body, c.Scope, c.Key, c.Token)
}

// Release implements idempotency.Store: one DELETE that succeeds only while
// the claim's token still owns the key and nothing is stored.
func (s *Store) Release(ctx context.Context, c idempotency.Claim) error {
	if err := idempotency.CheckEnd(c); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return s.end(ctx, "release",
		"DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND token = ? AND status IS NULL",
		c.Scope, c.Key, c.Token)
}

func (s *Store) end(ctx context.Context, op, query string, args ...any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, idempotency.ErrClaimLost)
	}
	return nil
}

// Purge deletes every record whose window has passed, in transactions of
// purgeBatch records, then truncates the WAL so that deleted response
// bodies do not linger in it (a checkpoint that other readers keep busy is
// left for later, not reported). It returns how many records it deleted.
// Begin purges a few records each time it writes; call Purge to catch up,
// e.g. at start or from a daily job.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
				(SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`, s.now(), purgeBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("purge: %w", err)
		}
		total += n
		if n < purgeBatch {
			break
		}
	}
	var busy, logFrames, checkpointed int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed); err != nil {
		return total, fmt.Errorf("purge: checkpoint: %w", err)
	}
	return total, nil
}

func (s *Store) now() int64 { return s.cfg.Now().UnixMilli() }

// writeTx runs fn in a BEGIN IMMEDIATE transaction, one writer of this
// process at a time, and commits it (fsynced) when fn returns nil.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	select {
	case s.write <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.write }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
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

// newConnector opens the file with the pragmas every connection needs.
func newConnector(path string, busy time.Duration) driver.Connector {
	// A file: URI with the path escaped, so that '?', '#' and '%' in a
	// directory name stay part of the path. _txlock=immediate makes every
	// transaction take the write lock at BEGIN: the read and the write of a
	// claim happen under one lock, and two writers never deadlock upgrading
	// from read to write.
	// synchronous=FULL: a claim and a completion are on disk when they
	// return. secure_delete: purged response bodies (which may hold
	// personal data) are zeroed, not left in free pages.
	return sqlitedb.Connector(path, "_txlock=immediate", fmt.Sprintf(`
		PRAGMA busy_timeout = %d;
		PRAGMA journal_mode = WAL;
		PRAGMA synchronous = FULL;
		PRAGMA secure_delete = ON;`, busy.Milliseconds()))
}

// Forget deletes every stored response whose body contains one of
// needles (the ids of an erased customer: its stored answers may hold its
// personal data), then truncates the WAL so the deleted bodies linger
// neither there nor, with secure_delete, in free pages. A later request
// with one of those keys runs again. It returns how many it deleted.
func (s *Store) Forget(ctx context.Context, needles ...string) (int64, error) {
	var total int64
	for _, n := range needles {
		if n == "" {
			continue
		}
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE body IS NOT NULL AND instr(body, ?) > 0`, []byte(n))
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			total += k
			return err
		})
		if err != nil {
			return total, fmt.Errorf("forget: %w", err)
		}
	}
	var busy, logFrames, checkpointed int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed); err != nil {
		return total, fmt.Errorf("forget: checkpoint: %w", err)
	}
	if busy != 0 {
		return total, fmt.Errorf("forget: the WAL checkpoint was kept busy by readers")
	}
	return total, nil
}
