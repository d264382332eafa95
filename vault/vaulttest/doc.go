// Package vaulttest is the contract every vault.Vault adapter passes: Run
// (and RunPersistent for adapters whose keys outlive a Close) checks
// creation, concurrency, shredding, tombstones and context handling;
// RunBackend adds, for adapters with storage a test can read behind their
// back, many concurrent creators and creates racing shreds, checked against
// what is stored. Bench measures the hot paths the same way for every
// adapter and for vault.Cache, and BenchParallelCreate the creation of new
// keys by many callers at once. WaitFor, CreateAll, CollectKeys, CheckKeys
// and SameKey help adapters' own tests drive concurrent creates.
//
// It imports the standard library (testing among it) and vault only; it is
// meant for adapters' tests.
package vaulttest
