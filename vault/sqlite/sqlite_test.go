package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers "sqlite3" for reading the file behind the vault's back

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/sqlite"
	"github.com/cgp-platform/cgp/vault/vaulttest"
)

func testMaster(t testing.TB) []byte {
	t.Helper()
	return bytes.Repeat([]byte{0x42}, vault.MasterKeySize)
}

func openAt(t testing.TB, path string, master []byte) *sqlite.Vault {
	t.Helper()
	v, err := sqlite.Open(sqlite.Config{Path: path, MasterKey: master})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return v
}

func TestContract(t *testing.T) {
	vaulttest.RunBackend(t, func(t *testing.T) vaulttest.Backend {
		path := filepath.Join(t.TempDir(), "vault.db")
		v := openAt(t, path, testMaster(t))
		return vaulttest.Backend{
			Vault:  v,
			Reopen: func() vault.Vault { return openAt(t, path, testMaster(t)) },
			StoredKeys: func(t *testing.T, shop, subject string) int {
				n := 0
				for id := range readWrapped(t, path) {
					if (shop == "" || id.shop == shop) && (subject == "" || id.subject == subject) {
						n++
					}
				}
				return n
			},
			Created: func() uint64 { return v.Stats().Created },
		}
	})
}

func TestContractCached(t *testing.T) {
	vaulttest.Run(t, func(t *testing.T) vault.Vault {
		return vault.NewCache(openAt(t, filepath.Join(t.TempDir(), "vault.db"), testMaster(t)), 64)
	})
}

// TestContractTinyCache runs the contract through a cache that evicts on
// almost every call.
func TestContractTinyCache(t *testing.T) {
	vaulttest.Run(t, func(t *testing.T) vault.Vault {
		return vault.NewCache(openAt(t, filepath.Join(t.TempDir(), "vault.db"), testMaster(t)), 1)
	})
}

func TestOpenValidates(t *testing.T) {
	_, err := sqlite.Open(sqlite.Config{MasterKey: []byte("short")})
	if err == nil {
		t.Fatal("Open accepted an empty path and a 5-byte master key")
	}
	if !errors.Is(err, vault.ErrInvalidMasterKey) || !strings.Contains(err.Error(), "path is required") {
		t.Fatalf("error %q should report both the path and the master key", err)
	}
}

func TestWrongMasterKeyFailsOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	v := openAt(t, path, testMaster(t))
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_1", true); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{0x17}, vault.MasterKeySize)
	v2, err := sqlite.Open(sqlite.Config{Path: path, MasterKey: other})
	if !errors.Is(err, vault.ErrWrongMasterKey) {
		if v2 != nil {
			_ = v2.Close()
		}
		t.Fatalf("open with another master key: %v, want ErrWrongMasterKey", err)
	}
	// The right key still opens it.
	v3 := openAt(t, path, testMaster(t))
	defer v3.Close()
	if _, err := v3.DataKey(context.Background(), "shop_a", "cus_1", false); err != nil {
		t.Fatal(err)
	}
}

// TestMovedWrappedKeyFails copies one subject's wrapped key onto another's
// row behind the vault's back: the vault must refuse it, not hand out the
// first subject's key under the second's name.
func TestMovedWrappedKeyFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	v := openAt(t, path, testMaster(t))
	defer v.Close()
	ctx := context.Background()
	for _, s := range []string{"cus_1", "cus_2"} {
		if _, err := v.DataKey(ctx, "shop_a", s, true); err != nil {
			t.Fatal(err)
		}
	}
	db := rawDB(t, path, "rw")
	if _, err := db.Exec(`UPDATE data_keys SET wrapped = (SELECT wrapped FROM data_keys WHERE subject = 'cus_1') WHERE subject = 'cus_2'`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := v.DataKey(ctx, "shop_a", "cus_2", false); !errors.Is(err, vault.ErrUnwrap) {
		t.Fatalf("DataKey of a moved wrapped key: %v, want ErrUnwrap", err)
	}
}

