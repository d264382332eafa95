package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/internal/wrapstore"
	"github.com/cgp-platform/cgp/vault/sqlite"
	"github.com/cgp-platform/cgp/vault/vaulttest"
)

// These tests hold the in-process write lock to stop the create batcher
// between taking a batch and writing it, so that they can tell what it
// queues, groups, drops and answers.

// holdBatcher takes the write lock, then queues one probe create and waits
// until the batcher has taken it and so is stuck on the lock: creates asked
// for from now on stay queued until release. The probe's answer arrives on
// the returned channel after release.
func holdBatcher(t *testing.T, v *sqlite.Vault) (release func(), probe <-chan error) {
	t.Helper()
	var once sync.Once
	unlock := v.HoldWrites()
	release = func() { once.Do(unlock) }
	t.Cleanup(release)
	fresh, err := vault.Wrap(testMaster(t), "shop_probe", "probe", vault.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { // exits once the probe is answered
		res, err := v.Creates().Do(context.Background(), wrapstore.CreateRequest{Shop: "shop_probe", Subject: "probe", Fresh: fresh})
		if err == nil && !res.Inserted {
			err = errors.New("probe key not inserted")
		}
		done <- err
	}()
	vaulttest.WaitFor(t, "the batcher took the probe", func() bool { return v.Creates().InFlight() == 1 })
	return release, done
}

func TestQueuedCreatesCommitInOneBatch(t *testing.T) {
	v := openAt(t, filepath.Join(t.TempDir(), "vault.db"), testMaster(t))
	defer v.Close()
	release, probe := holdBatcher(t, v)

	// 48 callers: subjects cus_0..cus_15 asked three times each.
	var subjects []string
	for i := range 48 {
		subjects = append(subjects, fmt.Sprintf("cus_%d", i%16))
	}
	answers := vaulttest.CreateAll(context.Background(), v, "shop_a", subjects)
	vaulttest.WaitFor(t, "all 48 creates are queued", func() bool { return v.Creates().Queued() == len(subjects) })
	if got := v.Stats(); got.Commits != 0 {
		t.Fatalf("committed while the write lock was held: %+v", got)
	}
	release()

	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	keys := vaulttest.CollectKeys(t, subjects, answers)
	// One commit for the probe, one for the 48 queued behind it.
	want := sqlite.Stats{Commits: 2, Requests: 49, Created: 17}
	if got := v.Stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	vaulttest.CheckKeys(t, v, "shop_a", keys)
}

// TestBatchSeesShredQueuedBefore: a shred committed while creates wait in
// the queue wins: the batch re-checks under the write lock.
func TestBatchSeesShredQueuedBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	v := openAt(t, path, testMaster(t))
	defer v.Close()
	ctx := context.Background()
	release, probe := holdBatcher(t, v)
	answers := vaulttest.CreateAll(ctx, v, "shop_a", []string{"cus_1", "cus_1", "cus_2", "cus_3"})
	other := vaulttest.CreateAll(ctx, v, "shop_b", []string{"cus_1", "cus_9"})
	vaulttest.WaitFor(t, "the creates are queued", func() bool { return v.Creates().Queued() == 6 })

	// Commit the tombstones behind the batcher's back, as the shreds would
	// once they had the lock (Shred itself would wait for it).
	db := rawDB(t, path, "rw")
	defer db.Close()
	if _, err := db.ExecContext(ctx, "INSERT INTO tombstones (shop, subject, shredded_at) VALUES ('shop_a', 'cus_1', 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO shredded_shops (shop, shredded_at) VALUES ('shop_b', 0)"); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	for i, want := range []error{vault.ErrShredded, vault.ErrShredded, nil, nil} {
		if a := <-answers[i]; !errors.Is(a.Err, want) || (want != nil) != (a.Key == nil) {
			t.Errorf("shop_a create %d: %d-byte key, %v; want %v", i, len(a.Key), a.Err, want)
		}
	}
	for i, ch := range other {
		if a := <-ch; !errors.Is(a.Err, vault.ErrShredded) || a.Key != nil {
			t.Errorf("shop_b create %d: %d-byte key, %v; want ErrShredded", i, len(a.Key), a.Err)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM data_keys WHERE shop = 'shop_b' OR subject = 'cus_1'").Scan(&n); err != nil {
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
	v := openAt(t, filepath.Join(t.TempDir(), "vault.db"), testMaster(t))
	defer v.Close()
	release, probe := holdBatcher(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	gone := vaulttest.CreateAll(ctx, v, "shop_a", []string{"cus_gone"})[0]
	stays := vaulttest.CreateAll(context.Background(), v, "shop_a", []string{"cus_stays"})[0]
	vaulttest.WaitFor(t, "both creates are queued", func() bool { return v.Creates().Queued() == 2 })
	cancel()
	// The batcher is still stuck: the answer can only come from ctx.
	if a := <-gone; !errors.Is(a.Err, context.Canceled) || a.Key != nil {
		t.Fatalf("canceled caller: %d-byte key, %v; want context.Canceled", len(a.Key), a.Err)
	}
	release()
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	a := <-stays
	if a.Err != nil {
		t.Fatalf("other caller: %v", a.Err)
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
	v := openAt(t, path, testMaster(t))
	release, probe := holdBatcher(t, v)
	subjects := []string{"cus_1", "cus_2", "cus_3", "cus_3"}
	answers := vaulttest.CreateAll(context.Background(), v, "shop_a", subjects)
	vaulttest.WaitFor(t, "the creates are queued", func() bool { return v.Creates().Queued() == len(subjects) })

	closed := make(chan error, 1)
	go func() { closed <- v.Close() }() // exits when Close returns
	vaulttest.WaitFor(t, "Close has begun", v.Creates().Closing)
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_late", true); !errors.Is(err, sqlite.ErrClosed) {
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
	keys := vaulttest.CollectKeys(t, subjects, answers)
	if err := v.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}

	// The keys Close's batch returned survive a reopen.
	v2 := openAt(t, path, testMaster(t))
	defer v2.Close()
	vaulttest.CheckKeys(t, v2, "shop_a", keys)
	if _, err := v2.DataKey(context.Background(), "shop_a", "cus_late", false); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("create refused with ErrClosed was stored: %v", err)
	}
}
