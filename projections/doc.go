// Package projections owns the projection runtime: projectors (named,
// stable folds of the event log into read-model tables) run as watermill
// handlers, each following the log from the checkpoint it keeps in the
// read-model store, with panic recovery, retry with backoff, and parking
// of an event that keeps failing so that it stalls nothing. It also offers
// read-your-writes (WaitFor a position) and projection metrics. The
// projectors themselves live in subpackages (projections/customers, …).
//
// It imports the standard library, eventlog, readmodel, eventbus,
// watermill, zerolog and prometheus; never a concrete adapter.
package projections
