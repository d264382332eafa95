package vault_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/vaulttest"
)

// memVault is an in-memory vault for testing the Cache: it passes the
// contract itself, counts DataKey calls, and can hold a DataKey call until
// the test releases it.
type memVault struct {
	mu       sync.Mutex
	keys     map[[2]string][]byte
	shredded map[[2]string]bool
	shops    map[string]bool
	calls    int
	closed   bool

	// When hold is set, DataKey reports on entered after reading the key
	// and waits for release before returning it.
	hold     bool
	entered  chan struct{}
	released chan struct{}
	// When holdShred is set, Shred and ShredShop report on entered and wait
	// for release twice: before shredding and after.
	holdShred bool
}

func newMemVault() *memVault {
	return &memVault{keys: map[[2]string][]byte{}, shredded: map[[2]string]bool{}, shops: map[string]bool{}}
}

func (m *memVault) DataKey(ctx context.Context, shop, subject string, create bool) ([]byte, error) {
	if err := vault.ValidateID(shop, subject); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.calls++
	id := [2]string{shop, subject}
	var key []byte
	var err error
	switch {
	case m.shops[shop] || m.shredded[id]:
		err = vault.ErrShredded
	case m.keys[id] != nil:
		key = append([]byte(nil), m.keys[id]...)
	case !create:
		err = vault.ErrNotFound
	default:
		m.keys[id] = vault.NewKey()
		key = append([]byte(nil), m.keys[id]...)
	}
	hold := m.hold
	m.mu.Unlock()
	m.waitIf(hold)
	return key, err
}

func (m *memVault) Shred(ctx context.Context, shop, subject string) error {
	if err := vault.ValidateID(shop, subject); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.shred(func() {
		delete(m.keys, [2]string{shop, subject})
		m.shredded[[2]string{shop, subject}] = true
	})
	return nil
}

// shred runs fn under m.mu; when holdShred is set, it waits for the test
// before and after (see waitIf).
func (m *memVault) shred(fn func()) {
	m.mu.Lock()
	hold := m.holdShred
	m.mu.Unlock()
	m.waitIf(hold)
	m.mu.Lock()
	fn()
	m.mu.Unlock()
	m.waitIf(hold)
}

func (m *memVault) waitIf(hold bool) {
	if hold {
		m.entered <- struct{}{}
		<-m.released
	}
}

func (m *memVault) ShredShop(ctx context.Context, shop string) error {
	if err := vault.ValidateShop(shop); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.shred(func() {
		m.shops[shop] = true
		for id := range m.keys {
			if id[0] == shop {
				delete(m.keys, id)
			}
		}
	})
	return nil
}

func (m *memVault) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

func (m *memVault) callCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

func TestMemVaultContract(t *testing.T) {
	vaulttest.Run(t, func(t *testing.T) vault.Vault { return newMemVault() })
}

func TestCacheContract(t *testing.T) {
	for _, size := range []int{0, 1, 3, 1000} {
		t.Run(fmt.Sprintf("size%d", size), func(t *testing.T) {
			vaulttest.Run(t, func(t *testing.T) vault.Vault { return vault.NewCache(newMemVault(), size) })
		})
	}
}

func TestCacheHitSkipsInner(t *testing.T) {
	inner := newMemVault()
	c := vault.NewCache(inner, 10)
	ctx := context.Background()
	k1, err := c.DataKey(ctx, "shop_a", "cus_1", true)
	if err != nil {
		t.Fatal(err)
	}
	before := inner.callCount()
	for range 5 {
		k, err := c.DataKey(ctx, "shop_a", "cus_1", false)
		if err != nil || !bytes.Equal(k, k1) {
			t.Fatalf("cached DataKey: %v", err)
		}
	}
	if got := inner.callCount() - before; got != 0 {
		t.Fatalf("inner vault called %d times for a cached key", got)
	}
}

