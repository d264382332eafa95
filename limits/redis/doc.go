// Package redis holds the Redis adapters of the limits ports, for several
// servers sharing one count: a rate limiter (throttled's GCRA over its
// go-redis v9 store, the same algorithm as limits/memory) and a brute-force
// guard (one Lua script per call, so each Check, Fail and Succeed is atomic
// across servers).
//
// Keys: Prefix+"rl:"+key for the rate limiter; for the guard,
// Prefix+"bf:{h}:d" (a hash: day buckets of attempts and of admitted
// failures, block, alert) and
// Prefix+"bf:{h}:m" (a list: the times of the latest admitted failures),
// where h is a keyed hash (HMAC-SHA-256 with GuardConfig.Secret) of the
// client key, so that no address is stored in Redis; the braces keep both
// keys of an address in one Redis Cluster slot. Every key expires once its
// windows have passed, so Redis holds nothing for an address that stopped.
//
// Time: by default both adapters use the Redis server's clock (TIME), one
// clock for every server. Config.Now replaces it; tests use that to move
// the windows without sleeping.
//
// It imports limits, limits/gcra, throttled's goredisstore.v9 and
// github.com/redis/go-redis/v9.
package redis
