// Package eventlogtest is the contract every eventlog.Log adapter passes:
// Run is the conformance suite (expected revisions, atomic and idempotent
// appends, reads, the envelope, the hash chain, concurrency and catch-up
// subscriptions, stream metadata) and Bench the shared benchmarks. An
// adapter's own tests call both with a function that opens a fresh, empty
// log.
//
// It imports the standard library, github.com/google/uuid and the eventlog
// port only; never an adapter.
package eventlogtest
