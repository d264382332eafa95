package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
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
	_, _ = rand.Read(b)
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
	vaulttest.RunBackend(t, func(t *testing.T) vaulttest.Backend {
		schema := newSchema(t)
		v := openSchema(t, schema, testMaster())
		return vaulttest.Backend{
			Vault:  v,
			Reopen: func() vault.Vault { return openSchema(t, schema, testMaster()) },
			StoredKeys: func(t *testing.T, shop, subject string) int {
				return storedKeys(t, schema, shop, subject)
			},
			Created: func() uint64 { return v.Stats().Created },
		}
	})
}

// storedKeys counts the wrapped keys in the schema's data_keys table: of
// the subject in shop, of every subject of shop when subject is "", of
// every shop when shop is "" too.
func storedKeys(t *testing.T, schema, shop, subject string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := connect(t)
	defer conn.Close(ctx)
	var n int
	err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "data_keys"}.Sanitize()+
		` WHERE wrapped IS NOT NULL AND ($1::text = '' OR shop = $1) AND ($2::text = '' OR subject = $2)`,
		shop, subject).Scan(&n)
	if err != nil {
		t.Fatalf("count stored keys: %v", err)
	}
	return n
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
