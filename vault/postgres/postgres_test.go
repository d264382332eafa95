package postgres_test

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/postgres"
	"github.com/cgp-platform/cgp/vault/vaulttest"
)

const envDSN = "CGP_TEST_POSTGRES_URL"

func testDSN() string {
	if s := os.Getenv(envDSN); s != "" {
		return s
	}
	return "postgres://root@127.0.0.1:5432/test?sslmode=disable"
}

func testMaster() []byte { return bytes.Repeat([]byte{0x42}, vault.MasterKeySize) }

// unreachable is set once by TestMain, before any test runs, when the
// server cannot be reached; tests that need it then skip.
var unreachable error

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	conn, err := pgx.Connect(ctx, testDSN())
	cancel()
	var netErr net.Error
	switch {
	case err == nil:
		_ = conn.Close(context.Background())
	case errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded):
		unreachable = err
		fmt.Fprintf(os.Stderr, "vault/postgres: PostgreSQL unreachable, its tests are skipped (set %s): %v\n", envDSN, err)
	}
	os.Exit(m.Run())
}

// requirePostgres skips the test when the server is unreachable (and only
// then; any other connection failure fails the test in connect).
func requirePostgres(t testing.TB) {
	t.Helper()
	if unreachable != nil {
		t.Skipf("PostgreSQL unreachable (set %s)", envDSN)
	}
}

// connect returns an administrative connection.
func connect(t testing.TB) *pgx.Conn {
	t.Helper()
	requirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		t.Fatalf("connect to PostgreSQL (%s): %v", envDSN, err)
	}
	return conn
}

// newSchema returns a schema name unique to this test run and drops the
// schema when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	connect(t).Close(context.Background())
	b := make([]byte, 6)
	_, _ = crand.Read(b)
	name := "vault_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn := connect(t)
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

func openSchema(t testing.TB, schema string, master []byte) *postgres.Vault {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := postgres.Open(ctx, postgres.Config{DSN: testDSN(), MasterKey: master, Schema: schema})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return v
}

func TestContract(t *testing.T) {
	requirePostgres(t)
	vaulttest.RunPersistent(t, func(t *testing.T) (vault.Vault, func() vault.Vault) {
		schema := newSchema(t)
		return openSchema(t, schema, testMaster()), func() vault.Vault { return openSchema(t, schema, testMaster()) }
	})
}

func TestContractCached(t *testing.T) {
	requirePostgres(t)
	vaulttest.Run(t, func(t *testing.T) vault.Vault {
		return vault.NewCache(openSchema(t, newSchema(t), testMaster()), 64)
	})
}

func TestConfigValidate(t *testing.T) {
	err := postgres.Config{Schema: "Bad-Name"}.Validate()
	if err == nil {
		t.Fatal("empty config accepted")
	}
	for _, want := range []string{"dsn is required", "master key", "schema"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !errors.Is(err, vault.ErrInvalidMasterKey) {
		t.Errorf("error %v does not wrap ErrInvalidMasterKey", err)
	}
	if err := (postgres.Config{DSN: "x", MasterKey: testMaster()}).Validate(); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
}

func TestOpenHidesDSNPassword(t *testing.T) {
	_, err := postgres.Open(context.Background(), postgres.Config{DSN: "postgres://u:s3cretpw@[::1", MasterKey: testMaster()})
	if err == nil {
		t.Fatal("malformed DSN accepted")
	}
	if strings.Contains(err.Error(), "s3cretpw") {
		t.Fatalf("error %q repeats the password", err)
	}
}

func TestWrongMasterKeyFailsOnOpen(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_1", true); err != nil {
		t.Fatal(err)
	}
	v.Close()
	other := bytes.Repeat([]byte{0x17}, vault.MasterKeySize)
	v2, err := postgres.Open(context.Background(), postgres.Config{DSN: testDSN(), MasterKey: other, Schema: schema})
	if !errors.Is(err, vault.ErrWrongMasterKey) {
		if v2 != nil {
			v2.Close()
		}
		t.Fatalf("open with another master key: %v, want ErrWrongMasterKey", err)
	}
	v3 := openSchema(t, schema, testMaster())
	defer v3.Close()
	if _, err := v3.DataKey(context.Background(), "shop_a", "cus_1", false); err != nil {
		t.Fatal(err)
	}
}

