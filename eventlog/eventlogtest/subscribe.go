package eventlogtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
)

func subscribe(ctx context.Context, t *testing.T, l eventlog.Log, after eventlog.Position) eventlog.Subscription {
	t.Helper()
	sub, err := l.Subscribe(ctx, after)
	if err != nil {
		t.Fatalf("subscribe after %d: %v", after, err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// receive reads n events from sub, failing if they do not arrive within
// waitTimeout or the subscription ends early.
func receive(t *testing.T, sub eventlog.Subscription, n int) []eventlog.Event {
	t.Helper()
	out := make([]eventlog.Event, 0, n)
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for len(out) < n {
		select {
		case e, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription ended after %d of %d events: %v", len(out), n, sub.Err())
			}
			out = append(out, e)
		case <-deadline.C:
			t.Fatalf("received %d of %d events within %s", len(out), n, waitTimeout)
		}
	}
	return out
}

// waitEnded drains sub until Events is closed and checks Err is nil.
func waitEnded(t *testing.T, sub eventlog.Subscription) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		select {
		case _, ok := <-sub.Events():
			if !ok {
				if err := sub.Err(); err != nil {
					t.Errorf("subscription ended with %v, want nil", err)
				}
				return
			}
		case <-deadline.C:
			t.Fatalf("subscription did not end within %s", waitTimeout)
		}
	}
}

// sameSequence checks that got is exactly want: same positions and ids, in
// order (no gap, no duplicate).
func sameSequence(t *testing.T, got, want []eventlog.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("received %d events, the log holds %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Position != want[i].Position || got[i].ID != want[i].ID {
			t.Fatalf("event %d: received %s at position %d, the log has %s at %d", i, got[i].ID, got[i].Position, want[i].ID, want[i].Position)
		}
		if got[i].StreamID != want[i].StreamID || got[i].Revision != want[i].Revision {
			t.Fatalf("event %d: received %s@%d, the log has %s@%d", i, got[i].StreamID, got[i].Revision, want[i].StreamID, want[i].Revision)
		}
	}
}

func testSubscribeHistoryThenLive(t *testing.T, l eventlog.Log) {
	const history, writers, perWriter = 50, 8, 25
	for i := range history {
		mustAppend(t, l, fmt.Sprintf("hist-%d", i%5), eventlog.Any(), event("History"))
	}
	sub := subscribe(context.Background(), t, l, 0)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("live-%d", w)
			for range perWriter {
				if _, err := l.Append(context.Background(), stream, eventlog.Any(), event("Live")); err != nil {
					t.Errorf("append to %s: %v", stream, err)
					return
				}
			}
		}()
	}
	got := receive(t, sub, history+writers*perWriter)
	wg.Wait()
	for i := 1; i < len(got); i++ {
		if got[i].Position <= got[i-1].Position {
			t.Fatalf("event %d: position %d not after %d", i, got[i].Position, got[i-1].Position)
		}
	}
	sameSequence(t, got, readAll(t, l))
	// Later events keep coming on the same subscription.
	r := mustAppend(t, l, "live-late", eventlog.NoStream(), event("Late"))
	if late := receive(t, sub, 1); late[0].Position != r.Position {
		t.Errorf("late event at position %d, want %d", late[0].Position, r.Position)
	}
}

func testSubscribeFromMiddle(t *testing.T, l eventlog.Log) {
	for i := range 20 {
		mustAppend(t, l, fmt.Sprintf("mid-%d", i%4), eventlog.Any(), event("Before"))
	}
	all := readAll(t, l)
	mid := all[9].Position
	sub := subscribe(context.Background(), t, l, mid)
	sameSequence(t, receive(t, sub, 10), all[10:])
	mustAppend(t, l, "mid-0", eventlog.Any(), events(5, "After")...)
	got := receive(t, sub, 5)
	all = readAll(t, l)
	sameSequence(t, got, all[20:])
	// Subscribing at the head delivers only what comes next.
	sub2 := subscribe(context.Background(), t, l, all[len(all)-1].Position)
	r := mustAppend(t, l, "mid-9", eventlog.NoStream(), event("Next"))
	if got := receive(t, sub2, 1); got[0].Position != r.Position {
		t.Errorf("subscription at the head received position %d, want %d", got[0].Position, r.Position)
	}
}

func testSubscribeClose(t *testing.T, l eventlog.Log) {
	mustAppend(t, l, "close-1", eventlog.NoStream(), events(3, "A")...)
	sub := subscribe(context.Background(), t, l, 0)
	receive(t, sub, 3)
	if err := sub.Close(); err != nil {
		t.Fatalf("close subscription: %v", err)
	}
	waitEnded(t, sub)
	// Closing twice is harmless, and the log is unaffected.
	if err := sub.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	mustAppend(t, l, "close-1", eventlog.Exact(2), event("A"))
}

func testSubscribeCloseBackpressure(t *testing.T, l eventlog.Log) {
	for range 10 {
		mustAppend(t, l, "pressure-1", eventlog.Any(), events(50, "A")...)
	}
	sub := subscribe(context.Background(), t, l, 0)
	// Read one event so the subscription is running, then stop reading: the
	// subscription blocks on its send and Close must still end it.
	receive(t, sub, 1)
	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("close subscription: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Close of a subscription whose reader stopped did not return within %s", waitTimeout)
	}
	waitEnded(t, sub)
}

func testSubscribeContextCancel(t *testing.T, l eventlog.Log) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustAppend(t, l, "cancel-1", eventlog.NoStream(), events(2, "A")...)
	sub := subscribe(ctx, t, l, 0)
	receive(t, sub, 2)
	cancel()
	waitEnded(t, sub)

	// Cancel while live and idle, with nothing to deliver.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	sub2 := subscribe(ctx2, t, l, head(t, l))
	cancel2()
	waitEnded(t, sub2)
}
