// Package domain holds the aggregates, events, invariants and value types of
// the commerce-growth platform: identifiers, plans, scopes, money, and the
// typed failures every layer reports. It imports only the standard library:
// no I/O, no logging, no clock reads (callers pass `now`).
package domain