func TestCacheDoesNotCacheFailures(t *testing.T) {
	inner := newMemVault()
	c := vault.NewCache(inner, 10)
	ctx := context.Background()
	for range 3 {
		if _, err := c.DataKey(ctx, "shop_a", "cus_1", false); !errors.Is(err, vault.ErrNotFound) {
			t.Fatalf("%v, want ErrNotFound", err)
		}
	}
	if got := inner.callCount(); got != 3 {
		t.Fatalf("inner called %d times, want 3: not-found answers must not be cached", got)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	inner := newMemVault()
	c := vault.NewCache(inner, 2)
	ctx := context.Background()
	get := func(subject string) {
		t.Helper()
		if _, err := c.DataKey(ctx, "shop_a", subject, true); err != nil {
			t.Fatal(err)
		}
	}
	get("a")
	get("b")
	get("a") // a is now more recent than b
	get("c") // evicts b
	n := inner.callCount()
	get("a")
	get("c")
	if inner.callCount() != n {
		t.Fatal("a or c was evicted; b was the least recently used")
	}
	get("b")
	if inner.callCount() != n+1 {
		t.Fatal("b was still cached beyond the size")
	}
}

func TestCacheShredEvicts(t *testing.T) {
	inner := newMemVault()
	c := vault.NewCache(inner, 10)
	ctx := context.Background()
	for _, id := range [][2]string{{"shop_a", "cus_1"}, {"shop_a", "cus_2"}, {"shop_a", "shop_a"}, {"shop_b", "cus_1"}} {
		if _, err := c.DataKey(ctx, id[0], id[1], true); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Shred(ctx, "shop_a", "cus_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DataKey(ctx, "shop_a", "cus_1", false); !errors.Is(err, vault.ErrShredded) {
		t.Fatalf("after Shred: %v, want ErrShredded", err)
	}
	n := inner.callCount()
	if _, err := c.DataKey(ctx, "shop_a", "cus_2", false); err != nil {
		t.Fatal(err)
	}
	if inner.callCount() != n {
		t.Fatal("Shred evicted another subject")
	}

	if err := c.ShredShop(ctx, "shop_a"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"cus_2", "shop_a"} {
		if _, err := c.DataKey(ctx, "shop_a", s, false); !errors.Is(err, vault.ErrShredded) {
			t.Fatalf("after ShredShop, %s: %v, want ErrShredded", s, err)
		}
	}
	n = inner.callCount()
	if _, err := c.DataKey(ctx, "shop_b", "cus_1", false); err != nil {
		t.Fatal(err)
	}
	if inner.callCount() != n {
		t.Fatal("ShredShop evicted another shop's key")
	}
}

// TestCacheMissRacingShred holds a lookup inside the inner vault until a
// shred of the same subject has completed: the old key it then returns must
// not be cached, or the cache would serve a shredded key.
func TestCacheMissRacingShred(t *testing.T) {
	for _, byShop := range []bool{false, true} {
		t.Run(fmt.Sprintf("byShop=%v", byShop), func(t *testing.T) {
			inner := newMemVault()
			c := vault.NewCache(inner, 10)
			ctx := context.Background()
			if _, err := inner.DataKey(ctx, "shop_a", "cus_1", true); err != nil {
				t.Fatal(err)
			}
			inner.mu.Lock()
			inner.hold = true
			inner.entered = make(chan struct{})
			inner.released = make(chan struct{})
			inner.mu.Unlock()

			done := make(chan error, 1)
			go func() { // exits once the held lookup is released
				_, err := c.DataKey(ctx, "shop_a", "cus_1", false)
				done <- err
			}()
			<-inner.entered // the lookup has read the key and is held
			inner.mu.Lock()
			inner.hold = false
			inner.mu.Unlock()
			var err error
			if byShop {
				err = c.ShredShop(ctx, "shop_a")
			} else {
				err = c.Shred(ctx, "shop_a", "cus_1")
			}
			if err != nil {
				t.Fatal(err)
			}
			close(inner.released)
			if err := <-done; err != nil {
				t.Fatalf("held lookup: %v", err)
			}
			if _, err := c.DataKey(ctx, "shop_a", "cus_1", false); !errors.Is(err, vault.ErrShredded) {
				t.Fatalf("after shred: %v, want ErrShredded (the cache kept the racing lookup's key)", err)
			}
		})
	}
}

// TestCacheDuringShred holds a shred before and after the inner vault
// commits it. Before, a lookup gets the key from the inner vault; after, the
// cache must answer as the inner vault does (shredded), not with a key it
// held or picked up during the shred, so that no caller sees ErrShredded
// and then the key.
func TestCacheDuringShred(t *testing.T) {
	for _, byShop := range []bool{false, true} {
		t.Run(fmt.Sprintf("byShop=%v", byShop), func(t *testing.T) {
			inner := newMemVault()
			c := vault.NewCache(inner, 10)
			ctx := context.Background()
			key, err := c.DataKey(ctx, "shop_a", "cus_1", true)
			if err != nil {
				t.Fatal(err)
			}
			inner.mu.Lock()
			inner.holdShred = true
			inner.entered = make(chan struct{})
			inner.released = make(chan struct{})
			inner.mu.Unlock()

			done := make(chan error, 1)
			go func() { // exits once both holds of the shred are released
				if byShop {
					done <- c.ShredShop(ctx, "shop_a")
				} else {
					done <- c.Shred(ctx, "shop_a", "cus_1")
				}
			}()
			<-inner.entered // shred started, not committed in the inner vault
			if k, err := c.DataKey(ctx, "shop_a", "cus_1", false); err != nil || !bytes.Equal(k, key) {
				t.Fatalf("before the inner shred: %v", err)
			}
			inner.released <- struct{}{}
			<-inner.entered // committed in the inner vault, not returned yet
			for range 2 {
				if _, err := c.DataKey(ctx, "shop_a", "cus_1", false); !errors.Is(err, vault.ErrShredded) {
					t.Fatalf("during the shred, after the inner commit: %v, want ErrShredded", err)
				}
			}
			inner.released <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, err := c.DataKey(ctx, "shop_a", "cus_1", true); !errors.Is(err, vault.ErrShredded) {
				t.Fatalf("after the shred: %v, want ErrShredded", err)
			}
		})
	}
}

func TestCacheCloseClosesInner(t *testing.T) {
	inner := newMemVault()
	c := vault.NewCache(inner, 10)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	if !inner.closed {
		t.Fatal("inner vault not closed")
	}
}

func BenchmarkMemVault(b *testing.B) {
	vaulttest.Bench(b, func(b *testing.B) vault.Vault { return newMemVault() })
}

func BenchmarkCache(b *testing.B) {
	vaulttest.Bench(b, func(b *testing.B) vault.Vault { return vault.NewCache(newMemVault(), 1024) })
}
