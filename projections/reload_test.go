package projections_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// A reload pauses projecting, lets the store move to other read models
// (here a version built by a second runtime up to an earlier position, as a
// replay does), and resumes every projector from the new version's
// checkpoint: nothing is skipped in the new version, and queries through
// the store's pool read it.
func TestReloadMovesToAnotherVersion(t *testing.T) {
	e := newEnv(t)
	first := e.add(t, "item-1", "A", "B")

	// The other version: built from the log up to first by its own runtime.
	otherPath := filepath.Join(e.dir, "readmodels-2.db")
	other, err := rmsqlite.Open(rmsqlite.Config{Path: otherPath})
	if err != nil {
		t.Fatal(err)
	}
	ho := newRuntime(t, e, other, itemsProjector("items", nil))
	stopOther := ho.start(t)
	ho.waitFor(t, first)
	stopOther()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}

	h := newRuntime(t, e, e.store, itemsProjector("items", nil))
	h.start(t)
	second := e.add(t, "item-2", "C", "D")
	h.waitFor(t, second)
	if got := rows(t, e.store, "items"); strings.Join(got, ",") != "A,B,C,D" {
		t.Fatalf("live rows = %v", got)
	}

	// The other version stopped at first: after the switch the runtime
	// goes back to first and folds C and D again, into the new version.
	if err := h.rt.Reload(t.Context(), func(ctx context.Context) error { return e.store.Switch(ctx, otherPath) }); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	third := e.add(t, "item-3", "E")
	h.waitFor(t, third)
	if got := rows(t, e.store, "items"); strings.Join(got, ",") != "A,B,C,D,E" {
		t.Fatalf("rows after the switch = %v", got)
	}
	if e.store.Path() != otherPath {
		t.Fatalf("store path %s", e.store.Path())
	}
	// The old file was left as it was when the switch happened.
	old, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(e.dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := rows(t, old, "items"); strings.Join(got, ",") != "A,B,C,D" {
		t.Fatalf("old version rows = %v", got)
	}
	if cp, err := e.store.Checkpoint(t.Context(), "items"); err != nil || cp != third {
		t.Fatalf("checkpoint %d %v, want %d", cp, err, third)
	}
}

// A reload function that fails leaves the runtime
// projecting; two reloads at once are refused; a reload after Close fails.
func TestReloadFailures(t *testing.T) {
	e := newEnv(t)
	h := newRuntime(t, e, e.store, itemsProjector("items", nil))
	stop := h.start(t)
	boom := errors.New("boom")
	if err := h.rt.Reload(t.Context(), func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Reload = %v, want boom", err)
	}
	last := e.add(t, "item-1", "A")
	h.waitFor(t, last)
	if err := h.rt.Reload(t.Context(), func(ctx context.Context) error { return e.store.Switch(ctx, filepath.Join(e.dir, "missing.db")) }); err == nil {
		t.Fatal("switch to a missing file succeeded")
	}
	stop()
	if err := h.rt.Reload(t.Context(), func(context.Context) error { return nil }); !errors.Is(err, projections.ErrClosed) {
		t.Fatalf("Reload after Close = %v", err)
	}
}

// A runtime stopped while its handlers start stops at once: it does not
// wait CloseTimeout for handlers that never started.
func TestCloseWhileStartingIsPrompt(t *testing.T) {
	e := newEnv(t)
	e.add(t, "item-1", "A")
	for i := range 20 {
		h := newRuntime(t, e, e.store, itemsProjector("items", nil), itemsProjector("more", nil), itemsProjector("again", nil))
		done := make(chan error, 1)
		go func() { done <- h.rt.Run(context.Background()) }()
		closed := make(chan error, 1)
		go func() { closed <- h.rt.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close still waiting after 10 s", i)
		}
		if err := <-done; err != nil && !errors.Is(err, projections.ErrClosed) {
			t.Fatalf("round %d: Run: %v", i, err)
		}
	}
}
