package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/readmodel/readmodeltest"
	"github.com/cgp-platform/cgp/readmodel/sqlite"
)

func open(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "readmodels.db")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	readmodeltest.Run(t, func(t *testing.T) readmodel.Store { return open(t) })
}

// The store without fsync keeps the whole contract, and its writer really
// runs with synchronous=OFF and the large WAL checkpoint interval.
func TestContractNoSync(t *testing.T) {
	openNoSync := func(t *testing.T) *sqlite.Store {
		s, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "readmodels.db"), NoSync: true})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	readmodeltest.Run(t, func(t *testing.T) readmodel.Store { return openNoSync(t) })
	s := openNoSync(t)
	var sync, autockpt int
	if err := s.Maintain(t.Context(), func(tx *sql.Tx) error {
		if err := tx.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
			return err
		}
		return tx.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&autockpt)
	}); err != nil {
		t.Fatal(err)
	}
	if sync != 0 || autockpt != 16384 {
		t.Fatalf("writer synchronous=%d wal_autocheckpoint=%d, want 0 (OFF) and 16384", sync, autockpt)
	}
}

func TestReadPoolRefusesWrites(t *testing.T) {
	s := open(t)
	if err := s.Migrate(t.Context(), "p", []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE t (x INTEGER)`}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(t.Context(), `INSERT INTO t (x) VALUES (1)`); err == nil {
		t.Fatal("write through the read pool succeeded")
	}
}

func TestReopenKeepsCheckpointsAndHistory(t *testing.T) {
	// A path SQLite's URI syntax would misread unless escaped.
	path := filepath.Join(t.TempDir(), "read models?#1.db")
	migs := []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE t (x INTEGER)`}}
	s, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(t.Context(), "p", migs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(t.Context(), "p", 9, func(tx *sql.Tx) error { _, err := tx.Exec(`INSERT INTO t (x) VALUES (9)`); return err }); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckpointWAL(t.Context()); err != nil {
		t.Fatalf("CheckpointWAL: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the configured path: %v", err)
	}

	s = open2(t, path)
	if err := s.Migrate(t.Context(), "p", migs); err != nil {
		t.Fatalf("Migrate after reopen re-ran version 1: %v", err)
	}
	if cp, err := s.Checkpoint(t.Context(), "p"); err != nil || cp != 9 {
		t.Fatalf("Checkpoint after reopen = %d, %v; want 9", cp, err)
	}
}

func open2(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConfigValidate(t *testing.T) {
	err := sqlite.Config{ReadConns: -1, BusyTimeout: -1}.Validate()
	if err == nil {
		t.Fatal("Validate accepted an empty path and negative values")
	}
	for _, want := range []string{"Path", "ReadConns", "BusyTimeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not name %s", err, want)
		}
	}
	if _, err := sqlite.Open(sqlite.Config{}); err == nil {
		t.Fatal("Open without a path succeeded")
	}
}
