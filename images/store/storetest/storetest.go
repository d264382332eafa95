package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/store"
)

// Clock is a settable clock for the adapter under test: the suite moves it
// to check Sweep.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Opener returns a store on new, empty storage for one test, whose blobs
// are stamped by clock.Now, and registers in t.Cleanup whatever removes
// that storage.
type Opener func(t *testing.T, clock *Clock) store.Store

// TraversalNames are shop ids and keys every adapter refuses.
var TraversalNames = []string{
	"", ".", "..", "../x", "x/..", "a/b", `a\b`, "/etc", "x/../../y", "%2e%2e", "a b",
	"a\x00b", "é", ".hidden", "x.png", "~", strings.Repeat("a", store.MaxNameLen+1),
}

// Run runs the contract against the stores open returns.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s store.Store, c *Clock)
	}{
		{"PutGetRoundTrip", testPutGetRoundTrip},
		{"PutEmpty", testPutEmpty},
		{"PutReplaces", testPutReplaces},
		{"GetMissingIsNotFound", testGetMissing},
		{"ShopsAreIsolated", testShopsAreIsolated},
		{"RefusesInvalidNames", testRefusesInvalidNames},
		{"FailedReaderStoresNothing", testFailedReader},
		{"CancelledContextStoresNothing", testCancelledContext},
		{"Delete", testDelete},
		{"DeleteShop", testDeleteShop},
		{"Sweep", testSweep},
		{"ConcurrentPutsOfDifferentKeys", testConcurrentPuts},
		{"ConcurrentPutsOfOneKeyStayWhole", testConcurrentPutsOneKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Clock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
			tc.run(t, open(t, c), c)
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// MustPut stores data and checks the digest and size Put returns.
func MustPut(t *testing.T, s store.Store, shop, key string, data []byte) {
	t.Helper()
	digest, size, err := s.Put(ctxFor(t), shop, key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%s, %s): %v", shop, key, err)
	}
	if digest != sum(data) || size != int64(len(data)) {
		t.Fatalf("Put(%s, %s) = %s, %d; want %s, %d", shop, key, digest, size, sum(data), len(data))
	}
}

// Read returns the blob under (shop, key), or the error of Get or of the
// read. It may be called from any goroutine.
func Read(t *testing.T, s store.Store, shop, key string) ([]byte, error) {
	t.Helper()
	rc, err := s.Get(context.Background(), shop, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", shop, key, err)
	}
	return b, nil
}

func mustRead(t *testing.T, s store.Store, shop, key string, want []byte) {
	t.Helper()
	got, err := Read(t, s, shop, key)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", shop, key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s, %s) = %d bytes (%s), want %d bytes (%s)", shop, key, len(got), sum(got), len(want), sum(want))
	}
}

func mustBeMissing(t *testing.T, s store.Store, shop, key string) {
	t.Helper()
	_, err := Read(t, s, shop, key)
	if domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("Get(%s, %s) = %v, want not found", shop, key, err)
	}
}

