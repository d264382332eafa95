package vaulttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/vault"
)

// Opener returns a new, empty vault for one test. The suite closes it; the
// opener should register in t.Cleanup whatever removes the storage behind it
// (a temporary directory, a database schema).
type Opener func(t *testing.T) vault.Vault

// PersistentOpener is an Opener that also returns reopen, which opens the
// same storage again as a new vault. The suite closes the first vault before
// it calls reopen, and closes every reopened vault.
type PersistentOpener func(t *testing.T) (v vault.Vault, reopen func() vault.Vault)

// Run checks the vault.Vault contract against fresh vaults from open.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, v vault.Vault)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"MissingIsNotFound", testMissingIsNotFound},
		{"KeysDiffer", testKeysDiffer},
		{"ReturnedKeyIsCallersCopy", testReturnedKeyIsCallersCopy},
		{"ConcurrentCreateSameSubject", testConcurrentCreate},
		{"ShredForever", testShredForever},
		{"ShredTwice", testShredTwice},
		{"ShredNeverCreatedLeavesTombstone", testShredNeverCreated},
		{"ShredTouchesOnlyItsSubject", testShredIsolation},
		{"ShredShop", testShredShop},
		{"ShredShopNeverSeen", testShredShopNeverSeen},
		{"ShredRacingCreates", testShredRacingCreates},
		{"InvalidIDs", testInvalidIDs},
		{"ContextCanceled", testContextCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := open(t)
			t.Cleanup(func() {
				if err := v.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tc.run(t, v)
		})
	}
}

