package vault

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// Cache is a Vault decorator that keeps up to a fixed number of unwrapped
// data keys in memory, least recently used first out, so that hot subjects
// skip the store and the unwrap. Only keys are cached: "not found" and
// "shredded" answers always come from the inner vault.
//
// While Shred or ShredShop runs, lookups of the subjects concerned bypass
// the cache, so callers see exactly what the inner vault says (once it
// answers ErrShredded it never answers with the key again); when the shred
// is done their keys are evicted, and a lookup that raced with the shred
// never re-inserts the old key. Within one process this gives the same
// answers as the inner vault. Another process's shred is seen only once the
// key leaves this cache, so every process that shreds must do it through
// its own Cache (or the deployment must accept that window).
//
// Evicted keys are zeroed. Methods are safe for concurrent use.
type Cache struct {
	inner Vault
	size  int

	mu      sync.Mutex
	lru     *list.List                          // of *cacheEntry; front is most recent
	entries map[string]map[string]*list.Element // shop -> subject -> element
	// epoch counts shred starts and ends. A lookup that missed remembers
	// the epoch it saw and stores the key only if no shred began or ended
	// while it asked the inner vault: the key it got may be the one being
	// shredded.
	epoch uint64
	// shredding counts the shreds running per subject and per shop; their
	// subjects bypass the cache meanwhile.
	shredding     map[[2]string]int
	shreddingShop map[string]int
}

type cacheEntry struct {
	shop, subject string
	key           []byte
}

// NewCache wraps v with a cache of at most size keys. A size of zero or less
// disables caching: every call goes to v. The Cache owns v: Close closes it.
func NewCache(v Vault, size int) *Cache {
	return &Cache{
		inner:   v,
		size:    size,
		lru:     list.New(),
		entries: make(map[string]map[string]*list.Element),

		shredding:     make(map[[2]string]int),
		shreddingShop: make(map[string]int),
	}
}

// DataKey returns the cached key of (shop, subject), or asks the inner vault
// and caches what it returns. The returned slice is the caller's own copy.
func (c *Cache) DataKey(ctx context.Context, shop, subject string, create bool) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	if c.size <= 0 {
		return c.inner.DataKey(ctx, shop, subject, create)
	}
	c.mu.Lock()
	if c.shreddingShop[shop] > 0 || c.shredding[[2]string{shop, subject}] > 0 {
		c.mu.Unlock()
		return c.inner.DataKey(ctx, shop, subject, create)
	}
	if el, ok := c.entries[shop][subject]; ok {
		c.lru.MoveToFront(el)
		key := append([]byte(nil), el.Value.(*cacheEntry).key...)
		c.mu.Unlock()
		return key, nil
	}
	epoch := c.epoch
	c.mu.Unlock()

	key, err := c.inner.DataKey(ctx, shop, subject, create)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.epoch == epoch {
		c.add(shop, subject, append([]byte(nil), key...))
	}
	c.mu.Unlock()
	return key, nil
}

// Shred shreds the subject in the inner vault. Its key is evicted before
// and after, even when the inner vault fails, since the shred may have
// happened.
func (c *Cache) Shred(ctx context.Context, shop, subject string) error {
	id := [2]string{shop, subject}
	c.mu.Lock()
	c.shredding[id]++
	c.evict(shop, subject)
	c.mu.Unlock()

	err := c.inner.Shred(ctx, shop, subject)

	c.mu.Lock()
	if c.shredding[id]--; c.shredding[id] == 0 {
		delete(c.shredding, id)
	}
	c.evict(shop, subject)
	c.mu.Unlock()
	return err
}

// ShredShop shreds the shop in the inner vault. Every cached key of the
// shop is evicted before and after, whatever the outcome.
func (c *Cache) ShredShop(ctx context.Context, shop string) error {
	c.mu.Lock()
	c.shreddingShop[shop]++
	c.evictShop(shop)
	c.mu.Unlock()

	err := c.inner.ShredShop(ctx, shop)

	c.mu.Lock()
	if c.shreddingShop[shop]--; c.shreddingShop[shop] == 0 {
		delete(c.shreddingShop, shop)
	}
	c.evictShop(shop)
	c.mu.Unlock()
	return err
}

// Close empties the cache and closes the inner vault.
func (c *Cache) Close() error {
	c.mu.Lock()
	c.epoch++
	for c.lru.Len() > 0 {
		c.remove(c.lru.Back())
	}
	c.mu.Unlock()
	return c.inner.Close()
}

// evict drops the subject's key and moves the epoch on. The caller holds
// c.mu.
func (c *Cache) evict(shop, subject string) {
	c.epoch++
	if el, ok := c.entries[shop][subject]; ok {
		c.remove(el)
	}
}

// evictShop drops every key of the shop and moves the epoch on. The caller
// holds c.mu.
func (c *Cache) evictShop(shop string) {
	c.epoch++
	for _, el := range c.entries[shop] {
		c.remove(el)
	}
}

// add stores key, evicting the least recently used entries beyond size.
// The caller holds c.mu and owns key.
func (c *Cache) add(shop, subject string, key []byte) {
	if el, ok := c.entries[shop][subject]; ok {
		// Another lookup stored it first; both got the same key from the
		// inner vault, so keep the one already there.
		c.lru.MoveToFront(el)
		clear(key)
		return
	}
	subjects := c.entries[shop]
	if subjects == nil {
		subjects = make(map[string]*list.Element)
		c.entries[shop] = subjects
	}
	subjects[subject] = c.lru.PushFront(&cacheEntry{shop: shop, subject: subject, key: key})
	for c.lru.Len() > c.size {
		c.remove(c.lru.Back())
	}
}

// remove drops el from the list and the index and zeroes its key. The
// caller holds c.mu.
func (c *Cache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	clear(e.key)
	subjects := c.entries[e.shop]
	delete(subjects, e.subject)
	if len(subjects) == 0 {
		delete(c.entries, e.shop)
	}
}

var _ Vault = (*Cache)(nil)
