// Package outbox ships embedded read models to a versioned.Store (the
// warehouse): SQLite triggers, installed by a read-model migration of their
// own (projector name Projector), record the key of every row a projector
// inserts, updates or deletes in chosen tables, in an outbox table, in the
// projector's own transaction; a Shipper reads the outbox in sequence
// order, reads the current whole rows (or finds them gone) and writes them
// (or tombstones) to the warehouse, and deletes the outbox rows only after
// the warehouse's checkpoint for Projector moved past them.
//
// A shipped row's version is the checkpoint of the projector owning its
// table, read before the row: the row's state is at least that new, and a
// later state always ships later with a version at least as high (equal
// versions: the later write wins), so the warehouse converges on the read
// model, and a rebuilt read model (replay) ships the same versions.
//
// It imports the standard library, readmodel and readmodel/versioned.
package outbox
