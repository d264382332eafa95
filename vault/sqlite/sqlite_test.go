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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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
	vaulttest.RunPersistent(t, func(t *testing.T) (vault.Vault, func() vault.Vault) {
		path := filepath.Join(t.TempDir(), "vault.db")
		return openAt(t, path, testMaster(t)), func() vault.Vault { return openAt(t, path, testMaster(t)) }
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
	keys := make([][]byte, 2*callers)
	errs := make([]error, 2*callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 * callers {
		v := a
		if i%2 == 1 {
			v = b
		}
		wg.Add(1)
		go func() { // exits after its calls
			defer wg.Done()
			<-start
			for s := range 4 {
				k, err := v.DataKey(ctx, "shop_a", fmt.Sprintf("cus_%d", s), true)
				if s == 0 {
					keys[i], errs[i] = k, err
				} else if err != nil {
					errs[i] = err
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("caller %d got another key", i)
		}
	}
	if err := a.Shred(ctx, "shop_a", "cus_0"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DataKey(ctx, "shop_a", "cus_0", true); !errors.Is(err, vault.ErrShredded) {
		t.Fatalf("other handle after shred: %v, want ErrShredded", err)
	}
}

// TestConcurrentCreatesManySubjects has 64 callers create 200 subjects of
// two shops, each subject asked for by several callers in different orders,
// through the batcher: every caller gets the one key of a subject, subjects
// never share a key, each has one row, and the keys survive a reopen.
func TestConcurrentCreatesManySubjects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	v := openAt(t, path, testMaster(t))
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
	if rows := readWrapped(t, path); len(rows) != len(keys) {
		t.Fatalf("%d rows in data_keys, want %d", len(rows), len(keys))
	}
	v2 := openAt(t, path, testMaster(t))
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
// returned the file holds no key of the subject: no create slipped in after
// it. A call that overlaps the shred may still return the key the shred
// deleted, as a read that started just before the shred would.
func TestCreateRacingShred(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.db")
	v := openAt(t, path, testMaster(t))
	defer v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
		q := "SELECT count(*) FROM data_keys WHERE shop = ? AND subject = ?"
		args := []any{shop, subject}
		if byShop {
			q, args = "SELECT count(*) FROM data_keys WHERE shop = ?", []any{shop}
		}
		db := rawDB(t, path, "ro")
		err = db.QueryRow(q, args...).Scan(&left)
		_ = db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("round %d: %d keys of the shredded subject or shop left after the shred returned", r, left)
		}
	}
	t.Logf("%d rounds where a key was returned before the shred, %d where the shred came first", keyFirst, shredFirst)
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
