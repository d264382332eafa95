package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/vault"
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
	if len(c.MasterKey) != vault.MasterKeySize {
		errs = append(errs, fmt.Errorf("%w: %d bytes, want %d", vault.ErrInvalidMasterKey, len(c.MasterKey), vault.MasterKeySize))
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

// Vault is the SQLite vault.Vault. It is safe for concurrent use; several
// processes may share the file (SQLite's locks serialize their writes).
type Vault struct {
	db     *sql.DB
	master []byte
	now    func() time.Time
	// write admits one writer of this process at a time, so that writers
	// queue here (honouring ctx) instead of spinning in SQLite's busy handler.
	write chan struct{}
}

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
	conns := max(4, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)

	v := &Vault{
		db:     db,
		master: append([]byte(nil), cfg.MasterKey...),
		now:    cfg.Now,
		write:  make(chan struct{}, 1),
	}
	if err := v.init(context.Background()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite vault %s: %w", path, err)
	}
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

// DataKey implements vault.Vault.
func (v *Vault) DataKey(ctx context.Context, shop, subject string, create bool) ([]byte, error) {
	if err := vault.ValidateID(shop, subject); err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	wrapped, shredded, err := lookup(ctx, v.db, shop, subject)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	switch {
	case shredded:
		return nil, vault.ErrShredded
	case wrapped != nil:
		return v.unwrap(shop, subject, wrapped)
	case !create:
		return nil, vault.ErrNotFound
	}

	key := vault.NewKey()
	fresh, err := vault.Wrap(v.master, shop, subject, key)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	err = v.writeTx(ctx, func(tx *sql.Tx) error {
		// Look again under the write lock: another writer may have created
		// or shredded the subject since the read above.
		wrapped, shredded, err = lookup(ctx, tx, shop, subject)
		if err != nil || shredded || wrapped != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			"INSERT INTO data_keys (shop, subject, wrapped, created_at) VALUES (?, ?, ?, ?)",
			shop, subject, fresh, v.now().UnixMilli())
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("create data key: %w", err)
	case shredded:
		return nil, vault.ErrShredded
	case wrapped != nil:
		return v.unwrap(shop, subject, wrapped)
	}
	return key, nil
}

// Shred implements vault.Vault: it deletes the wrapped key, records the
// tombstone in the same transaction, then truncates the WAL.
func (v *Vault) Shred(ctx context.Context, shop, subject string) error {
	if err := vault.ValidateID(shop, subject); err != nil {
		return fmt.Errorf("shred: %w", err)
	}
	err := v.writeTx(ctx, func(tx *sql.Tx) error {
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
	if err != nil {
		return fmt.Errorf("shred: %w", err)
	}
	return v.checkpoint(ctx)
}

// ShredShop implements vault.Vault: it records the shop's tombstone, which
// covers every subject of the shop, present or future, deletes every key of
// the shop and the subject tombstones the shop's one now covers, then
// truncates the WAL.
func (v *Vault) ShredShop(ctx context.Context, shop string) error {
	if err := vault.ValidateShop(shop); err != nil {
		return fmt.Errorf("shred shop: %w", err)
	}
	err := v.writeTx(ctx, func(tx *sql.Tx) error {
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
	if err != nil {
		return fmt.Errorf("shred shop: %w", err)
	}
	return v.checkpoint(ctx)
}

// Close closes the database. SQLite checkpoints and removes the WAL when the
// last connection closes.
func (v *Vault) Close() error {
	if err := v.db.Close(); err != nil {
		return fmt.Errorf("close sqlite vault: %w", err)
	}
	return nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// lookup reads a subject's wrapped key and whether it or its shop is
// shredded, in one statement and so from one snapshot.
func lookup(ctx context.Context, q querier, shop, subject string) (wrapped []byte, shredded bool, err error) {
	err = q.QueryRowContext(ctx, `
		SELECT
			(SELECT wrapped FROM data_keys WHERE shop = ?1 AND subject = ?2),
			EXISTS (SELECT 1 FROM tombstones WHERE shop = ?1 AND subject = ?2)
				OR EXISTS (SELECT 1 FROM shredded_shops WHERE shop = ?1)`,
		shop, subject).Scan(&wrapped, &shredded)
	if err != nil {
		return nil, false, fmt.Errorf("look up key: %w", err)
	}
	return wrapped, shredded, nil
}

func (v *Vault) unwrap(shop, subject string, wrapped []byte) ([]byte, error) {
	key, err := vault.Unwrap(v.master, shop, subject, wrapped)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	return key, nil
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

// connector opens connections with the pragmas every connection of the
// vault needs; they are per connection in SQLite, so a pool must set them
// on each one.
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func newConnector(path string, busy time.Duration) *connector {
	// A file: URI with the path escaped, so that '?', '#' and '%' in a
	// directory name stay part of the path. _txlock=immediate makes every
	// transaction take the write lock at BEGIN, so two writers never
	// deadlock upgrading from read to write.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_txlock=immediate"
	pragmas := fmt.Sprintf(`
		PRAGMA busy_timeout = %d;
		PRAGMA journal_mode = WAL;
		PRAGMA synchronous = FULL;
		PRAGMA secure_delete = ON;
		PRAGMA temp_store = MEMORY;`, busy.Milliseconds())
	return &connector{
		dsn: dsn,
		driver: &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			if _, err := c.Exec(pragmas, nil); err != nil {
				return fmt.Errorf("set pragmas: %w", err)
			}
			return nil
		}},
	}
}

// Connect implements driver.Connector.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.driver.Open(c.dsn)
}

// Driver implements driver.Connector.
func (c *connector) Driver() driver.Driver { return c.driver }
