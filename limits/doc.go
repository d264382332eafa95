// Package limits owns the two counters that protect the admin API, as ports
// with their value types:
//
//   - Limiter: the request rate limit per token (X-RateLimit-* headers,
//     429 rate_limited with Retry-After). Limits per plan come from
//     PlanLimits.
//   - Guard: brute-force protection per client address (429
//     too_many_failed_attempts, 429 ip_blocked, the alert at 1000 attempts
//     in 24 hours, reset on success). GuardConfig holds the rules; the
//     rules themselves are documented on Guard.
//
// Adapters: limits/memory (in-process, the embedded default, bounded
// memory) and limits/redis (shared by several servers). limits/gcra runs
// the GCRA algorithm of github.com/throttled/throttled/v2 over either
// store, so both rate limiters give the same answers. The contract every
// adapter passes, and shared benchmarks, live in limits/limitstest.
//
// It imports the standard library and domain (for plans and the
// unavailable error code) only.
package limits
