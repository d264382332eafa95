package batch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Do once Close has begun, unless Config.Closed
// names another error.
var ErrClosed = errors.New("batcher closed")

// Config configures a Batcher.
type Config[Req, Res any] struct {
	// Max bounds how many requests one commit takes: at least 1.
	Max int
	// Commit stores one batch. The Batcher's goroutine calls it, one call
	// at a time, with the batch's requests, oldest first, and out of the
	// same length: Commit fills out[i] with the answer to reqs[i] and
	// reports how many items it created (for Stats). When it returns an
	// error, every caller of the batch gets that error and out is ignored.
	// Both slices are reused once it returns: keep neither.
	Commit func(reqs []Req, out []Res) (created uint64, err error)
	// Lock, when not nil, is held from before the batch's abandoned
	// requests are dropped until every answer is sent, so that a batch
	// runs only while the adapter's other writers are out (and a caller
	// that gives up while the batch waits for the lock is not committed).
	Lock sync.Locker
	// Closed is the error Do returns once Close has begun. Defaults to
	// ErrClosed.
	Closed error
}

// Stats counts a Batcher's work since New.
type Stats struct {
	// Commits is the number of batches committed: Commit calls that
	// returned no error.
	Commits uint64
	// Requests is the number of requests those batches answered.
	// Requests/Commits is the mean group-commit size.
	Requests uint64
	// Created is the sum of what those Commit calls reported created.
	Created uint64
}

// Batcher group-commits requests of type Req, answering each with a Res.
// Its methods are safe for concurrent use. New starts its goroutine, which
// returns once Close has begun and every request queued before it has
// been answered.
type Batcher[Req, Res any] struct {
	cfg Config[Req, Res]

	// mu guards pending, inFlight and closed.
	mu       sync.Mutex
	pending  []*call[Req, Res]
	inFlight int
	closed   bool
	// wake tells the goroutine that pending grew or that closed was set;
	// one wake-up pending covers any number of signals.
	wake chan struct{}
	// done is closed when the goroutine returns.
	done chan struct{}

	commits, requests, created atomic.Uint64
}

// call is one Do waiting for its batch.
type call[Req, Res any] struct {
	req Req
	// gone is the caller's ctx.Done(): a call whose caller has gone before
	// its batch starts is dropped unanswered.
	gone <-chan struct{}
	// done receives the answer; buffered, so that the goroutine never
	// waits for a caller that has stopped listening.
	done chan answer[Res]
}

type answer[Res any] struct {
	res Res
	err error
}

// New starts a Batcher. It panics when cfg.Max is below 1 or cfg.Commit is
// nil: those are programming errors. Call Close to stop its goroutine.
func New[Req, Res any](cfg Config[Req, Res]) *Batcher[Req, Res] {
	if cfg.Max < 1 || cfg.Commit == nil {
		panic("batch: Config needs Max >= 1 and a Commit function")
	}
	if cfg.Closed == nil {
		cfg.Closed = ErrClosed
	}
	b := &Batcher[Req, Res]{
		cfg:  cfg,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	go b.run() // returns once Close has set closed and the queue is empty
	return b
}

// Do queues req and waits for its batch's answer or for ctx. It returns
// the Res that Commit gave req, Commit's error, Config.Closed once Close
// has begun, or ctx.Err(). When ctx ends while req waits, Do returns at
// once; req is then committed if its batch had already started (taken the
// Lock), not otherwise.
func (b *Batcher[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	var zero Res
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := &call[Req, Res]{req: req, gone: ctx.Done(), done: make(chan answer[Res], 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return zero, b.cfg.Closed
	}
	b.pending = append(b.pending, c)
	b.mu.Unlock()
	b.signal()
	select {
	case a := <-c.done:
		return a.res, a.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Close stops taking requests (Do returns Config.Closed from now on),
// waits until every request queued before it has been committed and
// answered, or dropped because its caller had gone, and until the
// goroutine has returned. Calling it again waits likewise.
func (b *Batcher[Req, Res]) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
	<-b.done
}

// Stats reports the Batcher's counters.
func (b *Batcher[Req, Res]) Stats() Stats {
	return Stats{
		Commits:  b.commits.Load(),
		Requests: b.requests.Load(),
		Created:  b.created.Load(),
	}
}

// Queued reports how many requests wait for a batch.
func (b *Batcher[Req, Res]) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// InFlight reports how many requests the goroutine has taken from the
// queue and not yet answered (or dropped): the batch being committed.
func (b *Batcher[Req, Res]) InFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight
}

// Closing reports whether Close has begun.
func (b *Batcher[Req, Res]) Closing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// signal wakes the goroutine if it sleeps.
func (b *Batcher[Req, Res]) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run is the goroutine. It commits what is queued, batch by batch, and
// returns once Close has set closed and the queue is empty, so every
// request queued before Close is answered.
func (b *Batcher[Req, Res]) run() {
	defer close(b.done)
	var (
		calls []*call[Req, Res]
		reqs  []Req
		out   []Res
	)
	for {
		calls = b.next(calls[:0])
		if len(calls) == 0 {
			return
		}
		reqs, out = b.commit(calls, reqs, out)
		clear(calls)
		b.mu.Lock()
		b.inFlight = 0
		b.mu.Unlock()
	}
}

// next moves up to Max queued calls, oldest first, into buf. It waits
// while the queue is empty, and returns an empty batch only once Close has
// begun and the queue is drained.
func (b *Batcher[Req, Res]) next(buf []*call[Req, Res]) []*call[Req, Res] {
	for {
		b.mu.Lock()
		if n := min(len(b.pending), b.cfg.Max); n > 0 {
			buf = append(buf, b.pending[:n]...)
			rest := copy(b.pending, b.pending[n:])
			clear(b.pending[rest:])
			b.pending = b.pending[:rest]
			b.inFlight = n
			b.mu.Unlock()
			return buf
		}
		closed := b.closed
		b.mu.Unlock()
		if closed {
			return buf
		}
		<-b.wake
	}
}

// commit runs one batch, under Lock when there is one, and answers each
// call whose caller is still waiting. reqs and out are scratch space,
// returned for reuse, cleared so that they keep no caller's data.
func (b *Batcher[Req, Res]) commit(calls []*call[Req, Res], reqs []Req, out []Res) ([]Req, []Res) {
	if b.cfg.Lock != nil {
		b.cfg.Lock.Lock()
		defer b.cfg.Lock.Unlock()
	}
	live := calls[:0]
	for _, c := range calls {
		select {
		case <-c.gone:
			// The caller has returned ctx.Err(); it asked for nothing to be
			// guaranteed, and committing nothing is cheapest.
		default:
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return reqs, out
	}
	reqs = reqs[:0]
	for _, c := range live {
		reqs = append(reqs, c.req)
	}
	out = slices.Grow(out[:0], len(live))[:len(live)]
	created, err := b.cfg.Commit(reqs, out)
	if err == nil {
		b.commits.Add(1)
		b.requests.Add(uint64(len(live)))
		b.created.Add(created)
	}
	for i, c := range live {
		if err != nil {
			c.done <- answer[Res]{err: err}
			continue
		}
		c.done <- answer[Res]{res: out[i]}
	}
	clear(reqs)
	clear(out)
	return reqs, out
}