// RunPersistent runs Run and then checks that keys and tombstones survive a
// Close and a reopen.
func RunPersistent(t *testing.T, open PersistentOpener) {
	t.Helper()
	Run(t, func(t *testing.T) vault.Vault {
		v, _ := open(t)
		return v
	})
	t.Run("ReopenKeepsKeysAndTombstones", func(t *testing.T) {
		testReopen(t, open)
	})
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustKey(t *testing.T, v vault.Vault, shop, subject string, create bool) []byte {
	t.Helper()
	k, err := v.DataKey(ctxFor(t), shop, subject, create)
	if err != nil {
		t.Fatalf("DataKey(%q, %q, create=%v): %v", shop, subject, create, err)
	}
	if len(k) != vault.KeySize {
		t.Fatalf("DataKey(%q, %q): key of %d bytes, want %d", shop, subject, len(k), vault.KeySize)
	}
	return k
}

func wantErr(t *testing.T, v vault.Vault, shop, subject string, create bool, want error) {
	t.Helper()
	k, err := v.DataKey(ctxFor(t), shop, subject, create)
	if !errors.Is(err, want) {
		t.Fatalf("DataKey(%q, %q, create=%v) = %d-byte key, %v; want %v", shop, subject, create, len(k), err, want)
	}
	if k != nil {
		t.Fatalf("DataKey(%q, %q, create=%v) returned a key with error %v", shop, subject, create, err)
	}
}

func mustShred(t *testing.T, v vault.Vault, shop, subject string) {
	t.Helper()
	if err := v.Shred(ctxFor(t), shop, subject); err != nil {
		t.Fatalf("Shred(%q, %q): %v", shop, subject, err)
	}
}

func mustShredShop(t *testing.T, v vault.Vault, shop string) {
	t.Helper()
	if err := v.ShredShop(ctxFor(t), shop); err != nil {
		t.Fatalf("ShredShop(%q): %v", shop, err)
	}
}

func testCreateAndGet(t *testing.T, v vault.Vault) {
	k1 := mustKey(t, v, "shop_a", "cus_1", true)
	if bytes.Equal(k1, make([]byte, vault.KeySize)) {
		t.Fatal("new key is all zeros")
	}
	if k2 := mustKey(t, v, "shop_a", "cus_1", true); !bytes.Equal(k1, k2) {
		t.Fatal("second DataKey with create returned another key")
	}
	if k3 := mustKey(t, v, "shop_a", "cus_1", false); !bytes.Equal(k1, k3) {
		t.Fatal("DataKey without create returned another key")
	}
}

func testMissingIsNotFound(t *testing.T, v vault.Vault) {
	wantErr(t, v, "shop_a", "cus_missing", false, vault.ErrNotFound)
	// Asking must not create it.
	wantErr(t, v, "shop_a", "cus_missing", false, vault.ErrNotFound)
	mustKey(t, v, "shop_a", "cus_other", true)
	wantErr(t, v, "shop_a", "cus_missing", false, vault.ErrNotFound)
	wantErr(t, v, "shop_b", "cus_other", false, vault.ErrNotFound)
}

func testKeysDiffer(t *testing.T, v vault.Vault) {
	pairs := [][2]string{
		{"shop_a", "shop_a"}, {"shop_a", "cus_1"}, {"shop_a", "cus_2"},
		{"shop_b", "shop_b"}, {"shop_b", "cus_1"},
		// Same concatenation, different split: must not share a key.
		{"shop_ab", "c"}, {"shop_a", "bc"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := mustKey(t, v, p[0], p[1], true)
		if prev, dup := seen[string(k)]; dup {
			t.Fatalf("%v and %v got the same key", prev, p)
		}
		seen[string(k)] = p
	}
	for _, p := range pairs {
		k := mustKey(t, v, p[0], p[1], false)
		if got := seen[string(k)]; got != p {
			t.Fatalf("%v now returns the key of %v", p, got)
		}
	}
}

func testReturnedKeyIsCallersCopy(t *testing.T, v vault.Vault) {
	k := mustKey(t, v, "shop_a", "cus_1", true)
	want := append([]byte(nil), k...)
	for i := range k {
		k[i] ^= 0xff
	}
	if got := mustKey(t, v, "shop_a", "cus_1", false); !bytes.Equal(got, want) {
		t.Fatal("changing a returned key changed the stored key")
	}
}

func testConcurrentCreate(t *testing.T, v vault.Vault) {
	ctx := ctxFor(t)
	key := SameKey(t, 32, func(int) ([]byte, error) { return v.DataKey(ctx, "shop_a", "cus_race", true) })
	if k := mustKey(t, v, "shop_a", "cus_race", false); !bytes.Equal(k, key) {
		t.Fatal("stored key differs from the key the creators got")
	}
}

func testShredForever(t *testing.T, v vault.Vault) {
	mustKey(t, v, "shop_a", "cus_1", true)
	mustShred(t, v, "shop_a", "cus_1")
	for range 3 {
		wantErr(t, v, "shop_a", "cus_1", false, vault.ErrShredded)
		wantErr(t, v, "shop_a", "cus_1", true, vault.ErrShredded)
	}
}

func testShredTwice(t *testing.T, v vault.Vault) {
	mustKey(t, v, "shop_a", "cus_1", true)
	mustShred(t, v, "shop_a", "cus_1")
	mustShred(t, v, "shop_a", "cus_1")
	wantErr(t, v, "shop_a", "cus_1", true, vault.ErrShredded)
}

func testShredNeverCreated(t *testing.T, v vault.Vault) {
	mustShred(t, v, "shop_a", "cus_never")
	wantErr(t, v, "shop_a", "cus_never", false, vault.ErrShredded)
	wantErr(t, v, "shop_a", "cus_never", true, vault.ErrShredded)
}

func testShredIsolation(t *testing.T, v vault.Vault) {
	shopKey := mustKey(t, v, "shop_a", "shop_a", true)
	other := mustKey(t, v, "shop_a", "cus_2", true)
	sameSubjectOtherShop := mustKey(t, v, "shop_b", "cus_1", true)
	mustKey(t, v, "shop_a", "cus_1", true)
	mustShred(t, v, "shop_a", "cus_1")
	wantErr(t, v, "shop_a", "cus_1", true, vault.ErrShredded)
	for _, c := range []struct {
		shop, subject string
		want          []byte
	}{
		{"shop_a", "shop_a", shopKey},
		{"shop_a", "cus_2", other},
		{"shop_b", "cus_1", sameSubjectOtherShop},
	} {
		if k := mustKey(t, v, c.shop, c.subject, false); !bytes.Equal(k, c.want) {
			t.Fatalf("shredding shop_a/cus_1 changed the key of %s/%s", c.shop, c.subject)
		}
	}
	mustKey(t, v, "shop_a", "cus_3", true) // the shop still takes new customers
}

func testShredShop(t *testing.T, v vault.Vault) {
	for _, s := range []string{"shop_a", "cus_1", "cus_2"} {
		mustKey(t, v, "shop_a", s, true)
	}
	keep := map[string][]byte{}
	for _, s := range []string{"shop_b", "cus_1", "cus_2"} {
		keep[s] = mustKey(t, v, "shop_b", s, true)
	}
	mustShredShop(t, v, "shop_a")
	for _, s := range []string{"shop_a", "cus_1", "cus_2"} {
		wantErr(t, v, "shop_a", s, false, vault.ErrShredded)
		wantErr(t, v, "shop_a", s, true, vault.ErrShredded)
	}
	// A shredded shop is gone for good: no new subject gets a key either.
	wantErr(t, v, "shop_a", "cus_new", true, vault.ErrShredded)
	wantErr(t, v, "shop_a", "cus_new", false, vault.ErrShredded)
	for s, want := range keep {
		if k := mustKey(t, v, "shop_b", s, false); !bytes.Equal(k, want) {
			t.Fatalf("shredding shop_a changed the key of shop_b/%s", s)
		}
	}
	mustShredShop(t, v, "shop_a") // idempotent
	mustShred(t, v, "shop_a", "cus_1")
	wantErr(t, v, "shop_a", "cus_1", true, vault.ErrShredded)
}

func testShredShopNeverSeen(t *testing.T, v vault.Vault) {
	mustShredShop(t, v, "shop_never")
	wantErr(t, v, "shop_never", "shop_never", true, vault.ErrShredded)
	wantErr(t, v, "shop_never", "cus_1", true, vault.ErrShredded)
}

// testShredRacingCreates shreds subjects while other goroutines keep asking
// for them with create: once Shred has returned, no caller may get a key
// for the subject again, and no caller may see a key after it saw
// ErrShredded.
func testShredRacingCreates(t *testing.T, v vault.Vault) {
	const (
		rounds  = 8
		callers = 4
	)
	ctx := ctxFor(t)
	for r := range rounds {
		subject := fmt.Sprintf("cus_%d", r)
		shop := "shop_a"
		byShop := r%2 == 1 // odd rounds shred the whole shop
		if byShop {
			shop = fmt.Sprintf("shop_r%d", r)
		}
		stop := make(chan struct{})
		gotKey := make(chan struct{}, callers)
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() { // exits when it sees ErrShredded, on an error, or when stop closes
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					k, err := v.DataKey(ctx, shop, subject, true)
					switch {
					case errors.Is(err, vault.ErrShredded):
						// Every later call must say shredded too.
						if k2, err := v.DataKey(ctx, shop, subject, true); !errors.Is(err, vault.ErrShredded) {
							t.Errorf("%s/%s: got a %d-byte key, %v after ErrShredded", shop, subject, len(k2), err)
						}
						return
					case err != nil:
						t.Errorf("%s/%s: %v", shop, subject, err)
						return
					case len(k) != vault.KeySize:
						t.Errorf("%s/%s: key of %d bytes", shop, subject, len(k))
						return
					}
					select {
					case gotKey <- struct{}{}:
					default:
					}
				}
			}()
		}
		select {
		case <-gotKey:
		case <-ctx.Done():
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: no caller got a key: %v", r, ctx.Err())
		}
		var err error
		if byShop {
			err = v.ShredShop(ctx, shop)
		} else {
			err = v.Shred(ctx, shop, subject)
		}
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: shred: %v", r, err)
		}
		k, err := v.DataKey(ctx, shop, subject, true)
		close(stop)
		wg.Wait()
		if !errors.Is(err, vault.ErrShredded) {
			t.Fatalf("round %d: after shred returned: %d-byte key, %v; want ErrShredded", r, len(k), err)
		}
	}
}

