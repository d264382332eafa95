package vaulttest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cgp-platform/cgp/vault"
)

// Backend is an adapter's vault on new, empty storage, with what
// RunBackend needs besides: a way to open the storage again and a way to
// look into it behind the vault's back.
type Backend struct {
	// Vault is the new vault. The suite closes it.
	Vault vault.Vault
	// Reopen opens the same storage again as a new vault. The suite closes
	// Vault before it calls Reopen, and closes every vault Reopen returns.
	Reopen func() vault.Vault
	// StoredKeys reads the storage directly and counts the wrapped keys it
	// holds (tombstones do not count): the subject's in shop, every
	// subject's in shop when subject is "", every shop's when shop is ""
	// too. It fails t when it cannot read.
	StoredKeys func(t *testing.T, shop, subject string) int
	// Created, when not nil, reports how many keys Vault has created since
	// it was opened.
	Created func() uint64
}

// BackendOpener returns a Backend on new storage for one test, and
// registers in t.Cleanup whatever removes that storage.
type BackendOpener func(t *testing.T) Backend

// RunBackend runs RunPersistent on the Backend's vaults, then the tests
// that check what the storage holds while many callers create keys and
// shred them: every caller of a subject gets its one key, a key is never
// created beside a tombstone, and no key is left stored once a shred has
// returned.
func RunBackend(t *testing.T, open BackendOpener) {
	t.Helper()
	RunPersistent(t, func(t *testing.T) (vault.Vault, func() vault.Vault) {
		b := open(t)
		return b.Vault, b.Reopen
	})
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, b Backend)
	}{
		{"ConcurrentCreatesManySubjects", testConcurrentCreatesManySubjects},
		{"CreateRacingShred", testCreateRacingShred},
		{"ShredShopRacingCreatesLeavesNoKeys", testShredShopRacingCreatesLeavesNoKeys},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

func closeVault(t *testing.T, v vault.Vault) {
	t.Helper()
	if err := v.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// testConcurrentCreatesManySubjects has 64 callers create 200 subjects of
// two shops, each subject asked for by several callers in different
// orders: every caller gets the one key of a subject, subjects never share
// a key, each has one stored key, and the keys survive a reopen.
func testConcurrentCreatesManySubjects(t *testing.T, b Backend) {
	v := b.Vault
	ctx := ctxFor(t)
	const (
		callers  = 64
		subjects = 200
		perCall  = 50
	)
	type id struct{ shop, subject string }
	ids := make([]id, subjects)
	for i := range ids {
		ids[i] = id{fmt.Sprintf("shop_%d", i%2), fmt.Sprintf("cus_%d", i)}
	}
	got := make([]map[id][]byte, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range callers {
		got[c] = map[id][]byte{}
		rng := rand.New(rand.NewPCG(uint64(c), 7))
		wg.Add(1)
		go func() { // exits after its calls or on an error
			defer wg.Done()
			<-start
			for range perCall {
				s := ids[rng.IntN(subjects)]
				k, err := v.DataKey(ctx, s.shop, s.subject, true)
				if err != nil {
					t.Errorf("%v: %v", s, err)
					return
				}
				if prev, ok := got[c][s]; ok && !bytes.Equal(prev, k) {
					t.Errorf("%v: one caller got two keys", s)
					return
				}
				got[c][s] = k
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		closeVault(t, v)
		t.FailNow()
	}
	keys := map[id][]byte{}
	owner := map[string]id{}
	for c := range callers {
		for s, k := range got[c] {
			if prev, ok := keys[s]; ok && !bytes.Equal(prev, k) {
				closeVault(t, v)
				t.Fatalf("%v: callers got different keys", s)
			}
			keys[s] = k
			if o, ok := owner[string(k)]; ok && o != s {
				closeVault(t, v)
				t.Fatalf("%v and %v share a key", o, s)
			}
			owner[string(k)] = s
		}
	}
	if b.Created != nil {
		if n := b.Created(); n != uint64(len(keys)) {
			t.Errorf("stats: %d keys created, want %d", n, len(keys))
		}
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if n := b.StoredKeys(t, "", ""); n != len(keys) {
		t.Fatalf("%d keys stored, want %d", n, len(keys))
	}
	v2 := b.Reopen()
	defer closeVault(t, v2)
	for s, k := range keys {
		if k2, err := v2.DataKey(ctx, s.shop, s.subject, false); err != nil || !bytes.Equal(k2, k) {
			t.Fatalf("%v after reopen: %v", s, err)
		}
	}
}

// testCreateRacingShred states the guarantee a create racing a shred has,
// and checks it: DataKey returns a key only if that key was committed
// before the shred, which then deleted it. So every caller gets the same
// key or ErrShredded; a call that starts after Shred (or ShredShop) has
// returned always gets ErrShredded; and once the shred has returned the
// storage holds no key of the subject: no create slipped in after it. A
// call that overlaps the shred may still return the key the shred deleted,
// as a read that started just before the shred would.
func testCreateRacingShred(t *testing.T, b Backend) {
	v := b.Vault
	defer closeVault(t, v)
	ctx := ctxFor(t)
	const (
		rounds  = 30
		callers = 16
	)
	var keyFirst, shredFirst int
	for r := range rounds {
		byShop := r%3 == 2
		shop := "shop_a"
		if byShop {
			shop = fmt.Sprintf("shop_r%d", r)
		}
		subject := fmt.Sprintf("cus_%d", r)

		var shredReturned atomic.Bool
		var calls atomic.Int64
		start := make(chan struct{})
		var mu sync.Mutex
		var keys [][]byte
		var wg sync.WaitGroup
		for c := range callers {
			wg.Add(1)
			go func() { // exits once it has seen ErrShredded, or on an error
				defer wg.Done()
				<-start
				sawShredded := false
				for i := 0; ; i++ {
					after := shredReturned.Load()
					calls.Add(1)
					// Odd callers also create other new subjects of the shop,
					// so that the batches racing the shred hold several.
					s := subject
					if c%2 == 1 && i%2 == 1 {
						s = fmt.Sprintf("%s_other_%d_%d", subject, c, i)
					}
					k, err := v.DataKey(ctx, shop, s, true)
					switch {
					case errors.Is(err, vault.ErrShredded):
						if s == subject {
							sawShredded = true
						}
					case err != nil:
						t.Errorf("round %d: %s/%s: %v", r, shop, s, err)
						return
					case s != subject:
						if after && byShop {
							t.Errorf("round %d: %s/%s: created after ShredShop returned", r, shop, s)
							return
						}
						continue
					case after:
						t.Errorf("round %d: %s/%s: key returned to a call that started after the shred returned", r, shop, s)
						return
					case sawShredded:
						t.Errorf("round %d: %s/%s: key returned after ErrShredded", r, shop, s)
						return
					default:
						mu.Lock()
						keys = append(keys, k)
						mu.Unlock()
					}
					if sawShredded && after {
						return
					}
				}
			}()
		}
		close(start)
		// Shred at once, or once some calls have started, so that rounds
		// differ in which of the creates and the shred win.
		for wait := int64(r%4) * callers / 2; calls.Load() < wait && ctx.Err() == nil; {
			runtime.Gosched()
		}
		var err error
		if byShop {
			err = v.ShredShop(ctx, shop)
		} else {
			err = v.Shred(ctx, shop, subject)
		}
		shredReturned.Store(true)
		if err != nil {
			t.Errorf("round %d: shred: %v", r, err)
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		for i := range keys {
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: callers got %d different keys: one was created after the shred", r, len(keys))
			}
		}
		if len(keys) > 0 {
			keyFirst++
		} else {
			shredFirst++
		}
		s := subject
		if byShop {
			s = ""
		}
		if left := b.StoredKeys(t, shop, s); left != 0 {
			t.Fatalf("round %d: %d keys of the shredded subject or shop left after the shred returned", r, left)
		}
	}
	t.Logf("%d rounds where a key was returned before the shred, %d where the shred came first", keyFirst, shredFirst)
}

// testShredShopRacingCreatesLeavesNoKeys creates keys of new subjects in a
// shop from several goroutines while the shop is shredded: afterwards no
// key of the shop may be left stored, not even one whose creation
// overlapped the shred (reads would refuse it, but it must not stay).
func testShredShopRacingCreatesLeavesNoKeys(t *testing.T, b Backend) {
	v := b.Vault
	defer closeVault(t, v)
	ctx := ctxFor(t)
	const (
		rounds  = 10
		callers = 8
	)
	for r := range rounds {
		shop := fmt.Sprintf("shop_%d", r)
		created := make(chan struct{}, 1)
		var wg sync.WaitGroup
		for c := range callers {
			wg.Add(1)
			go func() { // exits when the shop is shredded or on an error
				defer wg.Done()
				for i := 0; ; i++ {
					_, err := v.DataKey(ctx, shop, fmt.Sprintf("cus_%d_%d", c, i), true)
					if errors.Is(err, vault.ErrShredded) {
						return
					}
					if err != nil {
						t.Errorf("create: %v", err)
						return
					}
					select {
					case created <- struct{}{}:
					default:
					}
				}
			}()
		}
		select {
		case <-created:
		case <-ctx.Done():
			// The callers fail on ctx too and return.
			wg.Wait()
			t.Fatal("no key created before the deadline")
		}
		err := v.ShredShop(ctx, shop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if left := b.StoredKeys(t, shop, ""); left != 0 {
			t.Fatalf("round %d: %d wrapped keys of the shredded shop left stored", r, left)
		}
	}
}
