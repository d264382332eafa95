package sqlitedb

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

func create(t *testing.T, path, value string) {
	t.Helper()
	db := sql.OpenDB(Connector(path, "", ""))
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE v (x TEXT); INSERT INTO v VALUES (?)`, value); err != nil {
		t.Fatal(err)
	}
}

func read(db *sql.DB) (string, error) {
	var x string
	err := db.QueryRow(`SELECT x FROM v`).Scan(&x)
	return x, err
}

// After Switch every query reads the new file, pooled connections to the
// old one are not reused, and a file deleted under the pool is never
// created again empty.
func TestSwitchableMovesThePool(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	create(t, a, "old")
	create(t, b, "new")
	sw := NewSwitchable(a, "_busy_timeout=5000", "")
	db := sql.OpenDB(sw)
	defer db.Close()
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	if x, err := read(db); err != nil || x != "old" {
		t.Fatalf("before: %q %v", x, err)
	}
	sw.Switch(b)
	for range 5 {
		if x, err := read(db); err != nil || x != "new" {
			t.Fatalf("after switch: %q %v", x, err)
		}
	}
	if sw.Path() != b {
		t.Fatalf("path %s", sw.Path())
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	sw.Switch(b) // retire the open connections: the next one opens the path again
	if _, err := read(db); err == nil {
		t.Fatal("a deleted file was read")
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Fatalf("the deleted file was created again: %v", err)
	}
}
