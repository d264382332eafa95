// Package limitstest is the contract of the limits ports: RunLimiter and
// RunGuard run one suite against any adapter (limits/memory, limits/redis),
// on a manual Clock the suite moves instead of sleeping, and
// BenchLimiter/BenchGuard are the shared benchmarks. Adapters that keep
// their state in process opt into the bounded-memory checks with
// InProcess.
//
// It imports limits and the standard library's testing.
package limitstest
