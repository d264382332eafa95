// Package esdb is the EventStoreDB (KurrentDB) adapter of the event-log
// port eventlog.Log, used by the scaled deployment (docker-compose). It owns
// the mapping of the port's envelope, positions, expected revisions,
// idempotent appends, hash chain and catch-up subscriptions onto the
// server's streams and $all, through github.com/EventStore/EventStore-Client-Go/v4.
//
// It imports the standard library, the eventlog port, github.com/google/uuid,
// the EventStoreDB Go client and the gRPC status codes that client reports;
// its tests use the contract suite eventlog/eventlogtest against a real
// node (CGP_ESDB_URL), and, for the adapter's own retry, resubscription and
// error-mapping logic, a small in-memory node (internal/fakeesdb) that
// answers through the real client: it produces the client's real error
// values and simulates drops and outages on demand. The fake never stands in
// for the contract run, which needs a real server. It never reads the
// environment: cmd passes a Config.
//
// # Envelope
//
// Each event becomes one server event: its id is our event id, its type our
// Type, its data our opaque Data with content type application/octet-stream,
// and its metadata a JSON document (envelope) with the schema version, shop
// id, occurred_at (RFC 3339, UTC, nanoseconds), our Metadata, the previous
// hash and the hash, plus $correlationId/$causationId for the server's own
// projections. The server assigns the stream revision, the $all position and
// the creation time (RecordedAt). toEventData and codec.decode are the pure
// mapping both ways; decode refuses an event without a valid envelope rather
// than deliver something that cannot be verified.
//
// # Namespaces
//
// Config.StreamPrefix puts the log in a namespace of the server: port stream
// "x" is server stream prefix+"x", and reads, subscriptions (a server-side
// stream-prefix filter) and HeadPosition see only the namespace. Hashes are
// computed over the port's stream id, so a log's chains do not depend on its
// namespace. Several environments can share a cluster this way, and the
// contract suite gets an empty log per test from a server that cannot be
// emptied. Without a prefix the log is the whole server minus its system
// events (stream or type starting with '$').
//
// # Positions
//
// The server's $all position is a pair (commit, prepare) of byte offsets in
// its transaction log, ordered by commit then prepare. Our Position is the
// prepare position: the offset of the event's own record. Why that works:
//
//   - Every append made through the gRPC API is an implicit transaction
//     whose records commit themselves (no separate commit record), and the
//     server reports such an event at (p, p) where p is its own offset, in
//     $all reads and subscriptions and, since EventStoreDB 22.10, in stream
//     reads. Offsets of distinct records differ and grow with the log, so p
//     is unique and strictly increasing in $all order.
//   - In the only layout where events share a commit position (events of
//     one explicit transaction, committed by a later commit record: legacy
//     TCP clients only), their prepare positions are still unique and
//     increase within the transaction, and since the transaction's records
//     are contiguous prepare still increases in $all order. Interleaved
//     explicit transactions, which only legacy TCP clients could write, are
//     not supported.
//
// Resuming: Position p is turned back into the server position (p, p) (0
// into Start). ReadAll reads forwards from it, which includes the event at p,
// and skips it; subscriptions start after it. In both, a cursor drops every
// event whose Position is not above the last one handled, so that a server
// re-delivering the events of a transaction that started before the resume
// point (the legacy layout above) causes no duplicate. Within one Subscribe
// call, resubscriptions start from the full (commit, prepare) of the last
// event handled, exactly. The port accepts any Position, but the server
// refuses to read from the middle of a record ("invalid position"): the
// cursor then starts again from the start of the record's chunk, then from
// the start of the log, skipping everything up to the caller's Position.
// The server reports an unknown position as -1 (MaxUint64 on the wire): the
// adapter fails rather than guess.
//
// # Hash chain and expected revisions
//
// The adapter computes PrevHash and Hash with eventlog.ChainHash, so it must
// know the stream's last event: Append reads the stream's tail (backwards),
// checks the caller's expectation against it, chains the new events to the
// last one's hash and appends with that exact revision (NoStream for an
// empty stream) as the server-side expectation. A concurrent writer
// therefore makes the append fail on the server instead of forking the
// chain. On such a conflict an Any or StreamExists append reads the tail and
// tries again (at most 8 attempts, then eventlog.ErrUnavailable); a NoStream
// or Exact append re-evaluates and returns a *eventlog.WrongRevisionError
// (unless the winner was a repeat of itself). Conflicts are recognised by the
// *es.Error code found with errors.As, never with es.FromError (whose ok
// result is inverted and which ignores wrapped errors).
//
// # Idempotent appends
//
// The server de-duplicates by event id only in some expected-version cases,
// so the adapter checks itself: an append whose first event id is among the
// stream's last Config.IdempotencyWindow events (read anyway for the tail)
// returns the earlier append's result without writing. When a NoStream or
// Exact(r) expectation fails, the events the earlier append would have
// written (from revision 0 or r+1) are read and compared, which finds a
// repeat however long the stream has grown since. A repeat of an Any,
// StreamExists or still-satisfied Exact append older than the window is not
// recognised: the design uses deterministic ids with NoStream where
// de-duplication must hold. Event ids are unique per stream only: the server
// has no index of event ids across streams, so the same id may be appended
// to two streams. The position returned for an append is read back from the
// stream (the server's write result carries one position for a whole batch
// and none for a repeat it detected itself).
//
// # Subscriptions
//
// Subscribe opens a catch-up subscription to $all (SubscribeToAll, never a
// persistent subscription) with a server-side filter (the namespace's
// stream prefix, or event types not starting with '$'); whatever else is
// not ours is dropped on our side. When the server drops it, the adapter
// resubscribes from the last event handled, with exponential backoff between
// Config.ResubscribeMin and ResubscribeMax (reset once the new subscription
// delivers), so events keep their order with no gap and no duplicate.
// HeadPosition likewise reads $all backwards, in growing pages, past events
// that are not ours: the last record of $all is usually a $stats event that
// no subscriber receives.
//
// # Client behaviour the adapter works around
//
//   - The client queues every call on an unbuffered channel read by one
//     connection state machine and ignores contexts while doing so. While
//     it discovers the node a call waits; when discovery fails the machine
//     closes the client for good and exits, and calls queued behind it wait
//     forever. Every call therefore runs in its own goroutine (clientCall):
//     the caller returns when its context ends, a call waiting longer than a
//     whole discovery can take is abandoned, and a dead client (one
//     reporting ErrorCodeConnectionClosed, or stuck) is replaced by a fresh
//     one. A replaced client is closed once no call runs on it; a call stuck
//     on a dead client stays parked (one goroutine and the client, per call
//     caught in the outage) since closing the client under it would race
//     with its send.
//   - GetStreamMetadata reads the metadata stream with the options it is
//     given, forwards from the start unless told otherwise, so the adapter
//     asks for the latest event explicitly; SetStreamMetadata silently drops
//     '$' keys, so the adapter rejects them and keeps the server's own
//     settings ($maxAge and the like) when it replaces the custom ones.
//   - The client's default logger writes to stdout; the adapter silences it.
//
// The adapter needs EventStoreDB 22.10 or later (KurrentDB included), read
// access to $all, and stream ids and event types that do not start with '$'.
package esdb
