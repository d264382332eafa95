package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Advisory-lock classes (the first key of pg_advisory_xact_lock(int, int));
// the second key is schemaKey, so logs in different schemas of one
// database never wait for each other.
const (
	appendLockClass  int32 = 0x63677031 // "cgp1": position assignment
	migrateLockClass int32 = 0x63677032 // "cgp2": migrations
)

// schemaKey is the second advisory-lock key of schema. Two schemas sharing
// a key only serialize each other's appends, which stays correct.
func schemaKey(schema string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(schema))
	return int32(h.Sum32())
}

// migrations holds the schema, one entry per version: migrations[0] is
// version 1. Never edit an entry once released; append a new one. Each
// statement is idempotent as well, so a half-applied version (impossible
// inside the migration's transaction, but cheap to allow) is finished.
// $schema stands for the quoted schema name.
var migrations = []string{
	// Version 1: events, stream metadata, append-only triggers.
	`
CREATE TABLE IF NOT EXISTS $schema.events (
	position       bigint  PRIMARY KEY,
	event_id       uuid    NOT NULL UNIQUE,
	stream         text    NOT NULL,
	revision       bigint  NOT NULL CHECK (revision >= 0),
	type           text    NOT NULL,
	schema_version integer NOT NULL,
	shop_id        text    NOT NULL,
	occurred_at    bigint  NOT NULL, -- Unix nanoseconds, UTC (the hash covers nanoseconds)
	recorded_at    bigint  NOT NULL, -- Unix nanoseconds, UTC
	data           bytea   NOT NULL,
	metadata       jsonb   NOT NULL, -- eventlog.Metadata
	prev_hash      bytea,            -- NULL for revision 0
	hash           bytea   NOT NULL,
	UNIQUE (stream, revision)
);

CREATE TABLE IF NOT EXISTS $schema.stream_metadata (
	seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stream      text   NOT NULL,
	metadata    jsonb  NOT NULL, -- object of strings; the latest row wins
	recorded_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS stream_metadata_by_stream ON $schema.stream_metadata (stream, seq);

CREATE OR REPLACE FUNCTION $schema.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
	RAISE EXCEPTION '%.% is append-only: % rejected', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP;
END
$body$;

-- Statement triggers: they fire even when no row matches, and cover TRUNCATE.
CREATE OR REPLACE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON $schema.events
	FOR EACH STATEMENT EXECUTE FUNCTION $schema.refuse_change();
CREATE OR REPLACE TRIGGER stream_metadata_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON $schema.stream_metadata
	FOR EACH STATEMENT EXECUTE FUNCTION $schema.refuse_change();
`,
}

// migrate creates the schema when missing and brings it to the latest
// version in one transaction, holding an advisory lock so that processes
// opening a new schema at once take turns.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	s := pgx.Identifier{schema}.Sanitize()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", migrateLockClass, schemaKey(schema)); err != nil {
			return fmt.Errorf("lock migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+s); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		create := `CREATE TABLE IF NOT EXISTS ` + s + `.schema_version (
			version    integer     PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`
		if _, err := tx.Exec(ctx, create); err != nil {
			return fmt.Errorf("create schema_version: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM "+s+".schema_version").Scan(&current); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if current > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this build knows (%d)", current, len(migrations))
		}
		for v := current + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[v-1], "$schema", s)); err != nil {
				return fmt.Errorf("apply schema version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+s+".schema_version (version) VALUES ($1)", v); err != nil {
				return fmt.Errorf("record schema version %d: %w", v, err)
			}
		}
		return nil
	})
}
