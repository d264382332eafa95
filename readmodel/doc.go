// Package readmodel is the port of the read-model store: the SQL database
// that projectors fold the event log into, with each projector's checkpoint
// written in the same transaction as its rows, its own migration history,
// and a record of the events it parked. Adapters: readmodel/sqlite
// (embedded). The contract every adapter passes lives in
// readmodel/readmodeltest.
//
// It also holds what projectors and their queries share to store values in
// columns and read them back (Micros and Time, JSONText, FindError, List).
//
// It imports the standard library, eventlog, domain (for its errors) and
// github.com/google/uuid.
package readmodel
