// Package memory holds the in-process adapters of the limits ports, the
// embedded default: a rate limiter (limits.Limiter) and a brute-force guard
// (limits.Guard). Their state lives in this process only, so each server of
// a cluster would count on its own; use limits/redis there.
//
// Memory is bounded whatever clients do. The rate limiter keeps at most
// LimiterConfig.MaxKeys keys in throttled's LRU store and forgets the least
// recently used (forgetting a key only makes its limit lenient once). The
// guard keeps at most GuardConfig.MaxEntries client keys, counting IPv6
// addresses per /64 (limits.ClientKey), so an attacker cycling through the
// addresses of a /64 uses one entry. When full, it evicts the least
// recently used entry that is not blocked (among the eight least recently
// used; the least recently used of all if every one of them is blocked).
// An attacker holding many /64s can therefore evict other addresses'
// counts, which only makes them lenient again; blocked addresses go last.
// Entries whose counts have expired are dropped when next touched.
//
// It imports limits, limits/gcra and throttled's memstore.
package memory
