// Package postgres is the PostgreSQL event-log adapter: an eventlog.Log
// kept in one schema of a PostgreSQL database (through pgx) and shared by
// any number of processes, the at-scale log of deployments that already
// run PostgreSQL. It owns the log's schema (versioned migrations run at
// Open; append-only: statement triggers refuse every UPDATE, DELETE and
// TRUNCATE of its tables), the group-commit writer that batches concurrent
// appends of a process into one transaction, the listener that turns the
// schema's notifications into wake-ups, and catch-up subscriptions.
//
// # Positions without gaps, in commit order
//
// Every append transaction first takes a transaction-scoped advisory lock
// of the schema (pg_advisory_xact_lock(class, key of the schema)), then
// numbers its events from the position after the highest one (read, or
// checked to be the one it expected: see Group commit). The
// lock is released only when the transaction ends, after its commit has
// become visible (PostgreSQL makes a commit visible before it releases the
// transaction's locks). So positions are assigned and committed in the
// same order, one transaction at a time, and they have no holes: a rolled
// back transaction used no position, and the next one starts from the
// committed maximum again. Hence what readers see is always a prefix of
// the log: a snapshot that shows position p shows every position below
// p, and a reader (ReadAll, a subscription) that has moved past p never
// meets a later-committed event below it. Readers take no lock and need no
// read cap. A hot standby replays the commits in the same order and shows
// prefixes too.
//
// The lock serializes the appends of all processes sharing the schema;
// group commit amortizes it: each transaction carries every append queued
// in its process meanwhile. Logs in different schemas use different lock
// keys.
//
// # Group commit
//
// One writer goroutine per Log runs the transactions, on a connection of
// its own. It caches the heads of the streams it has read or written and
// the last position it committed. A batch whose every append the cache
// decides (streams it knows; NoStream appends to streams it does not) is
// sent in one round trip, in pipeline mode: the append lock, then one
// INSERT of all its events that applies only if the last position is
// still the one the batch was numbered after, then a Sync that commits.
// While that batch is in flight the writer sends the next one, numbered
// as if the first commits, and conditional on the first one's last event
// being at the last position: the server runs a connection's statements
// in order, so it never waits for this process between two commits, and
// a wrong guess (the first batch failed, or another process appended in
// between) inserts nothing. Any other batch, and a batch whose condition
// failed or whose insert a UNIQUE constraint refused, is decided on fresh
// reads under the lock in an explicit transaction of two round trips
// (Stats.Rereads counts them).
//
// # Expected revisions and idempotency
//
// On fresh reads, the writer reads under the lock the heads of the
// batch's streams and where the batch's event ids are already recorded;
// nothing can change them before its COMMIT. It then decides each append
// in order (expected revision, repeat of an earlier append, id already
// used), so a refused append is answered with its own error while the
// batch's others commit. Refusals are only ever decided on fresh reads.
// The database still enforces the invariants on its own: (stream,
// revision) and event_id are UNIQUE, so a writer that skipped the lock
// would fail rather than fork a stream. An append whose first event id is
// already in the same stream repeats an earlier one and returns that
// append's result without writing; an event id used in another stream
// fails the append (ids are unique in the whole log, as in eventlog/sqlite).
//
// # Wake-ups
//
// The append transaction sends its new head with pg_notify on the
// schema's channel; PostgreSQL delivers it when, and only if, the
// transaction commits. A listener goroutine per Log LISTENs on its own
// connection and wakes the subscriptions; the writer also wakes them
// directly after its own commits. A subscription with nothing to read
// reads again every Config.PollInterval anyway: a notification sent while
// the listener was reconnecting is lost, and the poll bounds the delay
// that causes.
//
// # Durability
//
// An Append returns once its transaction committed, which with the
// server's default synchronous_commit=on means the WAL was flushed (and,
// with synchronous replication, replicated). Close answers every append
// queued before it.
//
// # Time and text
//
// Times are stored as Unix nanoseconds (bigint), not timestamptz, because
// the hash chain covers OccurredAt to the nanosecond. Text columns cannot
// hold NUL bytes or invalid UTF-8, so Append refuses such stream ids,
// types, shop ids and metadata up front rather than fail a whole batch.
//
// It imports the standard library, github.com/google/uuid,
// github.com/jackc/pgx/v5 and the eventlog port. It never reads the
// environment: cmd passes a Config.
package postgres
