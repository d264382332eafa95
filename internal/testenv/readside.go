package testenv

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// WaitTimeout bounds ReadSide.WaitFor.
const WaitTimeout = 10 * time.Second

// ReadSide is a read-model store fed from a Core's log by a projections
// runtime that runs until the test ends.
type ReadSide struct {
	Store   *rmsqlite.Store
	Runtime *projections.Runtime
	names   []string
}

// ReadSide opens a new read-model store in the core's directory, migrates
// it for ps, registers ps on a projections runtime over the core's log and
// runs it. The runtime is stopped and the store closed when the test ends.
// Each call gives a separate store that folds the whole log (a rebuild).
func (c *Core) ReadSide(t testing.TB, ps ...projections.Projector) *ReadSide {
	t.Helper()
	dir, err := os.MkdirTemp(c.Dir, "readside-")
	if err != nil {
		t.Fatal(err)
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rt, err := projections.New(projections.Config{Log: c.Log, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	r := &ReadSide{Store: store, Runtime: rt}
	for _, p := range ps {
		if err := store.Migrate(context.Background(), p.Name, p.Migrations); err != nil {
			t.Fatalf("migrate %s: %v", p.Name, err)
		}
		if err := rt.Register(p); err != nil {
			t.Fatalf("register %s: %v", p.Name, err)
		}
		r.names = append(r.names, p.Name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		rt.Close()
		<-done
	})
	return r
}

// DB is the store's read pool.
func (r *ReadSide) DB() *sql.DB { return r.Store.DB() }

// WaitFor waits, up to WaitTimeout, until every projector of the read side
// has folded the log up to pos.
func (r *ReadSide) WaitFor(t testing.TB, pos eventlog.Position) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := r.Runtime.WaitFor(ctx, pos, r.names...); err != nil {
		t.Fatalf("read side %v at position %d: %v", r.names, pos, err)
	}
}
