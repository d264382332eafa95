// Package idempotencytest is the contract suite of the idempotency.Store
// port: Run checks an adapter against every rule of the port (claim,
// complete, replay, mismatch, in progress, release, fencing of lost claims,
// lease takeover, expiry after the window, and two store instances over one
// backend racing for one key), and Benchmark measures Begin and Complete.
// Every adapter's tests call both.
//
// It imports the standard library and idempotency.
package idempotencytest