func TestMovedWrappedKeyFails(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	defer v.Close()
	ctx := context.Background()
	for _, s := range []string{"cus_1", "cus_2"} {
		if _, err := v.DataKey(ctx, "shop_a", s, true); err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t)
	defer conn.Close(ctx)
	table := pgx.Identifier{schema, "data_keys"}.Sanitize()
	if _, err := conn.Exec(ctx, fmt.Sprintf(
		`UPDATE %[1]s SET wrapped = (SELECT wrapped FROM %[1]s WHERE subject = 'cus_1') WHERE subject = 'cus_2'`, table)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.DataKey(ctx, "shop_a", "cus_2", false); !errors.Is(err, vault.ErrUnwrap) {
		t.Fatalf("DataKey of a moved wrapped key: %v, want ErrUnwrap", err)
	}
}

// TestShredLeavesNoKeyInTables checks what the tables hold after shredding:
// no wrapped key for shredded subjects or shredded shops, and no raw key
// anywhere.
func TestShredLeavesNoKeyInTables(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	defer v.Close()
	ctx := context.Background()
	raw := map[string][]byte{}
	for _, id := range []string{"shop_a/cus_1", "shop_a/cus_2", "shop_b/cus_1", "shop_b/shop_b"} {
		shop, subject, _ := strings.Cut(id, "/")
		k, err := v.DataKey(ctx, shop, subject, true)
		if err != nil {
			t.Fatal(err)
		}
		raw[id] = k
	}
	if err := v.Shred(ctx, "shop_a", "cus_1"); err != nil {
		t.Fatal(err)
	}
	if err := v.ShredShop(ctx, "shop_b"); err != nil {
		t.Fatal(err)
	}
	conn := connect(t)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT shop || '/' || subject, wrapped FROM "+pgx.Identifier{schema, "data_keys"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for rows.Next() {
		var id string
		var w []byte
		if err := rows.Scan(&id, &w); err != nil {
			t.Fatal(err)
		}
		got[id] = w
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if w, ok := got["shop_a/cus_1"]; !ok || w != nil {
		t.Errorf("shredded subject: row present %v, wrapped %d bytes; want a tombstone row without key", ok, len(w))
	}
	if w := got["shop_a/cus_2"]; len(w) != vault.WrappedSize {
		t.Errorf("kept subject: wrapped key of %d bytes", len(w))
	}
	for id := range got {
		if strings.HasPrefix(id, "shop_b/") {
			t.Errorf("row of shredded shop left: %s", id)
		}
	}
	for id, w := range got {
		for rid, k := range raw {
			if bytes.Contains(w, k) {
				t.Errorf("raw key of %s stored in row %s", rid, id)
			}
		}
	}
}

// TestConcurrentOpenAndUse opens several vaults on one new schema at once,
// as processes starting together would, and has them create and shred the
// same subjects.
func TestConcurrentOpenAndUse(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	const handles = 4
	vs := make([]*postgres.Vault, handles)
	errs := make([]error, handles)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range handles {
		wg.Add(1)
		go func() { // exits after Open
			defer wg.Done()
			<-start
			vs[i], errs[i] = postgres.Open(context.Background(), postgres.Config{DSN: testDSN(), MasterKey: testMaster(), Schema: schema})
		}()
	}
	close(start)
	wg.Wait()
	for i := range handles {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		defer vs[i].Close()
	}

	ctx := context.Background()
	const subjects = 8
	keys := make([][subjects][]byte, handles)
	for i := range handles {
		wg.Add(1)
		go func() { // exits after its calls
			defer wg.Done()
			for s := range subjects {
				k, err := vs[i].DataKey(ctx, "shop_a", fmt.Sprintf("cus_%d", s), true)
				if err != nil {
					t.Errorf("handle %d: %v", i, err)
					return
				}
				keys[i][s] = k
			}
		}()
	}
	wg.Wait()
	for i := range handles {
		for s := range subjects {
			if !bytes.Equal(keys[i][s], keys[0][s]) {
				t.Fatalf("handle %d got another key for cus_%d", i, s)
			}
		}
	}
	if err := vs[1].ShredShop(ctx, "shop_a"); err != nil {
		t.Fatal(err)
	}
	for i := range handles {
		if _, err := vs[i].DataKey(ctx, "shop_a", "cus_0", true); !errors.Is(err, vault.ErrShredded) {
			t.Fatalf("handle %d after ShredShop: %v, want ErrShredded", i, err)
		}
	}
}

// TestConcurrentCreatesManySubjects has 64 callers create 200 subjects of
// two shops, each subject asked for by several callers in different orders,
// through the batcher: every caller gets the one key of a subject, subjects
// never share a key, each has one row, and the keys survive a reopen.
func TestConcurrentCreatesManySubjects(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
		t.FailNow()
	}
	keys := map[id][]byte{}
	owner := map[string]id{}
	for c := range callers {
		for s, k := range got[c] {
			if prev, ok := keys[s]; ok && !bytes.Equal(prev, k) {
				t.Fatalf("%v: callers got different keys", s)
			}
			keys[s] = k
			if o, ok := owner[string(k)]; ok && o != s {
				t.Fatalf("%v and %v share a key", o, s)
			}
			owner[string(k)] = s
		}
	}
	st := v.Stats()
	if st.Created != uint64(len(keys)) {
		t.Errorf("stats: %d keys created, want %d (%+v)", st.Created, len(keys), st)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	conn := connect(t)
	defer conn.Close(ctx)
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "data_keys"}.Sanitize()).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(keys) {
		t.Fatalf("%d rows in data_keys, want %d", rows, len(keys))
	}
	v2 := openSchema(t, schema, testMaster())
	defer v2.Close()
	for s, k := range keys {
		if k2, err := v2.DataKey(ctx, s.shop, s.subject, false); err != nil || !bytes.Equal(k2, k) {
			t.Fatalf("%v after reopen: %v", s, err)
		}
	}
}

