// Package projections owns the projection runtime: projectors (named,
// stable folds of the event log into read-model tables) run as watermill
// handlers, each following the log from the checkpoint it keeps in the
// read-model store, with panic recovery, retry with backoff, and parking
// of an event that keeps failing so that it stalls nothing. It also offers
// read-your-writes (WaitFor a position) and projection metrics, and the
// folds' dispatch by event type (Cases for a batch folded in memory,
// TxCases for events written in SQL one at a time), from which a
// projector's types are read. The projectors and reactors themselves live
// in subpackages (projections/customers, …).
//
// It imports the standard library, eventlog, readmodel, eventbus,
// watermill, zerolog and prometheus; never a concrete adapter.
package projections
