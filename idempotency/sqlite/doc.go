// Package sqlite is the embedded idempotency.Store: records kept in their
// own SQLite file (WAL, synchronous=FULL, secure_delete), which several
// processes may share. Begin is one BEGIN IMMEDIATE transaction over a
// table unique on (scope, key), so two servers on the same file cannot both
// be Started for a key; a claim and a completion are fsynced before they
// return, so a replay after a crash never answers something the client was
// not sent. Expired records are purged a few at a time by each claim that
// writes, and all at once by Purge.
//
// It imports the standard library, github.com/mattn/go-sqlite3 (cgo) and
// idempotency.
package sqlite
