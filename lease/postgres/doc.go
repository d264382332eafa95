// Package postgres is the lease.Lease that several servers share: a
// session-level advisory lock of PostgreSQL per lease name.
//
// Each Run opens a connection of its own and polls pg_try_advisory_lock
// (Config.Poll) until it gets the lock, whose key is Key(namespace, name):
// a stable 64-bit hash, so every process agrees on it and no table is
// needed. Holding it, Run checks the connection every Config.Check (a
// round trip bounded by Config.Timeout); when a check fails the session
// and with it the lock may be gone, so f's context is cancelled at once
// (cause lease.ErrLost) and Run returns ErrLost once f returned. When f
// returns the lock is unlocked and the connection closed.
//
// How exclusive: PostgreSQL grants the lock to one session at a time, and
// frees it when the session ends: at unlock, when the process dies (its
// socket closes), or when the server notices a vanished peer (TCP
// keepalives, set to about 25 s on these sessions). A holder whose
// connection breaks stops its f within Check + Timeout, but the other
// holder may take the lock as soon as the server freed it: for that
// short while, and while f finishes after its context ended, both may
// run. The work under a lease must therefore stay idempotent; the lease
// makes doubles rare, not impossible.
//
// The connection is dedicated (never a pool's), since a session lock
// belongs to the session: one connection per lease held or awaited.
//
// It imports the standard library, lease, zerolog and
// github.com/jackc/pgx/v5.
package postgres
