package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/vault"
)

// These tests hold the in-process write lock (v.write) to stop the batcher
// between taking a batch and writing it, so that they can tell what it
// queues, groups, drops and answers.

func openInternal(t *testing.T, path string) *Vault {
	t.Helper()
	v, err := Open(Config{Path: path, MasterKey: bytes.Repeat([]byte{0x42}, vault.MasterKeySize)})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return v
}

// waitFor polls cond until it holds or 10 s have passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		<-tick.C
	}
}

func (v *Vault) queued() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.pending)
}

// holdBatcher takes the write lock, then queues one probe create and waits
// until the batcher has taken it and so is stuck on the lock: creates asked
// for from now on stay queued until release. The probe's answer arrives on
// the returned channel after release.
func holdBatcher(t *testing.T, v *Vault) (release func(), probe <-chan error) {
	t.Helper()
	v.write <- struct{}{}
	var once sync.Once
	release = func() { once.Do(func() { <-v.write }) }
	t.Cleanup(release)
	fresh, err := vault.Wrap(v.master, "shop_probe", "probe", vault.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	r, err := v.enqueue(context.Background(), "shop_probe", "probe", fresh)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the batcher took the probe", func() bool { return v.queued() == 0 })
	done := make(chan error, 1)
	go func() { // exits once the probe is answered
		res := <-r.done
		if res.err == nil && !res.inserted {
			res.err = errors.New("probe key not inserted")
		}
		done <- res.err
	}()
	return release, done
}

type answer struct {
	key []byte
	err error
}

// createAll starts one DataKey(create) per subject and returns their
// answers' channels, in order.
func createAll(v *Vault, ctx context.Context, shop string, subjects []string) []chan answer {
	out := make([]chan answer, len(subjects))
	for i, s := range subjects {
		out[i] = make(chan answer, 1)
		go func() { // exits after one call
			k, err := v.DataKey(ctx, shop, s, true)
			out[i] <- answer{k, err}
		}()
	}
	return out
}

func TestQueuedCreatesCommitInOneBatch(t *testing.T) {
	v := openInternal(t, filepath.Join(t.TempDir(), "vault.db"))
	defer v.Close()
	release, probe := holdBatcher(t, v)

	// 48 callers: subjects cus_0..cus_15 asked three times each.
	var subjects []string
	for i := range 48 {
		subjects = append(subjects, fmt.Sprintf("cus_%d", i%16))
	}
	answers := createAll(v, context.Background(), "shop_a", subjects)
	waitFor(t, "all 48 creates are queued", func() bool { return v.queued() == len(subjects) })
	if got := v.Stats(); got.Commits != 0 {
		t.Fatalf("committed while the write lock was held: %+v", got)
	}
	release()

	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	keys := map[string][]byte{}
	for i, ch := range answers {
		a := <-ch
		if a.err != nil {
			t.Fatalf("%s: %v", subjects[i], a.err)
		}
		if prev, ok := keys[subjects[i]]; ok && !bytes.Equal(prev, a.key) {
			t.Fatalf("%s: two callers in one batch got different keys", subjects[i])
		}
		keys[subjects[i]] = a.key
	}
	// One commit for the probe, one for the 48 queued behind it.
	want := Stats{Commits: 2, Requests: 49, Created: 17}
	if got := v.Stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	for s, k := range keys {
		got, err := v.DataKey(context.Background(), "shop_a", s, false)
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("%s: stored key differs from the one returned (%v)", s, err)
		}
	}
}

