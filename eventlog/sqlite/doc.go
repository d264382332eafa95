// Package sqlite is the embedded event-log adapter: an eventlog.Log kept in
// one SQLite file (WAL, synchronous=FULL), shared safely by several
// processes. It owns the log's schema (versioned, append-only: triggers
// reject every UPDATE and DELETE), the group-commit writer that batches
// concurrent appends into one durable transaction, the pool of read
// connections, and catch-up subscriptions woken by commits in this process
// and by a cheap data_version check for commits of other processes.
//
// It imports the standard library, github.com/google/uuid,
// github.com/mattn/go-sqlite3 (cgo) and the eventlog port.
package sqlite
