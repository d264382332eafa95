package replay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cgp-platform/cgp/internal/sqlitedb"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// storeTables are the read-model store's own tables: checkpoints,
// migrations and parked events, copied per projector.
var storeTables = []string{"_projector_checkpoints", "_projector_migrations", "_projector_parked"}

// copyOthers prepares target for a replay of the projectors named rebuilt
// only: it creates their tables (their migrations), then copies from the
// live version at source every other table with its indexes and triggers,
// and the checkpoints, migrations and parked events of every other
// projector, all from one snapshot of source, in one transaction.
func copyOthers(ctx context.Context, cfg Config, source, target string, rebuilt []string) error {
	store, err := rmsqlite.Open(rmsqlite.Config{Path: target, NoSync: true})
	if err != nil {
		return err
	}
	for _, p := range cfg.Projectors {
		if slices.Contains(rebuilt, p.Name) {
			if err := store.Migrate(ctx, p.Name, p.Migrations); err != nil {
				return errors.Join(fmt.Errorf("migrate %s: %w", p.Name, err), store.Close())
			}
		}
	}
	if err := store.Close(); err != nil {
		return err
	}
	db := sql.OpenDB(sqlitedb.Connector(target, "_busy_timeout=5000&_secure_delete=on", ""))
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	owned, err := names(ctx, conn, `SELECT name FROM main.sqlite_master WHERE type = 'table'`)
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
	if err := copyTables(ctx, tx, owned, rebuilt); err != nil {
		return errors.Join(fmt.Errorf("copy from the live version: %w", err), tx.Rollback())
	}
	return tx.Commit()
}

func copyTables(ctx context.Context, tx *sql.Tx, owned, rebuilt []string) error {
	// Reading the live schema opens the snapshot every copy below reads.
	type object struct{ typ, name, table, sql string }
	rows, err := tx.QueryContext(ctx, `SELECT type, name, tbl_name, sql FROM live.sqlite_master
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
		if slices.Contains(owned, o.table) {
			continue // the rebuilt projectors' and the store's own tables
		}
		switch o.typ {
		case "table":
			if _, err := tx.ExecContext(ctx, o.sql); err != nil {
				return fmt.Errorf("create %s: %w", o.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO main.`+quote(o.name)+` SELECT * FROM live.`+quote(o.name)); err != nil {
				return fmt.Errorf("copy %s: %w", o.name, err)
			}
		default: // indexes and triggers, created once the rows are in
			if _, err := tx.ExecContext(ctx, o.sql); err != nil {
				return fmt.Errorf("create %s: %w", o.name, err)
			}
		}
	}
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(rebuilt)), ", ")
	args := make([]any, len(rebuilt))
	for i, n := range rebuilt {
		args[i] = n
	}
	for _, t := range storeTables {
		if _, err := tx.ExecContext(ctx, `INSERT INTO main.`+t+` SELECT * FROM live.`+t+` WHERE projector NOT IN (`+ph+`)`, args...); err != nil {
			return fmt.Errorf("copy %s: %w", t, err)
		}
	}
	return nil
}

func names(ctx context.Context, conn *sql.Conn, query string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, query)
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
