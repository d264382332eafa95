package replay

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	eventsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
)

// countingLog is the real log, counting the subscriptions made to it.
type countingLog struct {
	eventlog.Log
	subscriptions atomic.Int32
}

func (c *countingLog) Subscribe(ctx context.Context, after eventlog.Position) (eventlog.Subscription, error) {
	c.subscriptions.Add(1)
	return c.Log.Subscribe(ctx, after)
}

func openLog(t *testing.T) eventlog.Log {
	t.Helper()
	log, err := eventsqlite.Open(eventsqlite.Config{Path: filepath.Join(t.TempDir(), "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	return log
}

func appendN(t *testing.T, log eventlog.Log, n int) eventlog.Position {
	t.Helper()
	var last eventlog.Position
	for i := range n {
		res, err := log.Append(context.Background(), fmt.Sprintf("stream-%d", i%3), eventlog.Any(), eventlog.EventData{
			ID: uuid.New(), Type: "ItemAdded", SchemaVersion: 1, ShopID: "shop_1",
			OccurredAt: time.Now().UTC(), Data: fmt.Appendf(nil, `{"i":%d}`, i)})
		if err != nil {
			t.Fatal(err)
		}
		last = res.Position
	}
	return last
}

// take reads events from sub until it has the one at head, failing after a
// generous deadline.
func take(t *testing.T, sub eventlog.Subscription, head eventlog.Position) []eventlog.Position {
	t.Helper()
	var got []eventlog.Position
	deadline := time.After(2 * time.Minute) // a loaded machine
	for len(got) == 0 || got[len(got)-1] < head {
		select {
		case e, open := <-sub.Events():
			if !open {
				t.Fatalf("subscription closed after %v: %v", got, sub.Err())
			}
			got = append(got, e.Position)
		case <-deadline:
			t.Fatalf("only %v of the events up to %d", got, head)
		}
	}
	return got
}

func wantRange(t *testing.T, name string, got []eventlog.Position, after, head eventlog.Position) {
	t.Helper()
	if len(got) != int(head-after) {
		t.Fatalf("%s got %d events %v, want the %d after %d", name, len(got), got, head-after, after)
	}
	for i, p := range got {
		if p != after+eventlog.Position(i)+1 {
			t.Fatalf("%s event %d at position %d, want %d", name, i, p, after+eventlog.Position(i)+1)
		}
	}
}

// The lanes' subscriptions read the log once: each gets every event past
// its own start, in order, without gap or duplicate, history then live
// events, while the log is subscribed to only once.
func TestFanoutReadsTheLogOnceForEveryLane(t *testing.T) {
	log := &countingLog{Log: openLog(t)}
	head := appendN(t, log, 3*fanChunk+7) // several chunks
	fan := newFanout(log, 3)
	defer fan.Close()
	starts := []eventlog.Position{0, 5, head - 2}
	subs := make([]eventlog.Subscription, len(starts))
	for i, after := range starts {
		sub, err := fan.Subscribe(t.Context(), after)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs[i] = sub
	}
	var wg sync.WaitGroup
	got := make([][]eventlog.Position, len(subs))
	for i, sub := range subs {
		wg.Go(func() { got[i] = take(t, sub, head) })
	}
	wg.Wait()
	for i, after := range starts {
		wantRange(t, fmt.Sprintf("lane %d", i), got[i], after, head)
	}

	live := appendN(t, log, 4)
	for i, sub := range subs {
		wantRange(t, fmt.Sprintf("lane %d (live)", i), take(t, sub, live), head, live)
	}
	if n := log.subscriptions.Load(); n != 1 {
		t.Fatalf("the log was subscribed to %d times, want once", n)
	}
}

// A lane subscribing again once the shared reading started (after a
// failure) reads the log itself, from where it asks.
func TestFanoutLateSubscriptionReadsTheLogItself(t *testing.T) {
	log := &countingLog{Log: openLog(t)}
	head := appendN(t, log, 20)
	fan := newFanout(log, 1)
	defer fan.Close()
	first, err := fan.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	wantRange(t, "first", take(t, first, head), 0, head)

	late, err := fan.Subscribe(t.Context(), 12)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	wantRange(t, "late", take(t, late, head), 12, head)
	if n := log.subscriptions.Load(); n != 2 {
		t.Fatalf("the log was subscribed to %d times, want 2 (shared, then the late one's own)", n)
	}
}

// A lane whose subscription ends (its projector stopped) holds back no
// other lane, and closing the fan-out ends the subscriptions it still
// serves, with an error (the lane did not end them), and leaves the log
// open.
func TestFanoutEndedLaneHoldsBackNoOther(t *testing.T) {
	log := openLog(t)
	appendN(t, log, 10)
	fan := newFanout(log, 2)
	stopped, err := fan.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := stopped.Close(); err != nil {
		t.Fatal(err)
	}
	if _, open := <-stopped.Events(); open {
		// Events may be buffered before the close: drain them.
		for range stopped.Events() {
		}
	}
	if err := stopped.Err(); err != nil {
		t.Fatalf("a closed subscription reports %v, want nil", err)
	}
	other, err := fan.Subscribe(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Appended one at a time while followed, these arrive in chunks of
	// about one event: more chunks than a lane's buffer holds.
	more := appendN(t, log, 3*fanBuffer)
	wantRange(t, "other", take(t, other, more), 0, more)
	if err := fan.Close(); err != nil {
		t.Fatal(err)
	}
	for range other.Events() {
	}
	if other.Err() == nil {
		t.Fatal("a subscription ended by the fan-out's Close reports no error")
	}
	if got, err := log.HeadPosition(t.Context()); err != nil || got != more {
		t.Fatalf("log after the fan-out closed: head %d, %v; want %d, open", got, err, more)
	}
}
