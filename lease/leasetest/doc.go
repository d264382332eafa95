// Package leasetest is the conformance suite of lease.Lease: every
// implementation runs it (lease.Local in process, lease/postgres against
// a server).
//
// It imports the standard library and lease.
package leasetest