func testInvalidIDs(t *testing.T, v vault.Vault) {
	ctx := ctxFor(t)
	long := string(bytes.Repeat([]byte("x"), vault.MaxIDLen+1))
	for _, c := range []struct{ shop, subject string }{
		{"", "cus_1"}, {"shop_a", ""}, {long, "cus_1"}, {"shop_a", long},
		{"shop\x00a", "cus_1"}, {"shop_a", "cus\xff"},
	} {
		if _, err := v.DataKey(ctx, c.shop, c.subject, true); !errors.Is(err, vault.ErrInvalidID) {
			t.Errorf("DataKey(%q, %q): %v, want ErrInvalidID", c.shop, c.subject, err)
		}
		if err := v.Shred(ctx, c.shop, c.subject); !errors.Is(err, vault.ErrInvalidID) {
			t.Errorf("Shred(%q, %q): %v, want ErrInvalidID", c.shop, c.subject, err)
		}
	}
	if err := v.ShredShop(ctx, ""); !errors.Is(err, vault.ErrInvalidID) {
		t.Errorf("ShredShop(\"\"): %v, want ErrInvalidID", err)
	}
	// The longest valid id works.
	maxID := string(bytes.Repeat([]byte("y"), vault.MaxIDLen))
	mustKey(t, v, maxID, maxID, true)
}

