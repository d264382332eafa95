// Package vaulttest is the contract every vault.Vault adapter passes: Run
// (and RunPersistent for adapters whose keys outlive a Close) checks
// creation, concurrency, shredding, tombstones and context handling; Bench
// measures the hot paths the same way for every adapter and for vault.Cache,
// and BenchParallelCreate the creation of new keys by many callers at once.
//
// It imports the standard library (testing among it) and vault only; it is
// meant for adapters' tests.
package vaulttest
