// Package lease runs work on one holder at a time among the processes
// that share a lease: "run f only while this process holds the lease named
// N". Several servers over one event log use it so that each side effect
// (sending, delivering, notifying, calling a provider) is performed by one
// server, and taken over by another when that one dies.
//
// Lease is the port; Local is its in-process implementation (one server:
// granted at once, exclusive among the holders of one process), and
// lease/postgres the one servers share (a session advisory lock). Both
// pass the conformance suite lease/leasetest.
//
// It imports the standard library only.
package lease
