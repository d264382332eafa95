package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/vault/internal/batch"
	"github.com/cgp-platform/cgp/vault/vaulttest"
)

// recorder is a Commit function that answers each request n with n*10,
// records every batch it was given, and blocks while the test holds its
// gate.
type recorder struct {
	gate    sync.Mutex
	mu      sync.Mutex
	batches [][]int
	err     error
}

func (r *recorder) commit(reqs []int, out []int) (uint64, error) {
	r.gate.Lock()
	defer r.gate.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, slices.Clone(reqs))
	if r.err != nil {
		return 0, r.err
	}
	for i, n := range reqs {
		out[i] = n * 10
	}
	return uint64(len(reqs)), nil
}

func (r *recorder) seen() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

type answer struct {
	res int
	err error
}

// doAll starts one Do per request, each in a goroutine that exits after
// its call, and returns their answers' channels in order.
func doAll(ctx context.Context, b *batch.Batcher[int, int], reqs ...int) []chan answer {
	out := make([]chan answer, len(reqs))
	for i, n := range reqs {
		out[i] = make(chan answer, 1)
		go func() { // exits after one call
			res, err := b.Do(ctx, n)
			out[i] <- answer{res, err}
		}()
	}
	return out
}

// stall holds the recorder's gate and has one request, 0, taken into a
// batch that waits for the gate: requests asked for from now on stay
// queued until release. The probe's answer arrives on the returned
// channel.
func stall(t *testing.T, b *batch.Batcher[int, int], r *recorder) (release func(), probe chan answer) {
	t.Helper()
	r.gate.Lock()
	var once sync.Once
	release = func() { once.Do(r.gate.Unlock) }
	t.Cleanup(release) // before the Batcher's Close, which waits for the commit
	probe = doAll(context.Background(), b, 0)[0]
	vaulttest.WaitFor(t, "the probe's batch is taken", func() bool { return b.InFlight() == 1 })
	return release, probe
}

func newBatcher(t *testing.T, r *recorder, cfg batch.Config[int, int]) *batch.Batcher[int, int] {
	t.Helper()
	cfg.Commit = r.commit
	b := batch.New(cfg)
	t.Cleanup(b.Close)
	return b
}

func wantAnswers(t *testing.T, chs []chan answer, reqs []int) {
	t.Helper()
	for i, ch := range chs {
		if a := <-ch; a.err != nil || a.res != reqs[i]*10 {
			t.Errorf("request %d: %d, %v; want %d", reqs[i], a.res, a.err, reqs[i]*10)
		}
	}
}

func TestQueuedRequestsCommitInOneBatch(t *testing.T) {
	r := &recorder{}
	b := newBatcher(t, r, batch.Config[int, int]{Max: 100})
	release, probe := stall(t, b, r)
	reqs := []int{1, 2, 3, 4, 5, 6, 7, 8}
	chs := make([]chan answer, 0, len(reqs))
	for i, n := range reqs {
		// One at a time, so that the queue's order is known.
		chs = append(chs, doAll(context.Background(), b, n)...)
		vaulttest.WaitFor(t, "the request is queued", func() bool { return b.Queued() == i+1 })
	}
	if got := b.Stats(); got != (batch.Stats{}) {
		t.Fatalf("stats moved while stalled: %+v", got)
	}
	release()
	wantAnswers(t, []chan answer{probe}, []int{0})
	wantAnswers(t, chs, reqs)
	if got, want := r.seen(), [][]int{{0}, reqs}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v: the probe, then everything queued, oldest first", got, want)
	}
	if got, want := b.Stats(), (batch.Stats{Commits: 2, Requests: 9, Created: 9}); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	if b.Queued() != 0 || b.InFlight() != 0 {
		t.Fatalf("%d queued, %d in flight after every answer", b.Queued(), b.InFlight())
	}
}

