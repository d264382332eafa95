package leasetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/lease"
)

// Wait bounds every wait of the suite: generous, since the machines that
// run it are shared and loaded. Nothing asserts on timing.
const Wait = 30 * time.Second

// Pair returns two holders sharing leases (two servers), fresh for each
// test: a name held by one is not held by the other until given back. An
// in-process lease returns itself twice.
type Pair func(t *testing.T) (a, b lease.Lease)

// Run runs every test of the suite.
func Run(t *testing.T, pair Pair) {
	t.Run("OneHolderRunsAtATime", func(t *testing.T) { testOneAtATime(t, pair) })
	t.Run("NamesAreIndependent", func(t *testing.T) { testNamesIndependent(t, pair) })
	t.Run("GivenBackWhenFReturns", func(t *testing.T) { testGivenBack(t, pair) })
	t.Run("WaitEndsWithItsContext", func(t *testing.T) { testWaitCancelled(t, pair) })
	t.Run("HolderStopsWithItsContext", func(t *testing.T) { testHolderCancelled(t, pair) })
}

// holder is one Run in a goroutine: entered is closed when f runs, f
// returns when release is closed, and done receives Run's error.
type holder struct {
	entered, release chan struct{}
	done             chan error
}

// hold runs l.Run(ctx, name, f) in a goroutine; inside counts the fs
// running at once and f fails the test when it is not alone.
func hold(t *testing.T, ctx context.Context, l lease.Lease, name string, inside *atomic.Int32) *holder {
	t.Helper()
	h := &holder{entered: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		h.done <- l.Run(ctx, name, func(ctx context.Context) error {
			if n := inside.Add(1); n != 1 {
				t.Errorf("%d holders of %q run at once", n, name)
			}
			defer inside.Add(-1)
			close(h.entered)
			select {
			case <-h.release:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	return h
}

func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Wait):
		t.Fatalf("%s: not within %s", what, Wait)
		var zero T
		return zero
	}
}

func testOneAtATime(t *testing.T, pair Pair) {
	a, b := pair(t)
	var inside atomic.Int32
	ctx := context.Background()
	ha := hold(t, ctx, a, "job", &inside)
	hb := hold(t, ctx, b, "job", &inside)
	first, second := ha, hb
	select {
	case <-ha.entered:
	case <-hb.entered:
		first, second = hb, ha
	case <-time.After(Wait):
		t.Fatalf("neither holder ran within %s", Wait)
	}
	select {
	case <-second.entered:
		t.Fatal("both holders run")
	default:
	}
	close(first.release)
	if err := within(t, first.done, "the first holder returns"); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	within(t, second.entered, "the second holder runs once the first gave the lease back")
	close(second.release)
	if err := within(t, second.done, "the second holder returns"); err != nil {
		t.Fatalf("second Run: %v", err)
	}
}

func testNamesIndependent(t *testing.T, pair Pair) {
	a, b := pair(t)
	var x, y atomic.Int32
	hx := hold(t, context.Background(), a, "x", &x)
	within(t, hx.entered, "x is held")
	hy := hold(t, context.Background(), b, "y", &y)
	within(t, hy.entered, "y is held while x is")
	close(hx.release)
	close(hy.release)
	for _, h := range []*holder{hx, hy} {
		if err := within(t, h.done, "Run returns"); err != nil {
			t.Fatal(err)
		}
	}
}

func testGivenBack(t *testing.T, pair Pair) {
	a, b := pair(t)
	boom := errors.New("boom")
	if err := a.Run(context.Background(), "job", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want f's error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	ran := false
	if err := b.Run(ctx, "job", func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("the other holder: Run = %v, ran %v; want the lease given back", err, ran)
	}
	if err := a.Run(ctx, "job", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("the first holder again: %v", err)
	}
}

func testWaitCancelled(t *testing.T, pair Pair) {
	a, b := pair(t)
	var inside atomic.Int32
	ha := hold(t, context.Background(), a, "job", &inside)
	within(t, ha.entered, "the first holder runs")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Run(ctx, "job", func(context.Context) error {
			t.Error("f ran while the lease was held elsewhere")
			return nil
		})
	}()
	cancel()
	if err := within(t, done, "a waiting Run returns once its ctx ends"); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting Run = %v, want context.Canceled", err)
	}
	close(ha.release)
	if err := within(t, ha.done, "the holder returns"); err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background(), "job", func(ctx context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	pre, cancelPre := context.WithCancel(context.Background())
	cancelPre()
	if err := b.Run(pre, "job", func(context.Context) error {
		t.Error("f ran with its context ended already")
		return nil
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with an ended ctx = %v, want context.Canceled", err)
	}
}

func testHolderCancelled(t *testing.T, pair Pair) {
	a, b := pair(t)
	var inside atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	ha := hold(t, ctx, a, "job", &inside)
	within(t, ha.entered, "the holder runs")
	hb := hold(t, context.Background(), b, "job", &inside)
	cancel() // ha's f returns with its ctx, and the lease is given back
	if err := within(t, ha.done, "the cancelled holder returns"); err != nil {
		t.Fatalf("cancelled Run = %v, want f's nil", err)
	}
	within(t, hb.entered, "the other holder takes the lease given back")
	close(hb.release)
	if err := within(t, hb.done, "the other holder returns"); err != nil {
		t.Fatal(err)
	}
}
