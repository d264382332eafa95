package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cgp-platform/cgp/app"
)

// TestDataDirIsPrivate (point 11 of issue 14): with a permissive umask,
// after a run of cgp serve (with the SQLite warehouse), the CLI and a
// replay, every file of the data directory is 0600 and every folder 0700:
// the stores hold sealed personal data, wrapped keys and token hashes.
func TestDataDirIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	s := startServerWith(t, dir, func(c *Config) { c.Warehouse = app.WarehouseSQLite })
	tn := newTenant(t, dir, "private-files.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	s.deliver(t, tn, "customers/create", "dlv-private-1", customerPayload(9300001, "private@example.com", 0, "0.00", "2026-03-01T10:00:00-05:00"))
	s.stop()
	replayCLI(t, dir)
	checked := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		checked++
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("only %d entries in the data directory", checked)
	}
}
