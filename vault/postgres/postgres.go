package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cgp-platform/cgp/vault"
)

// DefaultSchema is the schema the vault's tables live in when Config.Schema
// is empty.
const DefaultSchema = "cgp_vault"

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Config configures a PostgreSQL vault.
type Config struct {
	// DSN is the pgx connection string (URL or key=value), including pool
	// settings such as pool_max_conns.
	DSN string
	// MasterKey wraps every data key: vault.MasterKeySize bytes. The first
	// Open of a new schema records a check value; a later Open with another
	// key fails with vault.ErrWrongMasterKey.
	MasterKey []byte
	// Schema holds the vault's tables; created when missing. Lower-case
	// letters, digits and underscores. Defaults to DefaultSchema.
	Schema string
	// Now gives the time recorded on new keys and tombstones (informative
	// only). Defaults to time.Now.
	Now func() time.Time
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.DSN == "" {
		errs = append(errs, errors.New("dsn is required"))
	}
	if len(c.MasterKey) != vault.MasterKeySize {
		errs = append(errs, fmt.Errorf("%w: %d bytes, want %d", vault.ErrInvalidMasterKey, len(c.MasterKey), vault.MasterKeySize))
	}
	if c.Schema != "" && !schemaName.MatchString(c.Schema) {
		errs = append(errs, fmt.Errorf("schema %q: want lower-case letters, digits and underscores, at most 63", c.Schema))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Vault is the PostgreSQL vault.Vault. It is safe for concurrent use, and
// any number of processes may share one schema.
type Vault struct {
	pool   *pgxpool.Pool
	master []byte
	now    func() time.Time
	schema string
	q      queries
}

var _ vault.Vault = (*Vault)(nil)

// queries holds the SQL text with the schema's quoted name filled in.
type queries struct {
	lookup, insertShop, lockShop, insertKey, selectKey, shred, shredShop, deleteShopKeys string
}

func newQueries(schema string) queries {
	s := pgx.Identifier{schema}.Sanitize()
	r := strings.NewReplacer("$schema", s)
	return queries{
		lookup: r.Replace(`
			SELECT s.shredded_at IS NOT NULL, k.wrapped, k.shredded_at IS NOT NULL
			FROM (VALUES (1)) AS one (x)
			LEFT JOIN $schema.shops s ON s.shop = $1
			LEFT JOIN $schema.data_keys k ON k.shop = $1 AND k.subject = $2`),
		insertShop: r.Replace(`INSERT INTO $schema.shops (shop) VALUES ($1) ON CONFLICT DO NOTHING`),
		lockShop:   r.Replace(`SELECT shredded_at IS NOT NULL FROM $schema.shops WHERE shop = $1 FOR SHARE`),
		insertKey: r.Replace(`
			INSERT INTO $schema.data_keys (shop, subject, wrapped, created_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`),
		selectKey: r.Replace(`SELECT wrapped FROM $schema.data_keys WHERE shop = $1 AND subject = $2`),
		shred: r.Replace(`
			INSERT INTO $schema.data_keys (shop, subject, wrapped, created_at, shredded_at)
			VALUES ($1, $2, NULL, $3, $3)
			ON CONFLICT (shop, subject) DO UPDATE
			SET wrapped = NULL, shredded_at = COALESCE(data_keys.shredded_at, EXCLUDED.shredded_at)`),
		shredShop: r.Replace(`
			INSERT INTO $schema.shops (shop, shredded_at) VALUES ($1, $2)
			ON CONFLICT (shop) DO UPDATE SET shredded_at = COALESCE(shops.shredded_at, EXCLUDED.shredded_at)`),
		deleteShopKeys: r.Replace(`DELETE FROM $schema.data_keys WHERE shop = $1`),
	}
}

func migration(schema string) string {
	return strings.ReplaceAll(`
		CREATE SCHEMA IF NOT EXISTS $schema;
		CREATE TABLE IF NOT EXISTS $schema.vault_meta (
			name  text PRIMARY KEY,
			value bytea NOT NULL
		);
		CREATE TABLE IF NOT EXISTS $schema.shops (
			shop        text PRIMARY KEY,
			shredded_at timestamptz
		);
		CREATE TABLE IF NOT EXISTS $schema.data_keys (
			shop        text NOT NULL,
			subject     text NOT NULL,
			wrapped     bytea,
			created_at  timestamptz NOT NULL,
			shredded_at timestamptz,
			PRIMARY KEY (shop, subject),
			CHECK ((wrapped IS NULL) = (shredded_at IS NOT NULL))
		);`, "$schema", pgx.Identifier{schema}.Sanitize())
}

// Open connects, creates the schema and tables when missing, and records or
// verifies the master-key check value.
func Open(ctx context.Context, cfg Config) (*Vault, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open postgres vault: %w", err)
	}
	cfg.setDefaults()
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		// The parse error may quote the DSN, password included: drop it.
		return nil, errors.New("open postgres vault: cannot parse dsn")
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres vault: %w", err)
	}
	v := &Vault{
		pool:   pool,
		master: append([]byte(nil), cfg.MasterKey...),
		now:    cfg.Now,
		schema: cfg.Schema,
		q:      newQueries(cfg.Schema),
	}
	if err := v.init(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres vault (schema %s): %w", cfg.Schema, err)
	}
	return v, nil
}