func blob(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func testPutGetRoundTrip(t *testing.T, s store.Store, _ *Clock) {
	data := blob(300_000, 1)
	MustPut(t, s, "shop_1", "img_abc-DEF_123", data)
	mustRead(t, s, "shop_1", "img_abc-DEF_123", data)
}

func testPutEmpty(t *testing.T, s store.Store, _ *Clock) {
	MustPut(t, s, "shop_1", "empty", nil)
	mustRead(t, s, "shop_1", "empty", []byte{})
}

func testPutReplaces(t *testing.T, s store.Store, _ *Clock) {
	MustPut(t, s, "shop_1", "k", blob(1000, 1))
	MustPut(t, s, "shop_1", "k", blob(10, 2))
	mustRead(t, s, "shop_1", "k", blob(10, 2))
}

func testGetMissing(t *testing.T, s store.Store, _ *Clock) {
	mustBeMissing(t, s, "shop_1", "nothing")
	MustPut(t, s, "shop_1", "k", blob(10, 1))
	mustBeMissing(t, s, "shop_1", "nothing")
	mustBeMissing(t, s, "shop_2", "k")
}

func testShopsAreIsolated(t *testing.T, s store.Store, _ *Clock) {
	MustPut(t, s, "shop_1", "k", blob(10, 1))
	MustPut(t, s, "shop_2", "k", blob(10, 2))
	mustRead(t, s, "shop_1", "k", blob(10, 1))
	mustRead(t, s, "shop_2", "k", blob(10, 2))
}

func wantInvalid(t *testing.T, op string, err error, field string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != field {
		t.Fatalf("%s = %v, want validation_failed on %s", op, err, field)
	}
}

func testRefusesInvalidNames(t *testing.T, s store.Store, _ *Clock) {
	ctx := ctxFor(t)
	MustPut(t, s, "shop_1", "k", blob(10, 1))
	for _, bad := range TraversalNames {
		_, _, err := s.Put(ctx, bad, "k", bytes.NewReader([]byte("x")))
		wantInvalid(t, fmt.Sprintf("Put(%q, k)", bad), err, "shop")
		_, _, err = s.Put(ctx, "shop_1", bad, bytes.NewReader([]byte("x")))
		wantInvalid(t, fmt.Sprintf("Put(shop_1, %q)", bad), err, "key")
		_, err = s.Get(ctx, bad, "k")
		wantInvalid(t, fmt.Sprintf("Get(%q, k)", bad), err, "shop")
		_, err = s.Get(ctx, "shop_1", bad)
		wantInvalid(t, fmt.Sprintf("Get(shop_1, %q)", bad), err, "key")
		err = s.DeleteShop(ctx, bad)
		wantInvalid(t, fmt.Sprintf("DeleteShop(%q)", bad), err, "shop")
	}
	mustRead(t, s, "shop_1", "k", blob(10, 1))
}

// failingReader yields some bytes, then fails.
type failingReader struct{ n int }

var errBroken = errors.New("broken reader")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBroken
	}
	n := min(len(p), f.n)
	for i := range p[:n] {
		p[i] = 'x'
	}
	f.n -= n
	return n, nil
}

func testFailedReader(t *testing.T, s store.Store, _ *Clock) {
	ctx := ctxFor(t)
	if _, _, err := s.Put(ctx, "shop_1", "new", &failingReader{n: 100_000}); !errors.Is(err, errBroken) {
		t.Fatalf("Put with a failing reader = %v, want its error", err)
	}
	mustBeMissing(t, s, "shop_1", "new")
	MustPut(t, s, "shop_1", "old", blob(10, 1))
	if _, _, err := s.Put(ctx, "shop_1", "old", &failingReader{n: 100_000}); !errors.Is(err, errBroken) {
		t.Fatalf("Put with a failing reader = %v, want its error", err)
	}
	mustRead(t, s, "shop_1", "old", blob(10, 1))
}