// TestCreateRacingShred states the guarantee a create racing a shred has,
// and checks it: DataKey returns a key only if that key was committed
// before the shred's transaction, which then deleted it. So every caller
// gets the same key or ErrShredded; a call that starts after Shred (or
// ShredShop) has returned always gets ErrShredded; and once the shred has
// returned the table holds no key of the subject: no create slipped in
// after it. A call that overlaps the shred may still return the key the shred
// deleted, as a read that started just before the shred would.
func TestCreateRacingShred(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	defer v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := connect(t)
	defer conn.Close(ctx)
	table := pgx.Identifier{schema, "data_keys"}.Sanitize()
	const (
		rounds  = 20
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
			t.Fatalf("round %d: shred: %v", r, err)
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
		var left int
		q := "SELECT count(*) FROM " + table + " WHERE wrapped IS NOT NULL AND shop = $1 AND subject = $2"
		args := []any{shop, subject}
		if byShop {
			q, args = "SELECT count(*) FROM "+table+" WHERE wrapped IS NOT NULL AND shop = $1", []any{shop}
		}
		if err := conn.QueryRow(ctx, q, args...).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("round %d: %d keys of the shredded subject or shop left after the shred returned", r, left)
		}
	}
	t.Logf("%d rounds where a key was returned before the shred, %d where the shred came first", keyFirst, shredFirst)
}

func BenchmarkPostgres(b *testing.B) {
	requirePostgres(b)
	vaulttest.Bench(b, func(b *testing.B) vault.Vault { return openSchema(b, newSchema(b), testMaster()) })
}

func BenchmarkPostgresCached(b *testing.B) {
	requirePostgres(b)
	vaulttest.Bench(b, func(b *testing.B) vault.Vault {
		return vault.NewCache(openSchema(b, newSchema(b), testMaster()), 1024)
	})
}

// TestShredShopRacingCreatesLeavesNoKeys creates keys of new subjects in a
// shop from several goroutines while the shop is shredded: afterwards no
// wrapped key of the shop may be left in the table, not even one whose
// creation overlapped the shred (reads would refuse it, but it must not
// stay stored).
func TestShredShopRacingCreatesLeavesNoKeys(t *testing.T) {
	requirePostgres(t)
	schema := newSchema(t)
	v := openSchema(t, schema, testMaster())
	defer v.Close()
	conn := connect(t)
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
			t.Fatal("no key created before the deadline")
		}
		if err := v.ShredShop(ctx, shop); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		var left int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "data_keys"}.Sanitize()+
			" WHERE shop = $1 AND wrapped IS NOT NULL", shop).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("round %d: %d wrapped keys of the shredded shop left in the table", r, left)
		}
	}
}

// BenchmarkPostgresParallelCreate creates distinct subjects from 64
// concurrent callers, as a burst of webhooks about new customers does. It
// also reports the mean number of creates per commit.
func BenchmarkPostgresParallelCreate(b *testing.B) {
	requirePostgres(b)
	var v *postgres.Vault
	vaulttest.BenchParallelCreate(b, func(b *testing.B) vault.Vault {
		v = openSchema(b, newSchema(b), testMaster())
		return v
	}, 64)
	if st := v.Stats(); st.Commits > 0 {
		b.ReportMetric(float64(st.Requests)/float64(st.Commits), "creates/commit")
	}
}
