// Package gcra implements limits.Limiter with the generic cell-rate
// algorithm of github.com/throttled/throttled/v2 over any throttled store:
// limits/memory passes the library's in-process LRU store, limits/redis its
// go-redis v9 store. One algorithm over two stores makes both adapters give
// the same answers; this package adds what the stores need around it (an
// injectable clock, expiries that are never early, one rate limiter per
// distinct limit).
//
// It imports limits, domain (through limits) and throttled.
package gcra
