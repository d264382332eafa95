package esdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

// subscriptionBuffer is how many decoded events a subscription holds ahead
// of its consumer.
const subscriptionBuffer = 64

// Subscribe starts a catch-up subscription to $all (never a persistent
// subscription) delivering every event of our log with Position > after, in
// order. System events are filtered out by the server and, for system
// streams, by the adapter. When the server drops the subscription (node
// restart, leader change, network), the adapter resubscribes from the last
// event it handled, with exponential backoff between ResubscribeMin and
// ResubscribeMax, and skips anything at or before that event: no event is
// delivered twice or skipped. It ends when ctx ends, on Close (of the
// subscription or the Log), or on a failure retrying cannot fix
// (authorisation, an event that cannot be decoded), reported by Err.
//
// The first subscription is made before Subscribe returns, so an
// unreachable server is reported at once (matching eventlog.ErrUnavailable).
func (l *Log) Subscribe(ctx context.Context, after eventlog.Position) (eventlog.Subscription, error) {
	const op = "subscribe"
	_, done, err := l.begin()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer done()

	// The subscription lives in subCtx: the caller's context, ended by
	// Close, and by Log.Close should it give up waiting for this call.
	subCtx, cancelSub := context.WithCancel(ctx)
	stop := context.AfterFunc(l.closing, cancelSub)
	cancel := func() {
		stop()
		cancelSub()
	}
	events := make(chan eventlog.Event, subscriptionBuffer)
	r := &runner{
		subscribe: l.subscribeAll,
		codec:     l.codec,
		sleep:     sleepCtx,
		backoff:   backoff{min: l.cfg.ResubscribeMin, max: l.cfg.ResubscribeMax},
		cursor:    newCursor(after),
		out:       events,
	}
	src, err := r.subscribe(subCtx, r.cursor.from())
	for err != nil && isInvalidPosition(err) && r.cursor.retreat() {
		src, err = r.subscribe(subCtx, r.cursor.from())
	}
	if err != nil {
		cancel()
		return nil, wrapErr(ctx, op, err)
	}
	s := &subscription{events: events, cancel: cancel, done: make(chan struct{})}
	if !l.register(s) {
		_ = src.Close()
		cancel()
		return nil, fmt.Errorf("%s: %w", op, eventlog.ErrClosed)
	}
	// The goroutine exits when subCtx ends (caller's ctx, s.Close, or
	// Log.Close through s.Close) or run fails permanently.
	go func() {
		defer close(s.done)
		err := r.run(subCtx, src)
		s.finish(err)
		l.forget(s)
	}()
	return s, nil
}

// subscribeAll opens a filtered catch-up subscription to $all on the
// current client.
func (l *Log) subscribeAll(ctx context.Context, from es.AllPosition) (source, error) {
	c := l.currentClient()
	if c == nil {
		return nil, eventlog.ErrClosed
	}
	sub, err := clientCall(ctx, l, c, func() (*es.Subscription, error) {
		return c.SubscribeToAll(ctx, es.SubscribeToAllOptions{From: from, Filter: l.codec.filter()})
	})
	if err != nil {
		l.noteErr(c, err)
		return nil, err
	}
	return sub, nil
}

// subscription is the handle Subscribe returns.
type subscription struct {
	events chan eventlog.Event
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// Events delivers events in position order; it is closed when the
// subscription ends.
func (s *subscription) Events() <-chan eventlog.Event { return s.events }

// Err reports why the subscription ended once Events is closed: nil after
// Close or ctx cancellation.
func (s *subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and waits for its goroutine to exit.
func (s *subscription) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *subscription) finish(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.events)
}

// source is the part of *es.Subscription the runner uses.
type source interface {
	Recv() *es.SubscriptionEvent
	Close() error
}

// runner is the state machine of one subscription: it pumps events from the
// current source through the cursor (which drops anything already handled)
// and the codec (which drops what is not ours) to out, and replaces the
// source when the server drops it.
type runner struct {
	subscribe func(ctx context.Context, from es.AllPosition) (source, error)
	codec     codec
	sleep     func(ctx context.Context, d time.Duration) error
	backoff   backoff
	cursor    cursor
	out       chan<- eventlog.Event
}

// errNoDropReason stands in for a drop the client reported without a cause.
var errNoDropReason = errors.New("subscription dropped")

// run delivers events from src and its successors until ctx ends (nil) or a
// failure that resubscribing cannot fix (returned). Every source it gets is
// closed before it returns.
func (r *runner) run(ctx context.Context, src source) error {
	for {
		retry, err := r.pump(ctx, src)
		_ = src.Close()
		if ctx.Err() != nil {
			return nil
		}
		// A start inside a record is refused once the server begins reading:
		// start earlier at once, the cursor skipping up to the caller's
		// position.
		wait := true
		if isInvalidPosition(err) && r.cursor.retreat() {
			wait = false
		} else if !retry {
			return err
		}
		if src, err = r.resubscribe(ctx, wait); src == nil {
			return err
		}
	}
}

// resubscribe subscribes again from the cursor, waiting out the backoff
// first if wait, until it succeeds (the new source), ctx ends (nil, nil) or
// the failure is permanent (nil, err).
func (r *runner) resubscribe(ctx context.Context, wait bool) (source, error) {
	for {
		if wait {
			if err := r.sleep(ctx, r.backoff.next()); err != nil || ctx.Err() != nil {
				return nil, nil
			}
		}
		wait = true
		src, err := r.subscribe(ctx, r.cursor.from())
		if err == nil {
			return src, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if isInvalidPosition(err) && r.cursor.retreat() {
			wait = false
			continue
		}
		if isPermanent(err) {
			return nil, fmt.Errorf("resubscribe: %w", err)
		}
	}
}

// pump handles src's notifications until it drops or ctx ends. It returns
// whether resubscribing may help, and the reason.
func (r *runner) pump(ctx context.Context, src source) (retry bool, err error) {
	for {
		ev := src.Recv()
		switch {
		case ev == nil:
			continue
		case ev.SubscriptionDropped != nil:
			err := ev.SubscriptionDropped.Error
			if err == nil {
				err = errNoDropReason
			}
			if isPermanent(err) {
				return false, fmt.Errorf("subscription dropped: %w", err)
			}
			return true, err
		case ev.EventAppeared != nil:
			r.backoff.reset()
			rec := ev.EventAppeared.OriginalEvent()
			if rec == nil {
				continue
			}
			_, isNew, err := r.cursor.admit(rec.Position)
			if err != nil {
				return false, fmt.Errorf("event %s@%d: %w", rec.StreamID, rec.EventNumber, err)
			}
			if !isNew || !r.codec.belongs(rec.StreamID, rec.EventType) {
				continue
			}
			e, err := r.codec.decode(rec)
			if err != nil {
				return false, err
			}
			select {
			case r.out <- e:
			case <-ctx.Done():
				return false, nil
			}
		default:
			// Checkpoint, caught up, fell behind: the server is serving us.
			r.backoff.reset()
		}
	}
}

// backoff yields exponentially growing delays from min, doubling up to max,
// until reset.
type backoff struct {
	min, max time.Duration
	cur      time.Duration // the next delay; 0 means min
}

// next returns the delay before the next attempt and doubles the one after.
func (b *backoff) next() time.Duration {
	d := b.cur
	if d < b.min {
		d = b.min
	}
	if d > b.max {
		d = b.max
	}
	if d > b.max/2 {
		b.cur = b.max
	} else {
		b.cur = 2 * d
	}
	return d
}

// reset starts the sequence again from min.
func (b *backoff) reset() { b.cur = 0 }

// sleepCtx waits d or until ctx ends (returning its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
