// Package marketplaces is the marketplaces read model: its projector
// (stable name "marketplaces") folds the marketplace events into the SQLite
// read-model store. It keeps the connections of seller accounts (with the
// secret the marketplace receiver verifies deliveries with), the orders
// marketplaces reported, and their other notifications, per shop; Queries
// reads them.
//
// It imports domain, eventlog, envelope, projections and readmodel.
package marketplaces
