package replay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// storeTables are the read-model store's own tables: checkpoints,
// migrations and parked events, copied per projector.
var storeTables = []string{"_projector_checkpoints", "_projector_migrations", "_projector_parked"}

// copyOthers prepares target for a replay of the projectors named rebuilt
// only: it copies from the live version at source the tables of every other projector with their
// indexes and triggers, and those projectors' checkpoints, migrations and
// parked events, all from one snapshot of source, in one transaction.
// Anything else in the live version (the warehouse outbox, which the server
// installs again on the new version) is not copied. Without a live version
// (a server's first start builds its read models) there is nothing to copy:
// the server creates the other tables when it migrates the new version.
func copyOthers(ctx context.Context, cfg Config, source, target string, rebuilt []string) error {
	if _, err := os.Stat(source); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// The rebuilt projectors' tables come from their lanes.
	conn, done, err := openVersion(ctx, target)
	if err != nil {
		return err
	}
	defer done()
	var others []projections.Projector
	var otherNames []string
	for _, p := range cfg.Projectors {
		if !slices.Contains(rebuilt, p.Name) {
			others = append(others, p)
			otherNames = append(otherNames, p.Name)
		}
	}
	copied, err := tablesOf(ctx, others)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS live`, "file:"+source+"?mode=ro"); err != nil {
		return fmt.Errorf("attach the live version: %w", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE live`) }()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := copyTables(ctx, tx, copied, otherNames); err != nil {
		return errors.Join(fmt.Errorf("copy from the live version: %w", err), tx.Rollback())
	}
	return tx.Commit()
}

func copyTables(ctx context.Context, tx *sql.Tx, tables, projectors []string) error {
	if err := copyObjects(ctx, tx, "live", tables); err != nil {
		return err
	}
	return copyStoreRows(ctx, tx, "live", projectors)
}

// copyObjects creates in main the tables of the attached schema from named
// tables, copies their rows, then creates their indexes, triggers and
// views. Reading the schema opens the snapshot every copy reads.
func copyObjects(ctx context.Context, tx *sql.Tx, schema string, tables []string) error {
	type object struct{ typ, name, table, sql string }
	rows, err := tx.QueryContext(ctx, `SELECT type, name, tbl_name, sql FROM `+schema+`.sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, name`)
	if err != nil {
		return err
	}
	var objs []object
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			rows.Close()
			return err
		}
		objs = append(objs, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, o := range objs {
		if !slices.Contains(tables, o.table) {
			continue
		}
		if _, err := tx.ExecContext(ctx, o.sql); err != nil {
			return fmt.Errorf("create %s: %w", o.name, err)
		}
		if o.typ == "table" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO main.`+quote(o.name)+` SELECT * FROM `+schema+`.`+quote(o.name)); err != nil {
				return fmt.Errorf("copy %s: %w", o.name, err)
			}
		}
	}
	return nil
}

// copyStoreRows copies the checkpoints, migrations and parked events of
// projectors from the attached schema.
func copyStoreRows(ctx context.Context, tx *sql.Tx, schema string, projectors []string) error {
	if len(projectors) == 0 {
		return nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(projectors)), ", ")
	args := make([]any, len(projectors))
	for i, n := range projectors {
		args[i] = n
	}
	for _, t := range storeTables {
		if _, err := tx.ExecContext(ctx, `INSERT INTO main.`+t+` SELECT * FROM `+schema+`.`+t+` WHERE projector IN (`+ph+`)`, args...); err != nil {
			return fmt.Errorf("copy %s: %w", t, err)
		}
	}
	return nil
}

// openVersion opens one connection to the version being built at target
// (the store's own tables created when it is new), for ATTACH and bulk
// copies: no journal on disk, no fsync (Finish makes it durable).
func openVersion(ctx context.Context, target string) (*sql.Conn, func(), error) {
	store, err := rmsqlite.Open(rmsqlite.Config{Path: target, NoSync: true})
	if err != nil {
		return nil, nil, err
	}
	if err := store.Close(); err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(sqlitedb.Connector(target, "_busy_timeout=5000&_secure_delete=on&_journal_mode=MEMORY&_synchronous=OFF", ""))
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, errors.Join(err, db.Close())
	}
	return conn, func() { _ = conn.Close(); _ = db.Close() }, nil
}

// tablesOf returns the tables the projectors' migrations create, found by
// running them on an empty in-memory database.
func tablesOf(ctx context.Context, projs []projections.Projector) ([]string, error) {
	db, err := sql.Open("sqlite3", "file::memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	for _, p := range projs {
		for _, m := range p.Migrations {
			if _, err := db.ExecContext(ctx, m.SQL); err != nil {
				return nil, fmt.Errorf("tables of %s: migration %d: %w", p.Name, m.Version, err)
			}
		}
	}
	return names(ctx, db, `SELECT name FROM sqlite_master WHERE type = 'table'`)
}

func names(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string) ([]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// quote quotes an SQLite identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