func testCancelledContext(t *testing.T, s store.Store, _ *Clock) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Put(ctx, "shop_1", "k", bytes.NewReader(blob(10, 1))); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context = %v, want context.Canceled", err)
	}
	mustBeMissing(t, s, "shop_1", "k")
	// Cancelled during the copy.
	ctx, cancel = context.WithCancel(context.Background())
	r := io.MultiReader(bytes.NewReader(blob(10, 1)), readerFunc(func(p []byte) (int, error) {
		cancel()
		return 0, nil
	}), bytes.NewReader(blob(10, 1)))
	if _, _, err := s.Put(ctx, "shop_1", "k", r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put cancelled during the copy = %v, want context.Canceled", err)
	}
	mustBeMissing(t, s, "shop_1", "k")
	for name, call := range map[string]func() error{
		"Get":        func() error { _, err := s.Get(ctx, "shop_1", "k"); return err },
		"DeleteShop": func() error { return s.DeleteShop(ctx, "shop_1") },
		"Sweep":      func() error { _, err := s.Sweep(ctx, time.Now()); return err },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with a cancelled context = %v, want context.Canceled", name, err)
		}
	}
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func testDelete(t *testing.T, s store.Store, _ *Clock) {
	ctx := ctxFor(t)
	MustPut(t, s, "shop_1", "a", blob(100, 1))
	MustPut(t, s, "shop_1", "b", blob(100, 2))
	if err := s.Delete(ctx, "shop_1", "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mustBeMissing(t, s, "shop_1", "a")
	mustRead(t, s, "shop_1", "b", blob(100, 2))
	if err := s.Delete(ctx, "shop_1", "a"); err != nil {
		t.Fatalf("Delete of a missing blob: %v", err)
	}
	wantInvalid(t, "Delete", s.Delete(ctx, "shop_1", "../b"), "key")
	mustRead(t, s, "shop_1", "b", blob(100, 2))
}

func testDeleteShop(t *testing.T, s store.Store, _ *Clock) {
	ctx := ctxFor(t)
	for i := range 5 {
		MustPut(t, s, "shop_1", fmt.Sprintf("k%d", i), blob(100, byte(i)))
	}
	MustPut(t, s, "shop_2", "k0", blob(100, 9))
	if err := s.DeleteShop(ctx, "shop_1"); err != nil {
		t.Fatalf("DeleteShop: %v", err)
	}
	for i := range 5 {
		mustBeMissing(t, s, "shop_1", fmt.Sprintf("k%d", i))
	}
	mustRead(t, s, "shop_2", "k0", blob(100, 9))
	if err := s.DeleteShop(ctx, "shop_1"); err != nil {
		t.Fatalf("DeleteShop of an empty shop: %v", err)
	}
	if err := s.DeleteShop(ctx, "never_seen"); err != nil {
		t.Fatalf("DeleteShop of an unknown shop: %v", err)
	}
	// The shop can store again afterwards.
	MustPut(t, s, "shop_1", "k0", blob(10, 3))
	mustRead(t, s, "shop_1", "k0", blob(10, 3))
}

func testSweep(t *testing.T, s store.Store, c *Clock) {
	ctx := ctxFor(t)
	t0 := c.Now()
	MustPut(t, s, "shop_1", "old", blob(10, 1))
	MustPut(t, s, "shop_2", "old", blob(10, 2))
	c.Set(t0.Add(10 * 24 * time.Hour))
	MustPut(t, s, "shop_1", "new", blob(10, 3))
	MustPut(t, s, "shop_1", "replaced", blob(10, 4))
	c.Set(t0.Add(40 * 24 * time.Hour))
	MustPut(t, s, "shop_1", "replaced", blob(10, 5))

	n, err := s.Sweep(ctx, t0.Add(5*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2 removed", n, err)
	}
	mustBeMissing(t, s, "shop_1", "old")
	mustBeMissing(t, s, "shop_2", "old")
	mustRead(t, s, "shop_1", "new", blob(10, 3))
	mustRead(t, s, "shop_1", "replaced", blob(10, 5))

	n, err = s.Sweep(ctx, t0.Add(30*24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("second Sweep = %d, %v; want 1 removed", n, err)
	}
	mustBeMissing(t, s, "shop_1", "new")
	mustRead(t, s, "shop_1", "replaced", blob(10, 5))
	if n, err := s.Sweep(ctx, t0.Add(30*24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("third Sweep = %d, %v; want 0", n, err)
	}
	// A shop emptied by Sweep stores again.
	MustPut(t, s, "shop_2", "again", blob(10, 6))
	mustRead(t, s, "shop_2", "again", blob(10, 6))
}

func testConcurrentPuts(t *testing.T, s store.Store, _ *Clock) {
	const workers, perWorker = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				shop := fmt.Sprintf("shop_%d", w%3)
				key := fmt.Sprintf("k_%d_%d", w, i)
				data := blob(1000+w*10+i, byte(w*perWorker+i))
				digest, size, err := s.Put(context.Background(), shop, key, bytes.NewReader(data))
				if err == nil && (digest != sum(data) || size != int64(len(data))) {
					err = fmt.Errorf("Put(%s, %s) = %s, %d; want %s, %d", shop, key, digest, size, sum(data), len(data))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range workers {
		for i := range perWorker {
			mustRead(t, s, fmt.Sprintf("shop_%d", w%3), fmt.Sprintf("k_%d_%d", w, i), blob(1000+w*10+i, byte(w*perWorker+i)))
		}
	}
}

func testConcurrentPutsOneKey(t *testing.T, s store.Store, _ *Clock) {
	const writers, size = 8, 200_000
	versions := make(map[string]bool)
	for w := range writers {
		versions[sum(bytes.Repeat([]byte{byte('a' + w)}, size))] = true
	}
	MustPut(t, s, "shop_1", "k", bytes.Repeat([]byte{'a'}, size))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readErrs := make(chan error, 1)
	go func() {
		defer close(readErrs)
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := Read(t, s, "shop_1", "k")
			if err != nil || !versions[sum(got)] {
				readErrs <- fmt.Errorf("a reader saw %d bytes that are no whole version (err %v)", len(got), err)
				return
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				if _, _, err := s.Put(context.Background(), "shop_1", "k", bytes.NewReader(bytes.Repeat([]byte{byte('a' + w)}, size))); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-readErrs; err != nil {
		t.Fatal(err)
	}
	got, err := Read(t, s, "shop_1", "k")
	if err != nil || !versions[sum(got)] {
		t.Fatalf("final blob is no whole version (%d bytes, err %v)", len(got), err)
	}
}
