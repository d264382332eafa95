// Package eventlog is the port of the append-only event log: the envelope of
// a recorded event, expected-revision concurrency, the hash chain that makes
// tampering evident, and the Log interface every adapter implements
// (eventlog/sqlite embedded; eventlog/esdb and eventlog/postgres at scale).
// The contract every adapter passes lives in eventlog/eventlogtest.
//
// It imports only the standard library and github.com/google/uuid.
package eventlog