func TestMaxBoundsABatch(t *testing.T) {
	r := &recorder{}
	b := newBatcher(t, r, batch.Config[int, int]{Max: 4})
	release, probe := stall(t, b, r)
	reqs := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	chs := doAll(context.Background(), b, reqs...)
	vaulttest.WaitFor(t, "the requests are queued", func() bool { return b.Queued() == len(reqs) })
	release()
	wantAnswers(t, []chan answer{probe}, []int{0})
	wantAnswers(t, chs, reqs)
	var sizes []int
	for _, batch := range r.seen() {
		sizes = append(sizes, len(batch))
	}
	if fmt.Sprint(sizes) != "[1 4 4 2]" {
		t.Fatalf("batch sizes %v, want [1 4 4 2]", sizes)
	}
}

func TestCommitErrorAnswersEveryCaller(t *testing.T) {
	errBoom := errors.New("boom")
	r := &recorder{}
	b := newBatcher(t, r, batch.Config[int, int]{Max: 100})
	release, probe := stall(t, b, r)
	chs := doAll(context.Background(), b, 1, 2, 3)
	vaulttest.WaitFor(t, "the requests are queued", func() bool { return b.Queued() == 3 })
	r.mu.Lock()
	r.err = errBoom
	r.mu.Unlock()
	release()
	for i, ch := range append(chs, probe) {
		if a := <-ch; !errors.Is(a.err, errBoom) || a.res != 0 {
			t.Errorf("caller %d: %d, %v; want 0, %v", i, a.res, a.err, errBoom)
		}
	}
	if got := b.Stats(); got != (batch.Stats{}) {
		t.Fatalf("stats %+v after failed commits, want zero", got)
	}
}

// TestCanceledWhileQueued: a caller whose ctx ends while it waits returns
// ctx.Err() at once, and its request is dropped from the batch.
func TestCanceledWhileQueued(t *testing.T) {
	r := &recorder{}
	b := newBatcher(t, r, batch.Config[int, int]{Max: 100})
	release, probe := stall(t, b, r)
	ctx, cancel := context.WithCancel(context.Background())
	gone := doAll(ctx, b, 1)[0]
	stays := doAll(context.Background(), b, 2)
	vaulttest.WaitFor(t, "both requests are queued", func() bool { return b.Queued() == 2 })
	cancel()
	// The commit is still stuck: the answer can only come from ctx.
	if a := <-gone; !errors.Is(a.err, context.Canceled) || a.res != 0 {
		t.Fatalf("canceled caller: %d, %v; want context.Canceled", a.res, a.err)
	}
	release()
	wantAnswers(t, []chan answer{probe}, []int{0})
	wantAnswers(t, stays, []int{2})
	if got := r.seen(); fmt.Sprint(got) != "[[0] [2]]" {
		t.Fatalf("batches %v, want [[0] [2]]: the canceled request dropped", got)
	}
	if got, want := b.Stats(), (batch.Stats{Commits: 2, Requests: 2, Created: 2}); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
}

func TestDoneContextIsNotQueued(t *testing.T) {
	r := &recorder{}
	b := newBatcher(t, r, batch.Config[int, int]{Max: 100})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := b.Do(ctx, 1); !errors.Is(err, context.Canceled) || res != 0 {
		t.Fatalf("Do with a done ctx: %d, %v; want context.Canceled", res, err)
	}
	b.Close()
	if got := r.seen(); len(got) != 0 {
		t.Fatalf("batches %v, want none", got)
	}
}

