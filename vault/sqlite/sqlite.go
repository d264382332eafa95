package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/internal/batch"
	"github.com/cgp-platform/cgp/vault/internal/wrapstore"
)

// ErrCheckpointBusy is returned by Shred and ShredShop when the shred was
// committed but the WAL could not be truncated because readers held it
// past the busy timeout: the old page images may still be in the WAL.
// Shredding is idempotent; call it again.
var ErrCheckpointBusy = errors.New("wal checkpoint busy")

// Config configures a SQLite vault.
type Config struct {
	// Path is the database file, created when missing; its directory must
	// exist. The WAL and shared-memory files sit beside it (Path-wal,
	// Path-shm).
	Path string
	// MasterKey wraps every data key: vault.MasterKeySize bytes (see
	// vault.ParseMasterKey and vault.LoadOrCreateKeyFile). The first Open of
	// a new file records a check value; a later Open with another key fails
	// with vault.ErrWrongMasterKey.
	MasterKey []byte
	// Now gives the time recorded on new keys and tombstones (informative
	// only). Defaults to time.Now.
	Now func() time.Time
	// BusyTimeout bounds how long a statement waits for a lock held by
	// another connection or process. Defaults to 10 s.
	BusyTimeout time.Duration
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	if err := vault.ValidateMasterKey(c.MasterKey); err != nil {
		errs = append(errs, err)
	}
	if c.BusyTimeout < 0 {
		errs = append(errs, errors.New("busy timeout must not be negative"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 10 * time.Second
	}
}

// ErrClosed is returned by DataKey when it must create a key after Close
// has begun.
var ErrClosed = errors.New("sqlite vault closed")

// Vault is the SQLite vault.Vault. It is safe for concurrent use; several
// processes may share the file (SQLite's locks serialize their writes).
//
// Creating DataKey calls are group-committed: a writer goroutine started by
// Open takes every create queued meanwhile (up to 512) into one
// transaction with one fsync. Close answers the queued creates, then stops
// that goroutine.
type Vault struct {
	db     *sql.DB
	master []byte
	now    func() time.Time
	// write admits one writer of this process at a time, so that writers
	// queue here (honouring ctx) instead of spinning in SQLite's busy handler.
	write writeLock

	// creator holds the create batcher's own connection, so that its
	// transactions never queue behind readers for one from the pool.
	creator *creator
	// keys runs DataKey; keys.Creates is the create batcher.
	keys      wrapstore.Store
	closeOnce sync.Once
	closeErr  error
}

// writeLock is a lock of one slot that a writer can also wait for in a
// select, beside its ctx.
type writeLock chan struct{}

// Lock takes the lock, for the create batcher.
func (l writeLock) Lock() { l <- struct{}{} }

// Unlock releases the lock.
func (l writeLock) Unlock() { <-l }

var _ vault.Vault = (*Vault)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS vault_meta (
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS data_keys (
	shop       TEXT NOT NULL,
	subject    TEXT NOT NULL,
	wrapped    BLOB NOT NULL,
	created_at INTEGER NOT NULL, -- Unix milliseconds
	PRIMARY KEY (shop, subject)
) STRICT;
CREATE TABLE IF NOT EXISTS tombstones (
	shop        TEXT NOT NULL,
	subject     TEXT NOT NULL,
	shredded_at INTEGER NOT NULL,
	PRIMARY KEY (shop, subject)
) STRICT;
CREATE TABLE IF NOT EXISTS shredded_shops (
	shop        TEXT PRIMARY KEY,
	shredded_at INTEGER NOT NULL
) STRICT;
`

// Open opens or creates the vault at cfg.Path and checks the master key
// against the file's check value.
func Open(cfg Config) (*Vault, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open sqlite vault: %w", err)
	}
	cfg.setDefaults()
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite vault: %w", err)
	}
	db := sql.OpenDB(newConnector(path, cfg.BusyTimeout))
	// One connection more than the readers get, held by the create batcher.
	conns := max(4, runtime.GOMAXPROCS(0)) + 1
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)

	v := &Vault{
		db:     db,
		master: append([]byte(nil), cfg.MasterKey...),
		now:    cfg.Now,
		write:  make(writeLock, 1),
	}
	ctx := context.Background()
	if err := v.init(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite vault %s: %w", path, err)
	}
	if v.creator, err = newCreator(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite vault %s: %w", path, err)
	}
	// Its goroutine returns in Close, once the queued creates are answered.
	creates := batch.New(batch.Config[wrapstore.CreateRequest, wrapstore.CreateResult]{
		Max:    maxCreateBatch,
		Commit: v.commitCreates,
		Lock:   v.write,
		Closed: ErrClosed,
	})
	v.keys = wrapstore.Store{Master: v.master, Lookup: v.lookup, Creates: creates}
	return v, nil
}

// init creates the tables, checks that secure delete is really on, and
// records or verifies the master-key check value.
func (v *Vault) init(ctx context.Context) error {
	var secureDelete int
	if err := v.db.QueryRowContext(ctx, "PRAGMA secure_delete").Scan(&secureDelete); err != nil {
		return fmt.Errorf("read secure_delete: %w", err)
	}
	if secureDelete != 1 {
		return fmt.Errorf("secure_delete is %d, want 1: shredded keys would linger in the file", secureDelete)
	}
	return v.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
		var check []byte
		err := tx.QueryRowContext(ctx, "SELECT value FROM vault_meta WHERE name = 'master_check'").Scan(&check)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			check, err := vault.NewMasterCheck(v.master)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO vault_meta (name, value) VALUES ('master_check', ?)", check); err != nil {
				return fmt.Errorf("store master check: %w", err)
			}
			return nil
		case err != nil:
			return fmt.Errorf("read master check: %w", err)
		default:
			return vault.VerifyMasterCheck(v.master, check)
		}
	})
}

// DataKey implements vault.Vault. It reads on any pooled connection; a
// create goes to the batcher, which looks again under the write lock:
// another writer may have created or shredded the subject since the read.
func (v *Vault) DataKey(ctx context.Context, shop, subject string, create bool) ([]byte, error) {
	return v.keys.DataKey(ctx, shop, subject, create)
}

// Shred implements vault.Vault: it deletes the wrapped key, records the
// tombstone in the same transaction, then truncates the WAL.
func (v *Vault) Shred(ctx context.Context, shop, subject string) error {
	if err := vault.ValidateID(shop, subject); err != nil {
		return fmt.Errorf("shred: %w", err)
	}
	return v.shredTx(ctx, "shred", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM data_keys WHERE shop = ? AND subject = ?", shop, subject); err != nil {
			return fmt.Errorf("delete key: %w", err)
		}
		if _, err := tx.ExecContext(ctx,
			"INSERT INTO tombstones (shop, subject, shredded_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
			shop, subject, v.now().UnixMilli()); err != nil {
			return fmt.Errorf("record tombstone: %w", err)
		}
		return nil
	})
}

// ShredShop implements vault.Vault: it records the shop's tombstone, which
// covers every subject of the shop, present or future, deletes every key of
// the shop and the subject tombstones the shop's one now covers, then
// truncates the WAL.
func (v *Vault) ShredShop(ctx context.Context, shop string) error {
	if err := vault.ValidateShop(shop); err != nil {
		return fmt.Errorf("shred shop: %w", err)
	}
	return v.shredTx(ctx, "shred shop", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			"INSERT INTO shredded_shops (shop, shredded_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
			shop, v.now().UnixMilli()); err != nil {
			return fmt.Errorf("record shop tombstone: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM data_keys WHERE shop = ?", shop); err != nil {
			return fmt.Errorf("delete keys: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM tombstones WHERE shop = ?", shop); err != nil {
			return fmt.Errorf("delete subject tombstones: %w", err)
		}
		return nil
	})
}

// shredTx runs a shred's transaction and then the WAL checkpoint, both
// under the in-process write lock: the batcher's create transactions wait
// meanwhile instead of contending with the checkpoint in SQLite's busy
// handler, and a create committed before the shred is deleted by it.
func (v *Vault) shredTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	select {
	case v.write <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	defer func() { <-v.write }()
	if err := v.tx(ctx, fn); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return v.checkpoint(ctx)
}

// Close answers every queued create (committing them), stops the create
// batcher and closes the database; creates asked for afterwards fail with
// ErrClosed. SQLite checkpoints and removes the WAL when the last
// connection closes. Calling Close again returns the first call's result.
func (v *Vault) Close() error {
	v.closeOnce.Do(func() {
		v.keys.Creates.Close()
		err := errors.Join(v.creator.close(), v.db.Close())
		if err != nil {
			v.closeErr = fmt.Errorf("close sqlite vault: %w", err)
		}
	})
	return v.closeErr
}

// lookupSQL reads a subject's wrapped key and whether it or its shop is
// shredded, in one statement and so from one snapshot.
const lookupSQL = `
		SELECT
			(SELECT wrapped FROM data_keys WHERE shop = ?1 AND subject = ?2),
			EXISTS (SELECT 1 FROM tombstones WHERE shop = ?1 AND subject = ?2)
				OR EXISTS (SELECT 1 FROM shredded_shops WHERE shop = ?1)`

// lookup runs lookupSQL on the pool.
func (v *Vault) lookup(ctx context.Context, shop, subject string) (wrapped []byte, shredded bool, err error) {
	return scanLookup(v.db.QueryRowContext(ctx, lookupSQL, shop, subject))
}

func scanLookup(row *sql.Row) (wrapped []byte, shredded bool, err error) {
	if err := row.Scan(&wrapped, &shredded); err != nil {
		return nil, false, fmt.Errorf("look up key: %w", err)
	}
	return wrapped, shredded, nil
}

// writeTx runs fn in a BEGIN IMMEDIATE transaction, one writer of this
// process at a time, and commits it when fn returns nil.
func (v *Vault) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case v.write <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-v.write }()
	return v.tx(ctx, fn)
}

// tx runs fn in a BEGIN IMMEDIATE transaction on a pooled connection and
// commits it when fn returns nil. The caller holds v.write.
func (v *Vault) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := v.db.BeginTx(ctx, nil)
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

// checkpoint copies every WAL frame into the database file and truncates
// the WAL to zero bytes, so that no page image from before a shred stays on
// disk. The shred is committed by then, so the caller's cancellation no
// longer stops it; the busy timeout bounds it.
func (v *Vault) checkpoint(ctx context.Context) error {
	var busy, logFrames, checkpointed int
	err := v.db.QueryRowContext(context.WithoutCancel(ctx), "PRAGMA wal_checkpoint(TRUNCATE)").
		Scan(&busy, &logFrames, &checkpointed)
	if err != nil {
		return fmt.Errorf("shred committed; wal checkpoint: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("shred committed; truncate wal: %w", ErrCheckpointBusy)
	}
	return nil
}

// newConnector opens the file with the pragmas every connection needs.
func newConnector(path string, busy time.Duration) driver.Connector {
	// A file: URI with the path escaped, so that '?', '#' and '%' in a
	// directory name stay part of the path. _txlock=immediate makes every
	// transaction take the write lock at BEGIN, so two writers never
	// deadlock upgrading from read to write.
	return sqlitedb.Connector(path, "_txlock=immediate&_stmt_cache_size=16", fmt.Sprintf(`
		PRAGMA busy_timeout = %d;
		PRAGMA journal_mode = WAL;
		PRAGMA synchronous = FULL;
		PRAGMA secure_delete = ON;
		PRAGMA temp_store = MEMORY;`, busy.Milliseconds()))
}
