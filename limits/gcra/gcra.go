package gcra

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/throttled/throttled/v2"

	"github.com/cgp-platform/cgp/limits"
)

// Config configures a Limiter.
type Config struct {
	// Now, when set, is the clock of the algorithm, replacing the store's
	// own (the in-process store reads time.Now, the Redis store the
	// server's TIME, which several servers share). Tests set it. It is also
	// the clock Decision.Reset is computed from; nil means time.Now there.
	Now func() time.Time
	// CASAttempts bounds the compare-and-swap retries of one Allow when
	// concurrent calls for the same key race (each round lets one of them
	// through, so it should exceed the concurrency expected per key).
	// Default 100.
	CASAttempts int
	// Store names the store in errors ("in-process rate-limit store").
	Store string
}

// maxCached bounds the number of distinct limits a Limiter keeps a rate
// limiter for; further limits get one built per call.
const maxCached = 1024

// Limiter is a limits.Limiter over a throttled store.
type Limiter struct {
	store       throttled.GCRAStoreCtx
	now         func() time.Time
	casAttempts int
	name        string

	mu      sync.RWMutex
	byLimit map[limits.Limit]*throttled.GCRARateLimiterCtx
}

var _ limits.Limiter = (*Limiter)(nil)

// New returns a Limiter keeping its state in st. st must hold nothing but
// this Limiter's keys.
func New(st throttled.GCRAStoreCtx, cfg Config) *Limiter {
	if cfg.CASAttempts <= 0 {
		cfg.CASAttempts = 100
	}
	if cfg.Store == "" {
		cfg.Store = "rate-limit store"
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Limiter{
		store:       store{inner: st, now: cfg.Now},
		now:         now,
		casAttempts: cfg.CASAttempts,
		name:        cfg.Store,
		byLimit:     map[limits.Limit]*throttled.GCRARateLimiterCtx{},
	}
}

// Allow implements limits.Limiter.
func (l *Limiter) Allow(ctx context.Context, key string, limit limits.Limit) (limits.Decision, error) {
	rl, err := l.rateLimiter(limit)
	if err != nil {
		return limits.Decision{}, err
	}
	limited, res, err := rl.RateLimitCtx(ctx, key, 1)
	if err != nil {
		return limits.Decision{}, limits.Unavailable(l.name, fmt.Errorf("rate limit: %w", err))
	}
	d := limits.Decision{
		Allowed:   !limited,
		Limit:     res.Limit,
		Remaining: min(max(res.Remaining, 0), res.Limit),
		Reset:     l.now().Add(max(res.ResetAfter, 0)),
	}
	if limited {
		d.RetryAfter = max(res.RetryAfter, 0)
	}
	return d, nil
}

// rateLimiter returns the GCRA rate limiter of limit, built once per
// distinct limit.
func (l *Limiter) rateLimiter(limit limits.Limit) (*throttled.GCRARateLimiterCtx, error) {
	limit, err := limit.Normalize()
	if err != nil {
		return nil, err
	}
	l.mu.RLock()
	rl := l.byLimit[limit]
	l.mu.RUnlock()
	if rl != nil {
		return rl, nil
	}
	rl, err = throttled.NewGCRARateLimiterCtx(l.store, throttled.RateQuota{
		MaxRate:  throttled.PerDuration(limit.Rate, limit.Period),
		MaxBurst: limit.Burst - 1,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", limits.ErrInvalidLimit, err)
	}
	rl.SetMaxCASAttemptsLimit(l.casAttempts)
	l.mu.Lock()
	if len(l.byLimit) < maxCached {
		l.byLimit[limit] = rl
	}
	l.mu.Unlock()
	return rl, nil
}

// store adapts a throttled store: an injected clock, and expiries one
// second longer than asked. The Redis store rounds expiries down to whole
// seconds; a key expiring before its theoretical arrival time would forget
// requests and admit up to a second's worth more than the in-process store.
// A longer expiry changes nothing else: a state whose time has passed reads
// the same as no state.
type store struct {
	inner throttled.GCRAStoreCtx
	now   func() time.Time
}

func (s store) GetWithTime(ctx context.Context, key string) (int64, time.Time, error) {
	v, t, err := s.inner.GetWithTime(ctx, key)
	if s.now != nil {
		t = s.now()
	}
	return v, t, err
}

func (s store) SetIfNotExistsWithTTL(ctx context.Context, key string, value int64, ttl time.Duration) (bool, error) {
	return s.inner.SetIfNotExistsWithTTL(ctx, key, value, ttl+time.Second)
}

func (s store) CompareAndSwapWithTTL(ctx context.Context, key string, old, new int64, ttl time.Duration) (bool, error) {
	return s.inner.CompareAndSwapWithTTL(ctx, key, old, new, ttl+time.Second)
}