// TestLockHeldAroundCommit: with a Lock, the batch waits for it before it
// drops abandoned requests and commits, and holds it until the answers are
// sent.
func TestLockHeldAroundCommit(t *testing.T) {
	var lock sync.Mutex
	r := &recorder{}
	var lockedInCommit []bool
	b := newBatcher(t, r, batch.Config[int, int]{Max: 100, Lock: &lock})
	b2 := batch.New(batch.Config[int, int]{Max: 100, Lock: &lock, Commit: func(reqs, out []int) (uint64, error) {
		lockedInCommit = append(lockedInCommit, !lock.TryLock())
		return r.commit(reqs, out)
	}})
	defer b2.Close()

	lock.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	gone := doAll(ctx, b, 1)[0]
	vaulttest.WaitFor(t, "the batch is taken", func() bool { return b.InFlight() == 1 })
	cancel()
	if a := <-gone; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("canceled caller: %d, %v; want context.Canceled", a.res, a.err)
	}
	lock.Unlock()
	vaulttest.WaitFor(t, "the abandoned batch is dropped", func() bool { return b.InFlight() == 0 })
	if got := r.seen(); len(got) != 0 {
		t.Fatalf("batches %v: a request whose caller left while the batch waited for the lock was committed", got)
	}

	if res, err := b2.Do(context.Background(), 3); err != nil || res != 30 {
		t.Fatalf("Do: %d, %v; want 30", res, err)
	}
	if fmt.Sprint(lockedInCommit) != "[true]" {
		t.Fatalf("lock held in commit: %v, want [true]", lockedInCommit)
	}
}

// TestCloseAnswersQueued: Close commits what is queued before the
// goroutine returns; Do fails with Config.Closed once Close has begun.
func TestCloseAnswersQueued(t *testing.T) {
	errShut := errors.New("shut")
	r := &recorder{}
	b := newBatcher(t, r, batch.Config[int, int]{Max: 2, Closed: errShut})
	release, probe := stall(t, b, r)
	reqs := []int{1, 2, 3, 4, 5}
	chs := doAll(context.Background(), b, reqs...)
	vaulttest.WaitFor(t, "the requests are queued", func() bool { return b.Queued() == len(reqs) })

	closed := make(chan struct{})
	go func() { // exits when Close returns
		b.Close()
		close(closed)
	}()
	vaulttest.WaitFor(t, "Close has begun", b.Closing)
	if _, err := b.Do(context.Background(), 6); !errors.Is(err, errShut) {
		t.Fatalf("Do after Close began: %v, want %v", err, errShut)
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the queued requests were committed")
	default:
	}
	release()
	<-closed
	wantAnswers(t, []chan answer{probe}, []int{0})
	wantAnswers(t, chs, reqs)
	if got, want := b.Stats(), (batch.Stats{Commits: 4, Requests: 6, Created: 6}); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	b.Close() // again: returns at once
	if _, err := b.Do(context.Background(), 7); !errors.Is(err, errShut) {
		t.Fatalf("Do after Close: %v, want %v", err, errShut)
	}
}

func TestDefaultClosedError(t *testing.T) {
	b := batch.New(batch.Config[int, int]{Max: 1, Commit: (&recorder{}).commit})
	b.Close()
	if _, err := b.Do(context.Background(), 1); !errors.Is(err, batch.ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
}

// TestConcurrentCallers: every one of many concurrent callers gets its own
// answer, and each request is committed once.
func TestConcurrentCallers(t *testing.T) {
	r := &recorder{}
	b := newBatcher(t, r, batch.Config[int, int]{Max: 16})
	const callers, each = 32, 50
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() { // exits after its calls
			defer wg.Done()
			for i := range each {
				n := c*each + i
				if res, err := b.Do(context.Background(), n); err != nil || res != n*10 {
					t.Errorf("request %d: %d, %v", n, res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[int]int{}
	for _, batch := range r.seen() {
		if len(batch) > 16 {
			t.Errorf("batch of %d, want at most 16", len(batch))
		}
		for _, n := range batch {
			seen[n]++
		}
	}
	for n := range callers * each {
		if seen[n] != 1 {
			t.Fatalf("request %d committed %d times", n, seen[n])
		}
	}
	if st := b.Stats(); st.Requests != callers*each || st.Created != callers*each || st.Commits != uint64(len(r.seen())) {
		t.Fatalf("stats %+v for %d requests in %d batches", st, callers*each, len(r.seen()))
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []batch.Config[int, int]{
		{Max: 0, Commit: (&recorder{}).commit},
		{Max: 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", cfg)
				}
			}()
			batch.New(cfg).Close()
		}()
	}
}
