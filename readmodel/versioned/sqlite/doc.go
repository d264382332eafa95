// Package sqlite is the embedded versioned.Store: one SQLite file whose
// tables hold the newest version of each key (an upsert that only replaces
// an older version), written in batches by the shared batcher, each batch
// in one transaction, and a checkpoint table saved after them.
//
// It imports the standard library, eventlog, internal/sqlitedb,
// readmodel/versioned and its internal batcher, and
// github.com/mattn/go-sqlite3.
package sqlite
