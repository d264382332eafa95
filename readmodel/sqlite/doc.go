// Package sqlite is the embedded read-model store (readmodel.Store): one
// SQLite file in the data directory, in WAL mode with synchronous=NORMAL
// (read models can be rebuilt from the log, so a lost last commit after a
// power cut is acceptable) and secure_delete on (erased personal data must
// not linger in free pages). One writer connection serialises every write;
// a separate read-only pool serves queries.
//
// It imports the standard library, eventlog, readmodel, github.com/google/uuid
// and github.com/mattn/go-sqlite3 (cgo).
package sqlite
