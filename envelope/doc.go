// Package envelope turns domain events into sealed event-log records and
// back: the personal-data envelope of DESIGN.md §5.
//
// A payload is the event's JSON in which every personal field (named by
// domain.Personal) is first sealed with the data subject's own key, and the
// whole document is then sealed with the shop's key; both with AES-256-GCM,
// bound by additional data to the event id (and field name), so a sealed
// value cannot be moved to another event. Shredding a customer's key makes
// its fields decode to null with the event marked redacted, and never
// stops a reader. It imports domain, eventlog and vault.
package envelope
