package main

import (
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/idempotency"
	idemredis "github.com/cgp-platform/cgp/idempotency/redis"
	idemsqlite "github.com/cgp-platform/cgp/idempotency/sqlite"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/limits/memory"
	limitsredis "github.com/cgp-platform/cgp/limits/redis"
)

// openIdempotency opens the Idempotency-Key store: Redis when configured
// (several servers share it), else an SQLite file of the data directory.
func openIdempotency(cfg Config) (idempotency.Store, error) {
	if cfg.RedisURL != "" {
		opts, err := goredis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		st, err := idemredis.New(idemredis.Config{Client: goredis.NewClient(opts)})
		if err != nil {
			return nil, fmt.Errorf("idempotency store: %w", err)
		}
		return st, nil
	}
	st, err := idemsqlite.Open(idemsqlite.Config{Path: cfg.path("idempotency.db")})
	if err != nil {
		return nil, fmt.Errorf("idempotency store: %w", err)
	}
	return st, nil
}

// openLimits opens the brute-force guard and the rate limiter: in Redis
// when configured (shared by several servers), else in process.
func openLimits(cfg Config, secret []byte) (limits.Guard, limits.Limiter, error) {
	if cfg.RedisURL != "" {
		opts, err := goredis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("redis url: %w", err)
		}
		client := goredis.NewClient(opts)
		guard, err := limitsredis.NewGuard(client, limitsredis.GuardConfig{Secret: deriveKey(secret, "cgp guard key v1"), Now: cfg.guardNow})
		if err != nil {
			return nil, nil, fmt.Errorf("brute-force guard: %w", err)
		}
		limiter, err := limitsredis.NewLimiter(client, limitsredis.LimiterConfig{})
		if err != nil {
			return nil, nil, fmt.Errorf("rate limiter: %w", err)
		}
		return guard, limiter, nil
	}
	guard, err := memory.NewGuard(memory.GuardConfig{Now: cfg.guardNow})
	if err != nil {
		return nil, nil, fmt.Errorf("brute-force guard: %w", err)
	}
	limiter, err := memory.NewLimiter(memory.LimiterConfig{})
	if err != nil {
		return nil, nil, fmt.Errorf("rate limiter: %w", err)
	}
	return guard, limiter, nil
}
