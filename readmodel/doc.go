// Package readmodel is the port of the read-model store: the SQL database
// that projectors fold the event log into, with each projector's checkpoint
// written in the same transaction as its rows, its own migration history,
// and a record of the events it parked. Adapters: readmodel/sqlite
// (embedded). The contract every adapter passes lives in
// readmodel/readmodeltest.
//
// It imports the standard library, eventlog and github.com/google/uuid.
package readmodel
