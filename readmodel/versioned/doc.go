// Package versioned is the port of the warehouse read-model store: tables
// of whole rows, each row versioned by the global log position that
// produced it, where the newest version of a key wins and a tombstone hides
// it. It exists beside readmodel.Store because a column store such as
// ClickHouse cannot run a projector's SQL transaction (upserts,
// read-modify-write): it can append whole rows in large batches and merge
// them by version, which is all this port asks of it.
//
// Writes are buffered: rows become readable, and the writing projector's
// checkpoint moves, only after the batch holding them was sent durably.
// Replays and redeliveries are safe because an older version never
// overwrites a newer one.
//
// Adapters: readmodel/versioned/sqlite (embedded) and
// readmodel/versioned/clickhouse. The contract every adapter passes lives
// in readmodel/versioned/versionedtest.
//
// It imports the standard library and eventlog.
package versioned
