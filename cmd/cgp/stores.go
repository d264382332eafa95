package main

import (
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/idempotency"
	idemredis "github.com/cgp-platform/cgp/idempotency/redis"
	idemsqlite "github.com/cgp-platform/cgp/idempotency/sqlite"
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
