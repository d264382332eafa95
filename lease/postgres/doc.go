// Package postgres is the lease.Lease that several servers share: a
// session-level advisory lock of PostgreSQL per lease name.
//
// Each Run opens a connection of its own and polls pg_try_advisory_lock
// (Config.Poll) until it gets the lock, whose key is Key(namespace, name):
// a stable 64-bit hash, so every process agrees on it and no table is
// needed. Having it, Run waits Config.Settle before it runs f (see
// below). Holding it, Run checks the connection every Config.Check (a
// round trip bounded by Config.Timeout); when a check fails the session
// and with it the lock may be gone, so f's context is cancelled at once
// (cause lease.ErrLost) and Run returns ErrLost once f returned. When f
// returns the lock is unlocked and the connection closed.
//
// How exclusive: PostgreSQL grants the lock to one session at a time, and
// frees it when the session ends: at unlock, when the process dies (its
// socket closes), or when the server notices a vanished peer (TCP
// keepalives, set to about 25 s on these sessions). A holder whose
// connection breaks finds out within Check + Timeout and cancels f's
// context; the server may free the lock sooner (a terminated session, a
// restart), so a new holder waits Settle (Check + Timeout by default)
// before it runs f. What remains is the time f takes to return after its
// context ended (a send under way finishes), during which both may run:
// the work under a lease must stay idempotent; the lease makes doubles
// rare, not impossible. The price is that a takeover, and a first start,
// take Settle longer.
//
// The connection is dedicated (never a pool's), since a session lock
// belongs to the session: one connection per lease held or awaited.
//
// It imports the standard library, lease, zerolog and
// github.com/jackc/pgx/v5.
package postgres
