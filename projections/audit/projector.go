package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "audit"

// The table is keyed by (shop_id, position) WITHOUT ROWID, so the
// unfiltered history of a shop is one range of the primary key, and every
// filter has an index (shop_id, column, position) that yields its events in
// log order: a page of 100 reads 100 index entries (plus those a second
// filter rejects) whatever the size of the log.
//
// recorded_at is the log's commit clock made non-decreasing along the log
// (the largest recorded_at of this event and every earlier one), so a time
// range is one range of positions even if the clock of the machine that
// committed the events stepped back; the entries show the event's own
// recorded_at, read from the log.
var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE audit_events (
	shop_id     TEXT    NOT NULL,
	position    INTEGER NOT NULL,
	stream      TEXT    NOT NULL,
	revision    INTEGER NOT NULL,
	resource_id TEXT    NOT NULL,
	type        TEXT    NOT NULL,
	actor       TEXT    NOT NULL,
	subject     TEXT    NOT NULL, -- the customer whose key sealed personal fields, '' for none
	recorded_at INTEGER NOT NULL, -- Unix microseconds, non-decreasing along the log
	PRIMARY KEY (shop_id, position)
) WITHOUT ROWID;
CREATE INDEX audit_events_stream ON audit_events (shop_id, stream, position);
CREATE INDEX audit_events_resource ON audit_events (shop_id, resource_id, position);
CREATE INDEX audit_events_type ON audit_events (shop_id, type, position);
CREATE INDEX audit_events_actor ON audit_events (shop_id, actor, position);
CREATE INDEX audit_events_subject ON audit_events (shop_id, subject, position);
CREATE INDEX audit_events_recorded ON audit_events (shop_id, recorded_at, position);
CREATE TABLE audit_clock (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	recorded_at INTEGER NOT NULL
);
`}}

// Projector returns the audit index projector. It reads only the events'
// envelopes (stream, type, metadata), never their payloads, so it needs no
// keys and holds no personal data. An erased shop's rows stay, as its
// events stay in the log: verify still checks that history's chain, and
// the list leaves out the events that can no longer be decoded.
func Projector() projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Handle:     apply,
		QueryIndexes: []string{"audit_events_stream", "audit_events_resource", "audit_events_type", "audit_events_actor",
			"audit_events_subject", "audit_events_recorded"},
	}
}

func apply(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
	if e.ShopID == "" {
		return nil // account-level events belong to no shop's history
	}
	recorded := e.RecordedAt.UnixMicro()
	var last int64
	err := tx.QueryRowContext(ctx, `SELECT recorded_at FROM audit_clock WHERE id = 1`).Scan(&last)
	if err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("audit clock: %w", err)
	}
	if last > recorded {
		recorded = last
	} else if _, err := tx.ExecContext(ctx, `INSERT INTO audit_clock (id, recorded_at) VALUES (1, ?)
		ON CONFLICT (id) DO UPDATE SET recorded_at = excluded.recorded_at`, recorded); err != nil {
		return fmt.Errorf("audit clock: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO audit_events (shop_id, position, stream, revision, resource_id, type, actor,
	subject, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		e.ShopID, int64(e.Position), e.StreamID, int64(e.Revision), ResourceID(e.StreamID), e.Type, e.Metadata.Actor,
		subject(&e), recorded)
	if err != nil {
		return fmt.Errorf("audit index: %w", err)
	}
	return nil
}

// subject is the customer whose key sealed the event's personal fields:
// the key id that is not the shop's own.
func subject(e *eventlog.Event) string {
	for _, k := range e.Metadata.KeyIDs {
		if k != e.ShopID && k != "" {
			return k
		}
	}
	return ""
}

// multiPartCategories are the stream categories holding a '-'.
var multiPartCategories = []string{"attribution-settings-"}

// ResourceID is the id part of a stream name "<category>-<id>":
// "customer-cus_1" → "cus_1".
func ResourceID(stream string) string {
	for _, c := range multiPartCategories {
		if strings.HasPrefix(stream, c) {
			return stream[len(c):]
		}
	}
	if _, id, ok := strings.Cut(stream, "-"); ok {
		return id
	}
	return stream
}