func testContextCanceled(t *testing.T, v vault.Vault) {
	mustKey(t, v, "shop_a", "cus_1", true)
	mustKey(t, v, "shop_b", "cus_1", true)

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()

	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{canceled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		if k, err := v.DataKey(c.ctx, "shop_a", "cus_new", true); !errors.Is(err, c.want) || k != nil {
			t.Errorf("DataKey(create) with done context: %d-byte key, %v; want %v", len(k), err, c.want)
		}
		if k, err := v.DataKey(c.ctx, "shop_a", "cus_1", false); !errors.Is(err, c.want) || k != nil {
			t.Errorf("DataKey(existing) with done context: %d-byte key, %v; want %v", len(k), err, c.want)
		}
		if err := v.Shred(c.ctx, "shop_a", "cus_1"); !errors.Is(err, c.want) {
			t.Errorf("Shred with done context: %v, want %v", err, c.want)
		}
		if err := v.ShredShop(c.ctx, "shop_b"); !errors.Is(err, c.want) {
			t.Errorf("ShredShop with done context: %v, want %v", err, c.want)
		}
	}
	// Nothing happened.
	wantErr(t, v, "shop_a", "cus_new", false, vault.ErrNotFound)
	mustKey(t, v, "shop_a", "cus_1", false)
	mustKey(t, v, "shop_b", "cus_1", false)
}

func testReopen(t *testing.T, open PersistentOpener) {
	v, reopen := open(t)
	kept := mustKey(t, v, "shop_a", "cus_keep", true)
	shopKey := mustKey(t, v, "shop_b", "shop_b", true)
	mustKey(t, v, "shop_a", "cus_gone", true)
	mustShred(t, v, "shop_a", "cus_gone")
	mustShred(t, v, "shop_a", "cus_never")
	mustKey(t, v, "shop_c", "cus_1", true)
	mustShredShop(t, v, "shop_c")
	if err := v.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	for i := range 2 {
		v2 := reopen()
		t.Run(fmt.Sprintf("reopen%d", i+1), func(t *testing.T) {
			if k := mustKey(t, v2, "shop_a", "cus_keep", false); !bytes.Equal(k, kept) {
				t.Error("key changed across reopen")
			}
			if k := mustKey(t, v2, "shop_b", "shop_b", true); !bytes.Equal(k, shopKey) {
				t.Error("shop key changed across reopen")
			}
			wantErr(t, v2, "shop_a", "cus_gone", true, vault.ErrShredded)
			wantErr(t, v2, "shop_a", "cus_never", true, vault.ErrShredded)
			wantErr(t, v2, "shop_c", "cus_1", true, vault.ErrShredded)
			wantErr(t, v2, "shop_c", "cus_2", true, vault.ErrShredded)
			wantErr(t, v2, "shop_a", "cus_missing", false, vault.ErrNotFound)
		})
		if err := v2.Close(); err != nil {
			t.Fatalf("close reopened vault: %v", err)
		}
	}
}