func (v *Vault) init(ctx context.Context) error {
	return pgx.BeginFunc(ctx, v.pool, func(tx pgx.Tx) error {
		// Serialize migrations of this schema across processes: concurrent
		// CREATE … IF NOT EXISTS can still collide in the catalogue.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('cgp/vault/migrate/' || $1, 0))`, v.schema); err != nil {
			return fmt.Errorf("lock migration: %w", err)
		}
		if _, err := tx.Exec(ctx, migration(v.schema)); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
		meta := pgx.Identifier{v.schema, "vault_meta"}.Sanitize()
		check, err := vault.NewMasterCheck(v.master)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+meta+` (name, value) VALUES ('master_check', $1) ON CONFLICT DO NOTHING`, check); err != nil {
			return fmt.Errorf("store master check: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT value FROM `+meta+` WHERE name = 'master_check'`).Scan(&check); err != nil {
			return fmt.Errorf("read master check: %w", err)
		}
		return vault.VerifyMasterCheck(v.master, check)
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
	var shopShredded, subjectShredded bool
	var wrapped []byte
	if err := v.pool.QueryRow(ctx, v.q.lookup, shop, subject).Scan(&shopShredded, &wrapped, &subjectShredded); err != nil {
		return nil, fmt.Errorf("data key: look up: %w", err)
	}
	switch {
	case shopShredded || subjectShredded:
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
	var stored []byte
	err = pgx.BeginFunc(ctx, v.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, v.q.insertShop, shop); err != nil {
			return fmt.Errorf("record shop: %w", err)
		}
		// The shared lock keeps ShredShop out until this key is committed;
		// ShredShop then deletes it with the rest.
		if err := tx.QueryRow(ctx, v.q.lockShop, shop).Scan(&shopShredded); err != nil {
			return fmt.Errorf("lock shop: %w", err)
		}
		if shopShredded {
			return nil
		}
		if _, err := tx.Exec(ctx, v.q.insertKey, shop, subject, fresh, v.now()); err != nil {
			return fmt.Errorf("insert key: %w", err)
		}
		// Ours, a concurrent creator's, or a tombstone (NULL).
		if err := tx.QueryRow(ctx, v.q.selectKey, shop, subject).Scan(&stored); err != nil {
			return fmt.Errorf("read key: %w", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("create data key: %w", err)
	case shopShredded || stored == nil:
		return nil, vault.ErrShredded
	}
	return v.unwrap(shop, subject, stored)
}

// Shred implements vault.Vault: the subject's row keeps no key and records
// when it was shredded; a subject never seen gets such a row.
func (v *Vault) Shred(ctx context.Context, shop, subject string) error {
	if err := vault.ValidateID(shop, subject); err != nil {
		return fmt.Errorf("shred: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shred: %w", err)
	}
	if _, err := v.pool.Exec(ctx, v.q.shred, shop, subject, v.now()); err != nil {
		return fmt.Errorf("shred: %w", err)
	}
	return nil
}

// ShredShop implements vault.Vault: it marks the shop shredded, which covers
// every subject of the shop, present or future, and deletes all the shop's
// key rows, in one transaction.
func (v *Vault) ShredShop(ctx context.Context, shop string) error {
	if err := vault.ValidateShop(shop); err != nil {
		return fmt.Errorf("shred shop: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shred shop: %w", err)
	}
	err := pgx.BeginFunc(ctx, v.pool, func(tx pgx.Tx) error {
		// Taking the shop row exclusively waits for creators holding it
		// shared, so their keys are committed before the delete below.
		if _, err := tx.Exec(ctx, v.q.shredShop, shop, v.now()); err != nil {
			return fmt.Errorf("record shop tombstone: %w", err)
		}
		if _, err := tx.Exec(ctx, v.q.deleteShopKeys, shop); err != nil {
			return fmt.Errorf("delete keys: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("shred shop: %w", err)
	}
	return nil
}

// Close closes the connection pool, waiting for connections in use.
func (v *Vault) Close() error {
	v.pool.Close()
	return nil
}

func (v *Vault) unwrap(shop, subject string, wrapped []byte) ([]byte, error) {
	key, err := vault.Unwrap(v.master, shop, subject, wrapped)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	return key, nil
}
