package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"net/netip"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/limits"
)

// DefaultMaxEntries is the default bound on the client keys a Guard keeps.
const DefaultMaxEntries = 65_536

// shards splits a Guard's table so that concurrent requests from different
// addresses rarely wait for each other.
const shards = 16

// evictScan is how many least recently used entries eviction looks through
// for one that is not blocked.
const evictScan = 8

// GuardConfig configures NewGuard.
type GuardConfig struct {
	// Rules are the guard's thresholds and windows; zero fields take the
	// specification's values.
	Rules limits.GuardConfig
	// MaxEntries bounds the client keys kept (see the package doc).
	// Default DefaultMaxEntries (about 36 MB when full: some 550 bytes an
	// entry with the default rules).
	MaxEntries int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Guard is the in-process limits.Guard. It starts no goroutine and needs no
// Close.
type Guard struct {
	rules    limits.GuardConfig
	now      func() time.Time
	window   int64 // milliseconds, as every time below
	blockFor int64
	day      int64
	bucket   int64
	seed     maphash.Seed
	perShard int
	shards   [shards]shard
}

var _ limits.Guard = (*Guard)(nil)

type shard struct {
	mu   sync.Mutex
	m    map[netip.Prefix]*entry
	head *entry // most recently used
	tail *entry // least recently used
}

// entry is one client key's state.
type entry struct {
	key        netip.Prefix
	prev, next *entry
	// recent is a ring of the times of the latest admitted failures; when
	// full, recent[next] is the oldest.
	recent []int64
	count  int // entries used in recent
	pos    int // index of the next write in recent
	// buckets count attempts per bucket of the day window, fails the
	// admitted failures among them; top is the bucket index of the newest,
	// total and failTotal their sums.
	buckets      []uint32
	fails        []uint32
	top          int64
	total        int
	failTotal    int
	blockedUntil int64
	alertedUntil int64
}

// NewGuard returns an in-process guard.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	cfg.Rules.SetDefaults()
	if err := cfg.Rules.Validate(); err != nil {
		return nil, fmt.Errorf("brute-force guard: %w", err)
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxEntries < 0 {
		return nil, fmt.Errorf("brute-force guard: MaxEntries %d is negative", cfg.MaxEntries)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &Guard{
		rules:    cfg.Rules,
		now:      cfg.Now,
		window:   cfg.Rules.Window.Milliseconds(),
		blockFor: cfg.Rules.BlockFor.Milliseconds(),
		day:      cfg.Rules.DayWindow.Milliseconds(),
		bucket:   cfg.Rules.Bucket().Milliseconds(),
		seed:     maphash.MakeSeed(),
		perShard: (cfg.MaxEntries + shards - 1) / shards,
	}
	for i := range g.shards {
		g.shards[i].m = make(map[netip.Prefix]*entry)
	}
	return g, nil
}

// Len returns the number of client keys held.
func (g *Guard) Len() int {
	n := 0
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Cap returns the most client keys the guard holds.
func (g *Guard) Cap() int { return g.perShard * shards }

func (g *Guard) shard(k netip.Prefix) *shard {
	return &g.shards[maphash.Comparable(g.seed, k)%shards]
}

// Check implements limits.Guard.
func (g *Guard) Check(_ context.Context, ip netip.Addr) (limits.Verdict, error) {
	k := limits.ClientKey(ip)
	now := g.now().UnixMilli()
	s := g.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e == nil {
		return limits.Verdict{Allowed: true}, nil
	}
	g.advance(e, now)
	code, retry := g.refusal(e, now)
	if code == "" {
		if g.idle(e, now) {
			s.remove(e)
			return limits.Verdict{Allowed: true}, nil
		}
		s.touch(e)
		return limits.Verdict{Allowed: true, Failures: e.total > 0}, nil
	}
	s.touch(e)
	return g.record(e, now, code, retry), nil
}

// Fail implements limits.Guard.
func (g *Guard) Fail(_ context.Context, ip netip.Addr) (limits.Verdict, error) {
	k := limits.ClientKey(ip)
	now := g.now().UnixMilli()
	s := g.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e == nil {
		e = g.insert(s, k, now)
	} else {
		s.touch(e)
	}
	g.advance(e, now)
	code, retry := g.refusal(e, now)
	return g.record(e, now, code, retry), nil
}

// Succeed implements limits.Guard.
func (g *Guard) Succeed(_ context.Context, ip netip.Addr) error {
	k := limits.ClientKey(ip)
	now := g.now().UnixMilli()
	s := g.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e == nil {
		return nil
	}
	if e.blockedUntil <= now {
		s.remove(e)
		return nil
	}
	e.count, e.pos, e.total, e.failTotal, e.alertedUntil = 0, 0, 0, 0, 0
	clear(e.buckets)
	clear(e.fails)
	return nil
}

// refusal returns why e is refused now, if it is, and for how long.
func (g *Guard) refusal(e *entry, now int64) (string, int64) {
	if e.blockedUntil > now {
		return limits.CodeIPBlocked, e.blockedUntil - now
	}
	if e.count == len(e.recent) {
		if oldest := e.recent[e.pos]; oldest > now-g.window {
			return limits.CodeTooManyFailedAttempts, oldest + g.window - now
		}
	}
	return "", 0
}

// record counts an attempt whose refusal (if any) is code, and returns the
// verdict on it. Only an admitted failure (code "") counts towards the
// block; every attempt counts towards the alert.
func (g *Guard) record(e *entry, now int64, code string, retry int64) limits.Verdict {
	slot := e.top % int64(len(e.buckets))
	if code == "" {
		e.recent[e.pos] = now
		e.pos = (e.pos + 1) % len(e.recent)
		e.count = min(e.count+1, len(e.recent))
		e.fails[slot]++
		e.failTotal++
	}
	e.buckets[slot]++
	e.total++
	v := limits.Verdict{Allowed: code == "", Failures: true}
	if code == "" && e.blockedUntil <= now && e.failTotal >= g.rules.BlockAt {
		e.blockedUntil = now + g.blockFor
	}
	if e.total >= g.rules.AlertAt && e.alertedUntil <= now {
		e.alertedUntil = now + g.day
		v.Alert = true
	}
	if code != "" {
		v.Code, v.RetryAfter = code, time.Duration(retry)*time.Millisecond
	}
	return v
}

// advance moves e's day buckets to now, dropping the buckets that left the
// window. The count keeps DayBuckets+1 buckets: the current one and the
// DayBuckets before it, so it covers at least DayWindow. A clock that went
// back counts in the newest bucket.
func (g *Guard) advance(e *entry, now int64) {
	b := now / g.bucket
	switch {
	case e.total == 0:
		e.top = b
	case b <= e.top:
	case b-e.top >= int64(len(e.buckets)):
		clear(e.buckets)
		clear(e.fails)
		e.total, e.failTotal = 0, 0
		e.top = b
	default:
		for i := e.top + 1; i <= b; i++ {
			j := i % int64(len(e.buckets))
			e.total -= int(e.buckets[j])
			e.failTotal -= int(e.fails[j])
			e.buckets[j], e.fails[j] = 0, 0
		}
		e.top = b
	}
}

// idle reports whether e holds nothing that matters any more.
func (g *Guard) idle(e *entry, now int64) bool {
	return e.total == 0 && e.blockedUntil <= now && e.alertedUntil <= now
}

// insert adds a fresh entry for k, evicting one when the shard is full.
func (g *Guard) insert(s *shard, k netip.Prefix, now int64) *entry {
	if len(s.m) >= g.perShard {
		victim := s.tail
		for e, i := s.tail, 0; e != nil && i < evictScan; e, i = e.prev, i+1 {
			if e.blockedUntil <= now {
				victim = e
				break
			}
		}
		if victim != nil {
			s.remove(victim)
		}
	}
	e := &entry{
		key:     k,
		recent:  make([]int64, g.rules.FailuresPerWindow),
		buckets: make([]uint32, g.rules.DayBuckets+1),
		fails:   make([]uint32, g.rules.DayBuckets+1),
	}
	s.m[k] = e
	s.pushFront(e)
	return e
}

func (s *shard) pushFront(e *entry) {
	e.prev, e.next = nil, s.head
	if s.head != nil {
		s.head.prev = e
	}
	s.head = e
	if s.tail == nil {
		s.tail = e
	}
}

func (s *shard) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (s *shard) touch(e *entry) {
	if s.head != e {
		s.unlink(e)
		s.pushFront(e)
	}
}

func (s *shard) remove(e *entry) {
	s.unlink(e)
	delete(s.m, e.key)
}