// TestShreddedKeysLeaveNoBytes searches every byte of every file in the
// vault's directory: raw keys must never be there, and the wrapped bytes of
// shredded keys must be gone right after Shred returns (vault still open,
// WAL included) and after Close. Keys are created in random order and in
// numbers that split and merge b-tree pages, so moved cells are covered.
func TestShreddedKeysLeaveNoBytes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vault.db")
	v := openAt(t, path, testMaster(t))
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))

	type subj struct{ shop, subject string }
	var all []subj
	for s := range 3 {
		shop := fmt.Sprintf("shop_%d", s)
		all = append(all, subj{shop, shop})
		for c := range 200 {
			all = append(all, subj{shop, fmt.Sprintf("cus_%04d", c)})
		}
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	raw := map[subj][]byte{}
	for _, s := range all {
		k, err := v.DataKey(ctx, s.shop, s.subject, true)
		if err != nil {
			t.Fatal(err)
		}
		raw[s] = k
	}
	wrapped := readWrapped(t, path)
	if len(wrapped) != len(all) {
		t.Fatalf("read %d wrapped keys, want %d", len(wrapped), len(all))
	}

	// Shred a third of shop_0 and shop_1 customers in random order, and all
	// of shop_2; create more keys in between so the WAL grows again.
	shredded := map[subj]bool{}
	for i, s := range all {
		if s.shop == "shop_2" || i%3 != 0 {
			continue
		}
		if err := v.Shred(ctx, s.shop, s.subject); err != nil {
			t.Fatal(err)
		}
		shredded[s] = true
		if i%10 == 0 {
			if _, err := v.DataKey(ctx, s.shop, fmt.Sprintf("late_%d", i), true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := v.ShredShop(ctx, "shop_2"); err != nil {
		t.Fatal(err)
	}
	for s := range raw {
		if s.shop == "shop_2" {
			shredded[s] = true
		}
	}

	check := func(when string) {
		t.Helper()
		files := readDir(t, dir)
		if _, ok := files["vault.db"]; !ok {
			t.Fatalf("%s: no database file among %d files", when, len(files))
		}
		for name, content := range files {
			if bytes.Contains(content, testMaster(t)) {
				t.Errorf("%s: master key found in %s", when, name)
			}
		}
		keptFound := 0
		for s := range raw {
			for name, content := range files {
				if bytes.Contains(content, raw[s]) {
					t.Errorf("%s: raw key of %v found in %s", when, s, name)
				}
				if bytes.Contains(content, wrapped[s]) {
					if shredded[s] {
						t.Errorf("%s: wrapped key of shredded %v found in %s at %d", when, s, name, bytes.Index(content, wrapped[s]))
					} else {
						keptFound++
					}
				}
			}
		}
		// The search must be able to find what is there.
		if want := len(raw) - len(shredded); keptFound < want {
			t.Errorf("%s: found %d wrapped keys still kept, want %d: the search is broken", when, keptFound, want)
		}
	}
	check("after shred, vault open")
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	check("after close")
}

// TestShredReportsBusyCheckpoint holds a read transaction open on another
// connection so that the WAL cannot be truncated: Shred must say so (the
// shred itself is committed), and a retry once the reader is gone must
// leave no trace of the key.
func TestShredReportsBusyCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vault.db")
	v, err := sqlite.Open(sqlite.Config{Path: path, MasterKey: testMaster(t), BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	if _, err := v.DataKey(ctx, "shop_a", "cus_1", true); err != nil {
		t.Fatal(err)
	}
	wrapped := readWrapped(t, path)[struct{ shop, subject string }{"shop_a", "cus_1"}]

	reader := rawDB(t, path, "ro")
	defer reader.Close()
	tx, err := reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM data_keys").Scan(&n); err != nil {
		t.Fatal(err)
	}
	err = v.Shred(ctx, "shop_a", "cus_1")
	if !errors.Is(err, sqlite.ErrCheckpointBusy) {
		t.Fatalf("Shred with a reader holding the WAL: %v, want ErrCheckpointBusy", err)
	}
	if _, err := v.DataKey(ctx, "shop_a", "cus_1", true); !errors.Is(err, vault.ErrShredded) {
		t.Fatalf("the shred was not committed: %v", err)
	}
	_ = tx.Rollback()
	if err := v.Shred(ctx, "shop_a", "cus_1"); err != nil {
		t.Fatalf("retried Shred: %v", err)
	}
	for name, content := range readDir(t, dir) {
		if bytes.Contains(content, wrapped) {
			t.Errorf("wrapped key of the shredded subject left in %s", name)
		}
	}
}

// TestTwoHandlesOneFile runs two vaults on one file, as two processes
// would: concurrent creators all get one key, and a shred through one is
// seen by the other.
func TestTwoHandlesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	a := openAt(t, path, testMaster(t))
	defer a.Close()
	b := openAt(t, path, testMaster(t))
	defer b.Close()
	ctx := context.Background()

	const callers = 16
	// Each caller creates cus_0 to cus_3; all must get one key for cus_0.
	vaulttest.SameKey(t, 2*callers, func(i int) ([]byte, error) {
		v := a
		if i%2 == 1 {
			v = b
		}
		var key []byte
		for s := range 4 {
			k, err := v.DataKey(ctx, "shop_a", fmt.Sprintf("cus_%d", s), true)
			if err != nil {
				return nil, err
			}
			if s == 0 {
				key = k
			}
		}
		return key, nil
	})
	if err := a.Shred(ctx, "shop_a", "cus_0"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DataKey(ctx, "shop_a", "cus_0", true); !errors.Is(err, vault.ErrShredded) {
		t.Fatalf("other handle after shred: %v, want ErrShredded", err)
	}
}

func TestPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "vault.db")
	v := openAt(t, path, testMaster(t))
	if _, err := v.DataKey(context.Background(), "shop_a", "cus_1", true); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
}

func BenchmarkSQLite(b *testing.B) {
	vaulttest.Bench(b, func(b *testing.B) vault.Vault {
		return openAt(b, filepath.Join(b.TempDir(), "vault.db"), testMaster(b))
	})
}

func BenchmarkSQLiteCached(b *testing.B) {
	vaulttest.Bench(b, func(b *testing.B) vault.Vault {
		return vault.NewCache(openAt(b, filepath.Join(b.TempDir(), "vault.db"), testMaster(b)), 1024)
	})
}

func rawDB(t *testing.T, path, mode string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode="+mode+"&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// readWrapped returns every wrapped key in the file, by (shop, subject).
func readWrapped(t *testing.T, path string) map[struct{ shop, subject string }][]byte {
	t.Helper()
	db := rawDB(t, path, "ro")
	defer db.Close()
	rows, err := db.Query("SELECT shop, subject, wrapped FROM data_keys")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[struct{ shop, subject string }][]byte{}
	for rows.Next() {
		var k struct{ shop, subject string }
		var w []byte
		if err := rows.Scan(&k.shop, &k.subject, &w); err != nil {
			t.Fatal(err)
		}
		if len(w) != vault.WrappedSize {
			t.Fatalf("wrapped key of %d bytes", len(w))
		}
		out[k] = w
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readDir returns the content of every file under dir.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// BenchmarkSQLiteParallelCreate creates distinct subjects from 64
// concurrent callers, as a burst of webhooks about new customers does.
// It also reports the mean number of creates per commit.
func BenchmarkSQLiteParallelCreate(b *testing.B) {
	var v *sqlite.Vault
	vaulttest.BenchParallelCreate(b, func(b *testing.B) vault.Vault {
		v = openAt(b, filepath.Join(b.TempDir(), "vault.db"), testMaster(b))
		return v
	}, 64)
	if st := v.Stats(); st.Commits > 0 {
		b.ReportMetric(float64(st.Requests)/float64(st.Commits), "creates/commit")
	}
}
