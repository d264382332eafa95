package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/sqlite"
	"github.com/cgp-platform/cgp/readmodel/versioned/versionedtest"
)

func open(t *testing.T) versioned.Store { return openTB(t) }

func openB(b *testing.B) versioned.Store { return openTB(b) }

func openTB(t testing.TB) versioned.Store {
	t.Helper()
	s, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "warehouse.db"), MaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestContract(t *testing.T) { versionedtest.Run(t, open) }

// TestBackgroundSendAfterMaxDelay: without Flush, rows are sent by the
// background sender once MaxDelay passed.
func TestBackgroundSendAfterMaxDelay(t *testing.T) {
	s, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "w.db"), MaxDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Migrate(ctx, []versioned.Table{versionedtest.Orders}); err != nil {
		t.Fatal(err)
	}
	c := versioned.Change{Table: versionedtest.Orders.Name, Row: versioned.Row{Values: []any{"s", "o", "e", int64(1), 0.0}}}
	if err := s.Write(ctx, "p", 7, []versioned.Change{c}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		cp, err := s.Checkpoint(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		if cp == 7 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("checkpoint still %d 10 s after a write with MaxDelay 20 ms", cp)
		case <-tick.C:
		}
	}
	if _, ok, err := s.Get(ctx, versionedtest.Orders.Name, []any{"s", "o"}); !ok || err != nil {
		t.Fatalf("row sent in the background not readable: %v %v", ok, err)
	}
}
