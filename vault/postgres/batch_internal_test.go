package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/vault"
)

// These tests stall the batcher on a row lock that another connection
// holds on a shop, so that they can tell what it queues, groups, drops and
// answers.

const envDSN = "CGP_TEST_POSTGRES_URL"

func internalDSN() string {
	if s := os.Getenv(envDSN); s != "" {
		return s
	}
	return "postgres://root@127.0.0.1:5432/test?sslmode=disable"
}

// adminConn connects to the test server, skipping the test only when the
// server is unreachable.
func adminConn(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, internalDSN())
	var netErr net.Error
	switch {
	case err == nil:
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		return conn
	case errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded):
		t.Skipf("PostgreSQL unreachable (set %s): %v", envDSN, err)
	}
	t.Fatalf("connect to PostgreSQL (%s): %v", envDSN, err)
	return nil
}

// openInternal opens a vault on a new schema dropped when the test ends.
func openInternal(t *testing.T, admin *pgx.Conn) *Vault {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "vault_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		_, err := admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := Open(ctx, Config{DSN: internalDSN(), MasterKey: bytes.Repeat([]byte{0x42}, vault.MasterKeySize), Schema: schema})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return v
}

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

type answer struct {
	key []byte
	err error
}

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

// stallBatcher locks shop_probe's row from admin, then asks for a key in
// that shop and waits until the batcher has taken the request (and so
// waits for the lock): creates asked for from now on stay queued until
// release. The probe's answer arrives on the returned channel.
func stallBatcher(t *testing.T, v *Vault, admin *pgx.Conn) (release func(), probe chan answer) {
	t.Helper()
	ctx := context.Background()
	if _, err := v.DataKey(ctx, "shop_probe", "shop_probe", true); err != nil {
		t.Fatal(err)
	}
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
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{v.schema, "shops"}.Sanitize()+" WHERE shop = 'shop_probe' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	before := v.Stats()
	probe = createAll(v, ctx, "shop_probe", []string{"probe"})[0]
	var waiting bool
	waitFor(t, "the batcher waits for the shop's row", func() bool {
		// The admin connection is inside tx; ask through the vault's pool.
		err := v.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
				AND query LIKE '%' || $1 || '%FOR SHARE%')`, v.schema).Scan(&waiting)
		return err == nil && waiting && v.queued() == 0
	})
	if got := v.Stats(); got != before {
		t.Fatalf("stats moved while stalled: %+v, before %+v", got, before)
	}
	return release, probe
}

func TestQueuedCreatesCommitInOneBatch(t *testing.T) {
	admin := adminConn(t)
	v := openInternal(t, admin)
	defer v.Close()
	release, probe := stallBatcher(t, v, admin)
	before := v.Stats()

	var subjects []string
	for i := range 48 {
		subjects = append(subjects, fmt.Sprintf("cus_%d", i%16))
	}
	answers := createAll(v, context.Background(), "shop_a", subjects)
	waitFor(t, "all 48 creates are queued", func() bool { return v.queued() == len(subjects) })
	release()
	if a := <-probe; a.err != nil {
		t.Fatalf("probe: %v", a.err)
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
	got := v.Stats()
	want := Stats{Commits: before.Commits + 2, Requests: before.Requests + 49, Created: before.Created + 17}
	if got != want {
		t.Fatalf("stats %+v, want %+v: the probe's batch, then one for the 48 queued", got, want)
	}
	for s, k := range keys {
		stored, err := v.DataKey(context.Background(), "shop_a", s, false)
		if err != nil || !bytes.Equal(stored, k) {
			t.Fatalf("%s: stored key differs from the one returned (%v)", s, err)
		}
	}
}

func TestCanceledWhileQueuedAndClose(t *testing.T) {
	admin := adminConn(t)
	v := openInternal(t, admin)
	release, probe := stallBatcher(t, v, admin)
	ctx, cancel := context.WithCancel(context.Background())
	gone := createAll(v, ctx, "shop_a", []string{"cus_gone"})[0]
	stays := createAll(v, context.Background(), "shop_a", []string{"cus_1", "cus_2"})
	waitFor(t, "the creates are queued", func() bool { return v.queued() == 3 })
	cancel()
	if a := <-gone; !errors.Is(a.err, context.Canceled) || a.key != nil {
		t.Fatalf("canceled caller: %d-byte key, %v; want context.Canceled", len(a.key), a.err)
	}

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
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if a := <-probe; a.err != nil {
		t.Fatalf("probe: %v", a.err)
	}
	keys := map[string][]byte{}
	for i, ch := range stays {
		a := <-ch
		if a.err != nil {
			t.Fatalf("queued create %d: %v", i, a.err)
		}
		keys[fmt.Sprintf("cus_%d", i+1)] = a.key
	}
	var n int
	err := admin.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{v.schema, "data_keys"}.Sanitize()+
		" WHERE shop = 'shop_a'").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(keys) {
		t.Fatalf("%d keys of shop_a stored, want %d: the queued ones, not the canceled or late ones", n, len(keys))
	}
}
