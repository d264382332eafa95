// Package fakeesdb is an in-memory stand-in for one EventStoreDB node,
// speaking the server's gRPC Streams protocol (append, stream and $all
// reads, $all catch-up subscriptions with filters) well enough for the real
// Go client, so that the esdb adapter's tests run without a server. It is a
// test fake: one process, no persistence, no security.
//
// It models the server behaviour the adapter depends on, taken from the
// server's code (KurrentDB AllReader, Streams.Append, ResolvedEvent):
//
//   - every event commits itself and sits at $all position (p, p), p being
//     the byte offset of its record; offsets grow with record sizes;
//   - stream reads report positions too (EventStoreDB 22.10 and later);
//   - $all reads forwards include the event at the start position, reads
//     backwards and subscriptions exclude it;
//   - a $all read or subscription from a position that is not a record
//     boundary fails with codes.InvalidArgument ("invalid position"), a
//     subscription only after its confirmation, as the server does;
//   - expected revisions (any, no stream, stream exists, exact) with the
//     server's own id-based idempotency for non-Any appends whose
//     expectation lies behind the stream;
//   - system events ($stats, metadata streams) interleaved with user events;
//   - a subscription sends a confirmation, then history, "caught up", then
//     live events; filtered subscriptions also send checkpoints.
//
// Faults can be injected: failing appends, dropping subscriptions after a
// number of events, a hook run before each append takes effect (to simulate
// a concurrent writer), and stopping/restarting the server.
//
// It imports the standard library, gRPC, github.com/google/uuid and the
// protocol packages of the EventStoreDB Go client.
package fakeesdb
