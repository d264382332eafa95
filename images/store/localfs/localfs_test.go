package localfs_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/images/store"
	"github.com/cgp-platform/cgp/images/store/localfs"
	"github.com/cgp-platform/cgp/images/store/storetest"
)

func open(t *testing.T, root string, clock *storetest.Clock) *localfs.Store {
	t.Helper()
	s, err := localfs.New(localfs.Config{Root: root, Now: clock.Now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		return open(t, filepath.Join(t.TempDir(), "images"), clock)
	})
}

func newClock() *storetest.Clock {
	c := &storetest.Clock{}
	c.Set(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	return c
}

// tree lists every path under dir, relative to it.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestTraversalStaysUnderRoot(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "data", "images")
	s := open(t, root, newClock())
	if err := os.WriteFile(filepath.Join(parent, "data", "secret"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before := tree(t, parent)
	for _, bad := range append(storetest.TraversalNames, "../../data", "..%2fx", "shop_1/../../x") {
		_, _, _ = s.Put(ctx, bad, "x", bytes.NewReader([]byte("evil")))
		_, _, _ = s.Put(ctx, "shop_1", bad, bytes.NewReader([]byte("evil")))
		_ = s.DeleteShop(ctx, bad)
		if rc, err := s.Get(ctx, "shop_1", bad); err == nil {
			rc.Close()
			t.Fatalf("Get(shop_1, %q) opened a file", bad)
		}
	}
	if after := tree(t, parent); len(after) != len(before) {
		t.Fatalf("refused names changed the files: before %v, after %v", before, after)
	}
	if b, err := os.ReadFile(filepath.Join(parent, "data", "secret")); err != nil || string(b) != "keep" {
		t.Fatalf("file outside the root changed: %q, %v", b, err)
	}
}

func TestPermissions(t *testing.T) {
	old := setUmask(0)
	defer setUmask(old)
	root := filepath.Join(t.TempDir(), "images")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	s := open(t, root, newClock())
	storetest.MustPut(t, s, "shop_1", "k", []byte("result"))
	for path, want := range map[string]fs.FileMode{
		root:                               0o700,
		filepath.Join(root, "shop_1"):      0o700,
		filepath.Join(root, "shop_1", "k"): 0o600,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", path, got, want)
		}
	}
}

func TestLayoutAndNoTemporaryFilesLeft(t *testing.T) {
	root := filepath.Join(t.TempDir(), "images")
	s := open(t, root, newClock())
	storetest.MustPut(t, s, "shop_1", "img_1", []byte("a"))
	storetest.MustPut(t, s, "shop_2", "img_2", []byte("b"))
	_, _, _ = s.Put(context.Background(), "shop_1", "img_3", failing{})
	want := []string{".", ".tmp", "shop_1", "shop_1/img_1", "shop_2", "shop_2/img_2"}
	if got := tree(t, root); !equal(got, want) {
		t.Fatalf("layout %v, want %v", got, want)
	}
	if err := s.DeleteShop(context.Background(), "shop_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "shop_1")); !os.IsNotExist(err) {
		t.Fatalf("shop directory still there after DeleteShop: %v", err)
	}
}

func TestSweepSurvivesReopenAndRemovesStaleTemporaries(t *testing.T) {
	root := filepath.Join(t.TempDir(), "images")
	clock := newClock()
	t0 := clock.Now()
	storetest.MustPut(t, open(t, root, clock), "shop_1", "old", []byte("a"))
	stale := filepath.Join(root, ".tmp", "put-crashed")
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stale, t0.Add(-48*time.Hour), t0.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(root, ".tmp", "put-inflight")
	if err := os.WriteFile(fresh, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(31 * 24 * time.Hour))
	inflight := clock.Now().Add(-time.Hour)
	if err := os.Chtimes(fresh, inflight, inflight); err != nil {
		t.Fatal(err)
	}
	s := open(t, root, clock)
	n, err := s.Sweep(context.Background(), clock.Now().Add(-store.DefaultRetention))
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temporary file still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a temporary file younger than a day was removed: %v", err)
	}
}

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, os.ErrClosed }

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