// TestBatchSeesShredQueuedBefore: a shred committed while creates wait in
// the queue wins: the batch re-checks under the write lock.
func TestBatchSeesShredQueuedBefore(t *testing.T) {
	v := openInternal(t, filepath.Join(t.TempDir(), "vault.db"))
	defer v.Close()
	ctx := context.Background()
	release, probe := holdBatcher(t, v)
	answers := createAll(v, ctx, "shop_a", []string{"cus_1", "cus_1", "cus_2", "cus_3"})
	other := createAll(v, ctx, "shop_b", []string{"cus_1", "cus_9"})
	waitFor(t, "the creates are queued", func() bool { return v.queued() == 6 })

	// Commit the tombstones behind the batcher's back, as the shreds would
	// once they had the lock (Shred itself would wait for it).
	if _, err := v.db.ExecContext(ctx, "INSERT INTO tombstones (shop, subject, shredded_at) VALUES ('shop_a', 'cus_1', 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.db.ExecContext(ctx, "INSERT INTO shredded_shops (shop, shredded_at) VALUES ('shop_b', 0)"); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	for i, want := range []error{vault.ErrShredded, vault.ErrShredded, nil, nil} {
		if a := <-answers[i]; !errors.Is(a.err, want) || (want != nil) != (a.key == nil) {
			t.Errorf("shop_a create %d: %d-byte key, %v; want %v", i, len(a.key), a.err, want)
		}
	}
	for i, ch := range other {
		if a := <-ch; !errors.Is(a.err, vault.ErrShredded) || a.key != nil {
			t.Errorf("shop_b create %d: %d-byte key, %v; want ErrShredded", i, len(a.key), a.err)
		}
	}
	var n int
	if err := v.db.QueryRowContext(ctx, "SELECT count(*) FROM data_keys WHERE shop = 'shop_b' OR subject = 'cus_1'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d keys stored beside tombstones", n)
	}
}

// TestCanceledWhileQueued: a caller whose ctx ends while it waits returns
// ctx.Err() at once, and a request whose caller has gone before its batch
// starts is not written.
func TestCanceledWhileQueued(t *testing.T) {
	v := openInternal(t, filepath.Join(t.TempDir(), "vault.db"))
	defer v.Close()
	release, probe := holdBatcher(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	gone := createAll(v, ctx, "shop_a", []string{"cus_gone"})[0]
	stays := createAll(v, context.Background(), "shop_a", []string{"cus_stays"})[0]
	waitFor(t, "both creates are queued", func() bool { return v.queued() == 2 })
	cancel()
	// The batcher is still stuck: the answer can only come from ctx.
	if a := <-gone; !errors.Is(a.err, context.Canceled) || a.key != nil {
		t.Fatalf("canceled caller: %d-byte key, %v; want context.Canceled", len(a.key), a.err)
	}
	release()
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	a := <-stays
	if a.err != nil {
		t.Fatalf("other caller: %v", a.err)
	}
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_gone", false); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("key of the canceled create: %v, want ErrNotFound", err)
	}
	if got := v.Stats(); got.Requests != 2 || got.Created != 2 {
		t.Fatalf("stats %+v: want the probe and cus_stays only", got)
	}
	// A later create makes the key as usual.
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_gone", true); err != nil {
		t.Fatal(err)
	}
}

// TestCloseAnswersQueuedCreates: Close commits what is queued before it
// stops the batcher; creates asked for once Close has begun get ErrClosed.
func TestCloseAnswersQueuedCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	v := openInternal(t, path)
	release, probe := holdBatcher(t, v)
	subjects := []string{"cus_1", "cus_2", "cus_3", "cus_3"}
	answers := createAll(v, context.Background(), "shop_a", subjects)
	waitFor(t, "the creates are queued", func() bool { return v.queued() == len(subjects) })

	closed := make(chan error, 1)
	go func() { closed <- v.Close() }() // exits when Close returns
	waitFor(t, "Close has begun", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.closed
	})
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_late", true); !errors.Is(err, ErrClosed) {
		t.Fatalf("create after Close began: %v, want ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the queued creates were written", err)
	default:
	}
	release()
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	keys := map[string][]byte{}
	for i, ch := range answers {
		a := <-ch
		if a.err != nil {
			t.Fatalf("%s: %v", subjects[i], a.err)
		}
		keys[subjects[i]] = a.key
	}
	if err := v.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}

	v2 := openInternal(t, path)
	defer v2.Close()
	for s, k := range keys {
		got, err := v2.DataKey(context.Background(), "shop_a", s, false)
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("%s after reopen: %v; want the key Close's batch returned", s, err)
		}
	}
	if _, err := v2.DataKey(context.Background(), "shop_a", "cus_late", false); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("create refused with ErrClosed was stored: %v", err)
	}
}
