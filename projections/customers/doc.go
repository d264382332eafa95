// Package customers is the customers read model: its projector (stable
// name "customers") folds customer events into the SQLite read-model store,
// and Queries serves the admin API's customer reads with keyset pagination.
//
// It imports domain, eventlog, envelope, projections and readmodel.
package customers
