package replay_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/eventlog"
	eventsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
	"github.com/cgp-platform/cgp/replay"
)

// receiver is an outside endpoint that counts the deliveries of each
// idempotency key.
type receiver struct {
	mu   sync.Mutex
	seen map[string]int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[req.Header.Get("Idempotency-Key")]++
}

func (r *receiver) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.seen))
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}

// notifier is a reactor: on each event it delivers a notification keyed
// by the event's id (a deterministic id) and records it.
func notifier(url string) projections.Projector {
	return projections.Projector{
		Name:       "notifier",
		Migrations: []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE notifier_sent (event_id TEXT PRIMARY KEY)`}},
		Handle: func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Idempotency-Key", e.ID.String())
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			res.Body.Close()
			_, err = tx.ExecContext(ctx, `INSERT INTO notifier_sent (event_id) VALUES (?) ON CONFLICT DO NOTHING`, e.ID.String())
			return err
		},
	}
}

// items is a read model: one row per event.
func items() projections.Projector {
	return projections.Projector{
		Name:       "items",
		Migrations: []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE items (position INTEGER PRIMARY KEY, type TEXT NOT NULL)`}},
		Handle: func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO items (position, type) VALUES (?, ?)`, int64(e.Position), e.Type)
			return err
		},
	}
}

func appendEvents(t *testing.T, log eventlog.Log, n int) (ids []string, last eventlog.Position) {
	t.Helper()
	for range n {
		id := uuid.New()
		res, err := log.Append(context.Background(), "shop-1", eventlog.Any(), eventlog.EventData{
			ID: id, Type: "ItemAdded", SchemaVersion: 1, ShopID: "shop_1", OccurredAt: time.Now().UTC(), Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id.String())
		last = res.Position
	}
	return ids, last
}

// serveUntil runs the live projectors and reactors of dir until each
// reached pos, then stops them.
func serveUntil(t *testing.T, dir string, log eventlog.Log, pos eventlog.Position, ps ...projections.Projector) {
	t.Helper()
	store := openCurrent(t, dir)
	defer store.Close()
	rt, err := projections.New(projections.Config{Log: log, Store: store, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := rt.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // generous: a loaded machine
	defer cancel()
	if err := rt.WaitFor(ctx, pos); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func checkpoint(t *testing.T, dir, projector string) eventlog.Position {
	t.Helper()
	store := openCurrent(t, dir)
	defer store.Close()
	cp, err := store.Checkpoint(context.Background(), projector)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// A replay rebuilds the read models and runs no reactor: nothing is
// delivered, and the reactor keeps its checkpoint and its table. Started
// again on the new version, the reactor goes on from where it stopped:
// every event is delivered exactly once, none twice, none skipped.
func TestReplayRunsNoReactorAndTheReactorGoesOnWhereItStopped(t *testing.T) {
	dir := t.TempDir()
	log, err := eventsqlite.Open(eventsqlite.Config{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	rcv := &receiver{seen: map[string]int{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()

	first, mid := appendEvents(t, log, 5)
	serveUntil(t, dir, log, mid, items(), notifier(srv.URL))
	if got := rcv.counts(); len(got) != 5 {
		t.Fatalf("%d deliveries before the replay, want 5", len(got))
	}
	// The reactor stopped mid-stream: three events it has not acted on.
	rest, head := appendEvents(t, log, 3)

	res, err := replay.Run(context.Background(), replay.Config{Dir: dir, Log: log,
		Projectors: []projections.Projector{items()}, Reactors: []projections.Projector{notifier(srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Projectors) != 1 || res.Projectors[0] != "items" {
		t.Fatalf("replay rebuilt %v, want [items]", res.Projectors)
	}
	if got := rcv.counts(); len(got) != 5 {
		t.Fatalf("the replay delivered: %d keys after it, want 5", len(got))
	}
	if cp := checkpoint(t, dir, "notifier"); cp != mid {
		t.Fatalf("reactor checkpoint after the replay %d, want %d (unchanged)", cp, mid)
	}
	if cp := checkpoint(t, dir, "items"); cp != head {
		t.Fatalf("projector checkpoint after the replay %d, want %d", cp, head)
	}

	serveUntil(t, dir, log, head, items(), notifier(srv.URL))
	got := rcv.counts()
	for _, id := range append(first, rest...) {
		if got[id] != 1 {
			t.Errorf("event %s delivered %d times, want once", id, got[id])
		}
	}
	if len(got) != 8 {
		t.Errorf("%d keys delivered, want 8", len(got))
	}
}

// openCurrent opens the read-model version dir's pointer names.
func openCurrent(t *testing.T, dir string) *rmsqlite.Store {
	t.Helper()
	path, err := replay.Current(dir)
	if err != nil {
		t.Fatal(err)
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return store
}
