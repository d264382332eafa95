package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/vault/postgres"
	"github.com/cgp-platform/cgp/vault/vaulttest"
)

// These tests stall the create batcher on a row lock that another
// connection holds on a shop, so that they can tell what it queues, groups,
// drops and answers.

// stallBatcher locks shop_probe's row in the schema, then asks for a key in
// that shop and waits until the batcher has taken the request (and so
// waits for the lock): creates asked for from now on stay queued until
// release. The probe's answer arrives on the returned channel.
func stallBatcher(t *testing.T, v *postgres.Vault, schema string) (release func(), probe chan vaulttest.Answer) {
	t.Helper()
	ctx := context.Background()
	if _, err := v.DataKey(ctx, "shop_probe", "shop_probe", true); err != nil {
		t.Fatal(err)
	}
	admin := connect(t)
	t.Cleanup(func() { _ = admin.Close(ctx) })
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			_ = tx.Rollback(ctx)
		}
	}
	t.Cleanup(release)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{schema, "shops"}.Sanitize()+" WHERE shop = 'shop_probe' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	before := v.Stats()
	probe = vaulttest.CreateAll(ctx, v, "shop_probe", []string{"probe"})[0]
	watch := connect(t)
	defer watch.Close(ctx)
	var waiting bool
	vaulttest.WaitFor(t, "the batcher waits for the shop's row", func() bool {
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
				AND query LIKE '%' || $1 || '%FOR SHARE%')`, schema).Scan(&waiting)
		return err == nil && waiting && v.Creates().Queued() == 0
	})
	if got := v.Stats(); got != before {
		t.Fatalf("stats moved while stalled: %+v, before %+v", got, before)
	}
	return release, probe
}

func TestQueuedCreatesCommitInOneBatch(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	defer v.Close()
	release, probe := stallBatcher(t, v, schema)
	before := v.Stats()

	var subjects []string
	for i := range 48 {
		subjects = append(subjects, fmt.Sprintf("cus_%d", i%16))
	}
	answers := vaulttest.CreateAll(context.Background(), v, "shop_a", subjects)
	vaulttest.WaitFor(t, "all 48 creates are queued", func() bool { return v.Creates().Queued() == len(subjects) })
	release()
	if a := <-probe; a.Err != nil {
		t.Fatalf("probe: %v", a.Err)
	}
	keys := vaulttest.CollectKeys(t, subjects, answers)
	got := v.Stats()
	want := postgres.Stats{Commits: before.Commits + 2, Requests: before.Requests + 49, Created: before.Created + 17}
	if got != want {
		t.Fatalf("stats %+v, want %+v: the probe's batch, then one for the 48 queued", got, want)
	}
	vaulttest.CheckKeys(t, v, "shop_a", keys)
}

func TestCanceledWhileQueuedAndClose(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	release, probe := stallBatcher(t, v, schema)
	ctx, cancel := context.WithCancel(context.Background())
	gone := vaulttest.CreateAll(ctx, v, "shop_a", []string{"cus_gone"})[0]
	stayers := []string{"cus_1", "cus_2"}
	stays := vaulttest.CreateAll(context.Background(), v, "shop_a", stayers)
	vaulttest.WaitFor(t, "the creates are queued", func() bool { return v.Creates().Queued() == 3 })
	cancel()
	if a := <-gone; !errors.Is(a.Err, context.Canceled) || a.Key != nil {
		t.Fatalf("canceled caller: %d-byte key, %v; want context.Canceled", len(a.Key), a.Err)
	}

	closed := make(chan error, 1)
	go func() { closed <- v.Close() }() // exits when Close returns
	vaulttest.WaitFor(t, "Close has begun", v.Creates().Closing)
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_late", true); !errors.Is(err, postgres.ErrClosed) {
		t.Fatalf("create after Close began: %v, want ErrClosed", err)
	}
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if a := <-probe; a.Err != nil {
		t.Fatalf("probe: %v", a.Err)
	}
	keys := vaulttest.CollectKeys(t, stayers, stays)
	if n := storedKeys(t, schema, "shop_a", ""); n != len(keys) {
		t.Fatalf("%d keys of shop_a stored, want %d: the queued ones, not the canceled or late ones", n, len(keys))
	}
}
