// Package clickhouse is the versioned.Store on ClickHouse (server 25.8 or
// later, github.com/ClickHouse/clickhouse-go/v2 over the native protocol).
//
// Each table is a ReplacingMergeTree(_version, _deleted) ordered by its
// key, so merges keep the newest version of a key and drop tombstones;
// reads use FINAL, which gives the merged result before the merges happen,
// with key equalities on a prefix of the sorting key and keyset cursors as
// tuple comparisons. Rows are inserted by the shared batcher with
// PrepareBatch, per table, in batches of thousands at most about once per
// MaxDelay; each insert carries an insert_deduplication_token derived from
// the batch (table, first and last position, content), so a batch sent
// again after an unclear failure is stored once. The checkpoint table
// (ReplacingMergeTree keyed by projector, versioned by position) is
// written only after the batches holding the rows up to that position
// were sent. Erasure writes tombstones and then deletes the older versions
// with a lightweight DELETE.
//
// Identifiers are validated (versioned.ValidIdentifier) and quoted; values
// are always bound as query arguments. The SQL is built by pure functions
// tested without a server; the contract suite runs against a server when
// CGP_CLICKHOUSE_URL is set.
//
// It imports the standard library, eventlog, readmodel/versioned and its
// internal batcher, and github.com/ClickHouse/clickhouse-go/v2.
package clickhouse
