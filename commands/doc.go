// Package commands holds one file per command of the write side. A command
// loads its aggregate's stream, lets the domain decide, seals the resulting
// events with the envelope codec and appends them with the expected
// revision, retrying on a concurrent writer. The Handler type lists every
// command (a table of contents of the write side).
//
// It imports domain, eventlog, envelope and the standard library.
package commands
