package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cgp-platform/cgp/internal/pgschema"
	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/internal/batch"
	"github.com/cgp-platform/cgp/vault/internal/wrapstore"
)

// DefaultSchema is the schema the vault's tables live in when Config.Schema
// is empty.
const DefaultSchema = "cgp_vault"

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Config configures a PostgreSQL vault.
type Config struct {
	// DSN is the pgx connection string (URL or key=value), including pool
	// settings such as pool_max_conns. The create batcher opens one
	// connection more, of its own.
	DSN string
	// MasterKey wraps every data key: vault.MasterKeySize bytes. The first
	// Open of a new schema records a check value; a later Open with another
	// key fails with vault.ErrWrongMasterKey.
	MasterKey []byte
	// Schema holds the vault's tables; created when missing. Lower-case
	// letters, digits and underscores. When empty, the first schema of the
	// DSN's search_path parameter, else DefaultSchema.
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
	if err := vault.ValidateMasterKey(c.MasterKey); err != nil {
		errs = append(errs, err)
	}
	if c.Schema != "" && !schemaName.MatchString(c.Schema) {
		errs = append(errs, fmt.Errorf("schema %q: want lower-case letters, digits and underscores, at most 63", c.Schema))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Schema == "" {
		c.Schema = pgschema.FromURL(c.DSN)
	}
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Vault is the PostgreSQL vault.Vault. It is safe for concurrent use, and
// any number of processes may share one schema.
//
// Creating DataKey calls are group-committed: a goroutine started by Open
// takes every create queued meanwhile (up to 512) into one
// transaction of four statements. Close answers the queued creates, then
// stops that goroutine.
type Vault struct {
	pool   *pgxpool.Pool
	master []byte
	now    func() time.Time
	schema string
	q      queries

	// writer is the create batcher's own pool of one connection.
	writer *pgxpool.Pool
	// keys runs DataKey; keys.Creates is the create batcher.
	keys      wrapstore.Store
	closeOnce sync.Once
}

var _ vault.Vault = (*Vault)(nil)

// queries holds the SQL text with the schema's quoted name filled in.
type queries struct {
	lookup, shred, shredShop, deleteShopKeys string
	// The create batch's statements; see createTx.
	insertShops, lockShops, insertKeys, selectKeys string
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
		insertShops: r.Replace(`
			INSERT INTO $schema.shops (shop)
			SELECT s FROM unnest($1::text[]) AS s ORDER BY s COLLATE "C"
			ON CONFLICT DO NOTHING`),
		lockShops: r.Replace(`
			SELECT shop, shredded_at IS NOT NULL FROM $schema.shops
			WHERE shop = ANY ($1::text[]) ORDER BY shop COLLATE "C" FOR SHARE`),
		// The shops are held shared by lockShops, so their state cannot
		// change before the commit.
		insertKeys: r.Replace(`
			INSERT INTO $schema.data_keys (shop, subject, wrapped, created_at)
			SELECT r.shop, r.subject, r.wrapped, $4
			FROM unnest($1::text[], $2::text[], $3::bytea[]) AS r (shop, subject, wrapped)
			WHERE NOT EXISTS (
				SELECT 1 FROM $schema.shops s WHERE s.shop = r.shop AND s.shredded_at IS NOT NULL)
			ORDER BY r.shop COLLATE "C", r.subject COLLATE "C"
			ON CONFLICT DO NOTHING`),
		selectKeys: r.Replace(`
			SELECT k.shop, k.subject, k.wrapped
			FROM unnest($1::text[], $2::text[]) AS r (shop, subject)
			JOIN $schema.data_keys k ON k.shop = r.shop AND k.subject = r.subject`),
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
	// The create batcher has a pool of its own, one connection, so that its
	// transactions never queue behind readers for a connection.
	wcfg := pcfg.Copy()
	wcfg.MaxConns, wcfg.MinConns, wcfg.MinIdleConns = 1, 0, 0
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres vault: %w", err)
	}
	writer, err := pgxpool.NewWithConfig(ctx, wcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres vault: %w", err)
	}
	v := &Vault{
		pool:   pool,
		writer: writer,
		master: append([]byte(nil), cfg.MasterKey...),
		now:    cfg.Now,
		schema: cfg.Schema,
		q:      newQueries(cfg.Schema),
	}
	if err := v.init(ctx); err != nil {
		pool.Close()
		writer.Close()
		return nil, fmt.Errorf("open postgres vault (schema %s): %w", cfg.Schema, err)
	}
	// Its goroutine returns in Close, once the queued creates are answered.
	creates := batch.New(batch.Config[wrapstore.CreateRequest, wrapstore.CreateResult]{
		Max:    maxCreateBatch,
		Commit: v.commitCreates,
		Closed: ErrClosed,
	})
	v.keys = wrapstore.Store{Master: v.master, Lookup: v.lookup, Creates: creates}
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

// DataKey implements vault.Vault. It reads on the pool; a create goes to
// the batcher, which writes the new key or finds a key or tombstone that
// came first.
func (v *Vault) DataKey(ctx context.Context, shop, subject string, create bool) ([]byte, error) {
	return v.keys.DataKey(ctx, shop, subject, create)
}

// lookup reads the subject's wrapped key and whether it or its shop is
// shredded, in one statement.
func (v *Vault) lookup(ctx context.Context, shop, subject string) (wrapped []byte, shredded bool, err error) {
	var shopShredded, subjectShredded bool
	if err := v.pool.QueryRow(ctx, v.q.lookup, shop, subject).Scan(&shopShredded, &wrapped, &subjectShredded); err != nil {
		return nil, false, fmt.Errorf("look up: %w", err)
	}
	return wrapped, shopShredded || subjectShredded, nil
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

// Close answers every queued create (committing them), stops the create
// batcher and closes the connection pool, waiting for connections in use;
// creates asked for afterwards fail with ErrClosed. Calling it again is a
// no-op.
func (v *Vault) Close() error {
	v.closeOnce.Do(func() {
		v.keys.Creates.Close()
		v.writer.Close()
		v.pool.Close()
	})
	return nil
}
