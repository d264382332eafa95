package memory

import (
	"fmt"
	"time"

	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"

	"github.com/cgp-platform/cgp/limits/gcra"
)

// DefaultMaxKeys is the default bound on the keys a Limiter keeps.
const DefaultMaxKeys = 100_000

// LimiterConfig configures NewLimiter.
type LimiterConfig struct {
	// MaxKeys bounds the keys kept; the least recently used are forgotten
	// beyond it. Default DefaultMaxKeys (about 20 MB when full: some
	// 185 bytes a key).
	MaxKeys int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewLimiter returns an in-process limits.Limiter: throttled's GCRA over
// its LRU memory store. It starts no goroutine and needs no Close.
func NewLimiter(cfg LimiterConfig) (*gcra.Limiter, error) {
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.MaxKeys < 0 {
		return nil, fmt.Errorf("rate limiter: MaxKeys %d is negative", cfg.MaxKeys)
	}
	st, err := memstore.New(cfg.MaxKeys)
	if err != nil {
		return nil, fmt.Errorf("rate limiter store: %w", err)
	}
	return gcra.New(throttled.WrapStoreWithContext(st), gcra.Config{
		Now:   cfg.Now,
		Store: "in-process rate-limit store",
	}), nil
}
