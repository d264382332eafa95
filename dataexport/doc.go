// Package dataexport builds the export of everything the service holds on
// one customer of one shop, the answer to a customers/data_request: the
// profile (customers read model), the opt-ins it records, every event of
// the customer's own stream and of the streams of its orders, checkouts,
// journey enrollments, messages and storefront visits (found through the
// read models, then read from the event log stream by stream and decoded
// with the envelope: never a scan of the whole log), its messages
// (messaging read model) and its attribution (the touchpoints of the
// customer and the credits of its orders).
//
// The export is one JSON document, format_version 1, in a deterministic
// order. It is built in memory for each delivery attempt and never
// written to disk. An unknown customer gives an export that says so, with
// empty sections.
//
// It imports domain, envelope, eventlog, outbound and channels/email (the
// mail of an export), and reads the tables of the customers, commerce,
// journeys, messaging and attribution read models.
package dataexport
