package replay

import (
	"context"
	"errors"
	"sync"

	"github.com/cgp-platform/cgp/eventlog"
)

// fanout is the event log as the lanes of a replay see it: one
// subscription reads the log, and each event it reads is handed to every
// lane, instead of every lane reading (and skimming) the whole log itself.
// It waits until each of the lanes has subscribed, reads from the lowest
// of their start positions, and gives each lane the events past its own.
// A subscription made once reading has started (a lane subscribing again
// after a failure) reads the log itself. Every other method is the log's,
// except Close, which stops the fan-out and leaves the log open.
//
// The lanes share the events (their Data too): a projector never modifies
// an event it is handed (Projector.Handle).
type fanout struct {
	eventlog.Log
	lanes int

	mu      sync.Mutex
	waiting []*fanSub
	started bool
	closed  bool
	err     error // why the reading ended, when it failed
	stop    context.CancelFunc
	wg      sync.WaitGroup // the reader and every subscription's goroutine
}

// Sizes of the fan-out's hand-over: a chunk is the events read at once
// (those already waiting, up to fanChunk); each lane may fall fanBuffer
// chunks behind the reader before the reader waits for it.
const (
	fanChunk  = 512
	fanBuffer = 64
)

// newFanout returns the fan-out of log to lanes subscriptions.
func newFanout(log eventlog.Log, lanes int) *fanout {
	return &fanout{Log: log, lanes: lanes}
}

// Subscribe returns a lane's subscription: from the shared reading while
// it has not started, from the log itself afterwards.
func (f *fanout) Subscribe(ctx context.Context, after eventlog.Position) (eventlog.Subscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started || f.closed {
		return f.Log.Subscribe(ctx, after)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &fanSub{
		after:  after,
		in:     make(chan []eventlog.Event, fanBuffer),
		events: make(chan eventlog.Event, fanChunk),
		cancel: cancel,
		ended:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	f.waiting = append(f.waiting, s)
	f.wg.Go(func() { s.run(sctx, f) })
	if len(f.waiting) == f.lanes {
		f.started = true
		from := s.after
		for _, w := range f.waiting {
			from = min(from, w.after)
		}
		rctx, stop := context.WithCancel(context.Background())
		f.stop = stop
		subs := f.waiting
		f.waiting = nil
		f.wg.Go(func() { f.read(rctx, subs, from) })
	}
	return s, nil
}

// Close stops the reading and ends every subscription of the fan-out,
// waiting for their goroutines; the log stays open.
func (f *fanout) Close() error {
	f.mu.Lock()
	f.closed = true
	if f.stop != nil {
		f.stop()
	}
	for _, s := range f.waiting {
		close(s.in) // never started: nothing reads for them
	}
	f.waiting = nil
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// read follows the log after from and hands what it reads to subs, until
// ctx ends, the log's subscription ends, or every sub has ended. It closes
// each sub's input when it returns.
func (f *fanout) read(ctx context.Context, subs []*fanSub, from eventlog.Position) {
	defer func() {
		for _, s := range subs {
			close(s.in)
		}
	}()
	sub, err := f.Log.Subscribe(ctx, from)
	if err != nil {
		f.fail(err)
		return
	}
	defer func() { _ = sub.Close() }()
	events := sub.Events()
	for {
		var chunk []eventlog.Event
		select {
		case e, open := <-events:
			if !open {
				f.ended(ctx, sub)
				return
			}
			chunk = append(make([]eventlog.Event, 0, fanChunk), e)
		case <-ctx.Done():
			return
		}
		closed := false
	gather:
		for len(chunk) < fanChunk {
			select {
			case e, open := <-events:
				if !open {
					closed = true
					break gather
				}
				chunk = append(chunk, e)
			default:
				break gather
			}
		}
		live := 0
		for _, s := range subs {
			select {
			case s.in <- chunk:
				live++
			case <-s.ended:
			case <-ctx.Done():
				return
			}
		}
		if closed {
			f.ended(ctx, sub)
			return
		}
		if live == 0 {
			return
		}
	}
}

// ended records why the log's subscription ended, unless the fan-out was
// stopped.
func (f *fanout) ended(ctx context.Context, sub eventlog.Subscription) {
	if ctx.Err() != nil {
		return
	}
	err := sub.Err()
	if err == nil {
		err = eventlog.ErrClosed
	}
	f.fail(err)
}

func (f *fanout) fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *fanout) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// fanSub is one lane's subscription to the fan-out.
type fanSub struct {
	after  eventlog.Position
	in     chan []eventlog.Event // from the reader
	events chan eventlog.Event   // to the lane
	cancel context.CancelFunc
	ended  chan struct{} // closed when run stops taking chunks
	done   chan struct{} // closed when run has returned

	mu  sync.Mutex
	err error
}

// run hands the events of the chunks past after to the lane until ctx
// ends or the reader closes in; it then closes events.
func (s *fanSub) run(ctx context.Context, f *fanout) {
	defer close(s.done)
	defer close(s.events)
	defer close(s.ended)
	for {
		select {
		case chunk, open := <-s.in:
			if !open {
				if ctx.Err() == nil {
					err := f.failure()
					if err == nil {
						err = errors.New("replay: the shared reading of the log stopped")
					}
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
				}
				return
			}
			for _, e := range chunk {
				if e.Position <= s.after {
					continue
				}
				select {
				case s.events <- e:
					s.after = e.Position
				case <-ctx.Done():
					return
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

// Events implements eventlog.Subscription.
func (s *fanSub) Events() <-chan eventlog.Event { return s.events }

// Err implements eventlog.Subscription.
func (s *fanSub) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close implements eventlog.Subscription.
func (s *fanSub) Close() error {
	s.cancel()
	<-s.done
	return nil
}
