package redis

import (
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
	goredisstore "github.com/throttled/throttled/v2/store/goredisstore.v9"

	"github.com/cgp-platform/cgp/limits/gcra"
)

// DefaultPrefix is the default prefix of every key.
const DefaultPrefix = "cgp:limits:"

// LimiterConfig configures NewLimiter.
type LimiterConfig struct {
	// Prefix is put before every key. Default DefaultPrefix.
	Prefix string
	// Now replaces the Redis server's clock; nil keeps it.
	Now func() time.Time
	// CASAttempts bounds the retries of one Allow when concurrent calls
	// for the same key race. Default 100.
	CASAttempts int
}

// NewLimiter returns a limits.Limiter keeping its state in Redis. The
// client is the caller's to close.
func NewLimiter(client goredis.UniversalClient, cfg LimiterConfig) (*gcra.Limiter, error) {
	if client == nil {
		return nil, fmt.Errorf("redis rate limiter: no client")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	st, err := goredisstore.NewCtx(client, cfg.Prefix+"rl:")
	if err != nil {
		return nil, fmt.Errorf("redis rate limiter: %w", err)
	}
	return gcra.New(st, gcra.Config{Now: cfg.Now, CASAttempts: cfg.CASAttempts, Store: "Redis rate-limit store"}), nil
}
