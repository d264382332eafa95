package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations holds the schema, one entry per version: migrations[0] is
// version 1. Never edit an entry once released; append a new one.
var migrations = []string{
	// Version 1: events, stream metadata, append-only triggers.
	`
CREATE TABLE events (
	position       INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id       BLOB    NOT NULL UNIQUE,
	stream         TEXT    NOT NULL,
	revision       INTEGER NOT NULL,
	type           TEXT    NOT NULL,
	schema_version INTEGER NOT NULL,
	shop_id        TEXT    NOT NULL,
	occurred_at    INTEGER NOT NULL, -- Unix nanoseconds, UTC
	recorded_at    INTEGER NOT NULL, -- Unix nanoseconds, UTC
	data           BLOB    NOT NULL,
	metadata       TEXT    NOT NULL, -- JSON of eventlog.Metadata
	prev_hash      BLOB,             -- NULL for revision 0
	hash           BLOB    NOT NULL,
	UNIQUE (stream, revision)
) STRICT;

CREATE TABLE stream_metadata (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	stream      TEXT    NOT NULL,
	metadata    TEXT    NOT NULL, -- JSON object of strings; the latest row wins
	recorded_at INTEGER NOT NULL
) STRICT;
CREATE INDEX stream_metadata_by_stream ON stream_metadata (stream, seq);

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: update rejected'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: delete rejected'); END;
CREATE TRIGGER stream_metadata_no_update BEFORE UPDATE ON stream_metadata
BEGIN SELECT RAISE(ABORT, 'stream metadata is append-only: update rejected'); END;
CREATE TRIGGER stream_metadata_no_delete BEFORE DELETE ON stream_metadata
BEGIN SELECT RAISE(ABORT, 'stream metadata is append-only: delete rejected'); END;
`,
}

// migrate brings the database on conn to the latest schema version in one write
// transaction, so that processes opening a new file at once agree.
func migrate(ctx context.Context, conn *sql.Conn, now time.Time) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	const create = `CREATE TABLE IF NOT EXISTS schema_version (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL -- Unix nanoseconds, UTC
) STRICT`
	if _, err := conn.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	var current int
	if err := conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this build knows (%d)", current, len(migrations))
	}
	for v := current + 1; v <= len(migrations); v++ {
		if _, err := conn.ExecContext(ctx, migrations[v-1]); err != nil {
			return fmt.Errorf("apply schema version %d: %w", v, err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", v, now.UnixNano()); err != nil {
			return fmt.Errorf("record schema version %d: %w", v, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit migration: %w", err)
	}
	return nil
}
