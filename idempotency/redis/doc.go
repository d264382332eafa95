// Package redis is the idempotency.Store of the at-scale deployment, over
// Redis (github.com/redis/go-redis/v9). Each key is two Redis keys: the
// record, a hash that expires with the window, and the lease, a string
// holding the owner token that expires with the lease (SET NX PX). Begin,
// Complete and Release are Lua scripts, each atomic on the server: Begin
// claims with SET NX, takes over only when the lease key has expired, and
// writes a fresh owner token into the record; Complete and Release act only
// while the record still holds the caller's token, so a slow first request
// whose lease was taken over can neither store its response nor free the
// newer claim. Redis expiries purge everything; nothing else is needed.
//
// Durability is the server's: with appendonly yes and appendfsync always a
// claim or a completion that returned survives a crash of Redis; with
// weaker settings the last second may be lost, and a retry then runs the
// request again.
//
// Redis key names hold the prefix and a SHA-256 of the scope and the key,
// never the key itself. Both Redis keys of a record share a hash tag, so
// they live on one Redis Cluster slot.
//
// It imports the standard library, github.com/redis/go-redis/v9 and
// idempotency.
package redis
