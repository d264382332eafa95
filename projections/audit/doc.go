// Package audit is the index of the event log that the audit history API
// pages through (projector "audit"): one row per event of a shop, with the
// fields it can be filtered by and the event's position, and no payload.
// The events themselves are read back from the log by position
// (eventlog.PositionReader), so the index holds no personal data and
// nothing the log does not already hold. It imports eventlog, projections
// and readmodel.
package audit
