// Package redissessions keeps the admin interface's sessions in Redis,
// shared by every server of a deployment (a browser signed in on one is
// signed in on all). Like the SQLite store it keeps only the SHA-256 of a
// session id: a hash per session with its user, creation and last use,
// expiring in Redis when the session can no longer be used.
package redissessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/adminui"
)

// DefaultPrefix starts every key of the store.
const DefaultPrefix = "cgp:session:"

// Config configures a Store.
type Config struct {
	Client *goredis.Client
	// Prefix starts every key (servers sharing sessions share it).
	// Default DefaultPrefix.
	Prefix string
	// Now is the clock of the expiries. Default time.Now.
	Now func() time.Time
	// CloseClient has Close close the client (a client of the store's
	// own).
	CloseClient bool
}

// Store is an adminui.SessionStore in Redis.
type Store struct {
	c           *goredis.Client
	prefix      string
	now         func() time.Time
	closeClient bool
}

var _ adminui.SessionStore = (*Store)(nil)

// New returns the store.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("redissessions: a client is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{c: cfg.Client, prefix: cfg.Prefix, now: cfg.Now, closeClient: cfg.CloseClient}, nil
}

func (s *Store) key(raw string) string { return s.prefix + adminui.SessionHash(raw) }

// ttl is how long Redis keeps a session last used at seen: until the
// earlier of its two timeouts (a session the store's clock sees alive is
// never gone from Redis sooner).
func ttl(created, seen time.Time) time.Duration {
	return min(adminui.IdleTimeout, created.Add(adminui.AbsoluteTimeout).Sub(seen)) + time.Minute
}

// Create starts a session of user.
func (s *Store) Create(ctx context.Context, userID string) (string, error) {
	raw, err := adminui.NewSessionID()
	if err != nil {
		return "", err
	}
	now := s.now()
	at := strconv.FormatInt(now.UnixMicro(), 10)
	k := s.key(raw)
	_, err = s.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.HSet(ctx, k, "user", userID, "created", at, "seen", at)
		p.Expire(ctx, k, ttl(now, now))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return raw, nil
}

// Lookup returns the user of a live session and records its use.
func (s *Store) Lookup(ctx context.Context, raw string) (string, error) {
	if !adminui.ValidSessionID(raw) {
		return "", nil
	}
	k := s.key(raw)
	v, err := s.c.HMGet(ctx, k, "user", "created", "seen").Result()
	if err != nil {
		return "", fmt.Errorf("find session: %w", err)
	}
	user, _ := v[0].(string)
	created, err1 := micros(v[1])
	seen, err2 := micros(v[2])
	if user == "" || err1 != nil || err2 != nil {
		return "", nil
	}
	now := s.now()
	if adminui.Expired(created, seen, now) {
		return "", s.del(ctx, k)
	}
	_, err = s.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.HSet(ctx, k, "seen", strconv.FormatInt(now.UnixMicro(), 10))
		p.Expire(ctx, k, ttl(created, now))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("touch session: %w", err)
	}
	return user, nil
}

func micros(v any) (time.Time, error) {
	s, _ := v.(string)
	n, err := strconv.ParseInt(s, 10, 64)
	return time.UnixMicro(n), err
}

// Delete ends a session.
func (s *Store) Delete(ctx context.Context, raw string) error {
	if raw == "" {
		return nil
	}
	return s.del(ctx, s.key(raw))
}

func (s *Store) del(ctx context.Context, k string) error {
	if err := s.c.Del(ctx, k).Err(); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// Close closes the client when it is the store's own (Config.CloseClient).
func (s *Store) Close() error {
	if s.closeClient {
		return s.c.Close()
	}
	return nil
}
