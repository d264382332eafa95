// Package gencache is a read-through cache in front of a read model that is
// dropped whole when the read model changes. A lookup that overlapped an
// Invalidate does not fill the cache, so a value read before a change never
// outlives it.
package gencache

import "sync"

// Cache maps keys to values loaded on a miss. Errors are not cached. It is
// safe for concurrent use.
type Cache[K comparable, V any] struct {
	max int

	mu    sync.RWMutex
	gen   uint64
	items map[K]V
}

// New returns a cache of at most max entries (it is cleared when full).
func New[K comparable, V any](max int) *Cache[K, V] {
	return &Cache[K, V]{max: max, items: make(map[K]V)}
}

// Get returns the value of key, loading it on a miss.
func (c *Cache[K, V]) Get(key K, load func() (V, error)) (V, error) {
	c.mu.RLock()
	v, hit := c.items[key]
	gen := c.gen
	c.mu.RUnlock()
	if hit {
		return v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.items) >= c.max {
			c.items = make(map[K]V)
		}
		c.items[key] = v
	}
	c.mu.Unlock()
	return v, nil
}

// Invalidate drops every entry.
func (c *Cache[K, V]) Invalidate() {
	c.mu.Lock()
	c.gen++
	c.items = make(map[K]V)
	c.mu.Unlock()
}
