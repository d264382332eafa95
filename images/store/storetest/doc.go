// Package storetest is the contract every store.Store adapter passes: Run
// checks round trips and digests, atomic replacement, failed and cancelled
// writes that store nothing, shop isolation, refused names (path
// traversal and anything but [A-Za-z0-9_-]), DeleteShop, Sweep against an
// injected clock, and concurrent Puts.
//
// It imports the standard library (testing among it), domain and
// images/store; it is meant for adapters' tests.
package storetest
