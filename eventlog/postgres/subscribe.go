package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
)

const (
	// subscriptionPage is how many events a subscription reads per query.
	subscriptionPage = 512
	// subscriptionBuffer is the capacity of a subscription's channel.
	subscriptionBuffer = 256
)

// Subscribe starts a catch-up subscription delivering every event with
// Position > after: it pages through history, then waits for appends,
// woken at once by this process's commits and by the schema's
// notifications (LISTEN/NOTIFY: commits of every process), and reading
// again every PollInterval in case a notification was lost. Delivery
// blocks while the reader is not keeping up. The subscription ends with
// Err nil when ctx ends or it is closed, and with eventlog.ErrClosed when
// the log is closed.
func (l *Log) Subscribe(ctx context.Context, after eventlog.Position) (eventlog.Subscription, error) {
	return l.subscribe(ctx, after, l.readAll)
}

var _ eventlog.TypeSubscriber = (*Log)(nil)

// SubscribeTypes is Subscribe delivering skeletons of the events whose
// type is not in types (see eventlog.TypeSubscriber): their payloads stay
// on the server.
func (l *Log) SubscribeTypes(ctx context.Context, after eventlog.Position, types []string) (eventlog.Subscription, error) {
	types = slices.Clone(types)
	if types == nil {
		types = []string{}
	}
	read := func(ctx context.Context, after eventlog.Position, limit int) ([]eventlog.Event, error) {
		return l.skimAll(ctx, after, limit, types)
	}
	return l.subscribe(ctx, after, read)
}

// pageReader reads the next events of a subscription.
type pageReader func(ctx context.Context, after eventlog.Position, limit int) ([]eventlog.Event, error)

func (l *Log) subscribe(ctx context.Context, after eventlog.Position, read pageReader) (eventlog.Subscription, error) {
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	defer l.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &subscription{
		events: make(chan eventlog.Event, subscriptionBuffer),
		cancel: cancel,
		ended:  make(chan struct{}),
	}
	// Added under mu, so Close (which flips closed under mu) waits for it.
	l.subs.Add(1)
	go s.run(ctx, l, after, read)
	return s, nil
}

// subscription is a running catch-up subscription. Its goroutine (run)
// exits when ctx ends (Close cancels it) or the log closes, after waiting
// for its page reader (readPages), which stops on the same signals.
type subscription struct {
	events chan eventlog.Event
	cancel context.CancelFunc
	ended  chan struct{}

	mu  sync.Mutex
	err error
}

// Events delivers events in position order; it is closed when the
// subscription ends.
func (s *subscription) Events() <-chan eventlog.Event { return s.events }

// Err reports why the subscription ended, once Events is closed.
func (s *subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and waits for its goroutine to exit.
func (s *subscription) Close() error {
	s.cancel()
	<-s.ended
	return nil
}

func (s *subscription) run(ctx context.Context, l *Log, after eventlog.Position, read pageReader) {
	defer l.subs.Done()
	defer close(s.ended)
	defer close(s.events)
	defer s.cancel()
	err := s.deliver(ctx, l, after, read)
	if ctx.Err() != nil && !errors.Is(err, eventlog.ErrClosed) {
		err = nil
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// deliver follows the log from after until ctx ends (returning ctx's
// error) or the log closes (eventlog.ErrClosed). A reader goroutine fetches
// the next page while this one hands the current page over, so catch-up
// reading and delivery overlap.
func (s *subscription) deliver(ctx context.Context, l *Log, after eventlog.Position, read pageReader) error {
	readCtx, stopReader := context.WithCancel(ctx)
	pages := make(chan page, 1)
	go readPages(readCtx, l, after, read, pages)
	defer func() {
		stopReader()
		for range pages { // wait for the reader to exit
		}
	}()
	for {
		var p page
		select {
		case p = <-pages:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			return eventlog.ErrClosed
		}
		if p.err != nil {
			select {
			case <-l.done:
				return eventlog.ErrClosed
			default:
			}
			return p.err
		}
		for i := range p.events {
			select {
			case s.events <- p.events[i]:
			case <-ctx.Done():
				return ctx.Err()
			case <-l.done:
				return eventlog.ErrClosed
			}
		}
	}
}

// page is one read of a subscription: events, or the error that ends it.
type page struct {
	events []eventlog.Event
	err    error
}

// readPages is a subscription's reader goroutine: it sends the pages of
// events after after, in order, waiting whenever it has caught up for a
// wake-up or PollInterval, whichever comes first. It exits, closing
// pages, when ctx ends, the log closes or a read fails (the failure is its
// last page).
//
// No event is skipped: positions are assigned and committed in order
// under the append lock (doc.go), so once a read returned position p,
// every event below p is already visible.
func readPages(ctx context.Context, l *Log, after eventlog.Position, read pageReader, pages chan<- page) {
	defer close(pages)
	poll := time.NewTimer(l.cfg.PollInterval)
	defer poll.Stop()
	pos := after
	for {
		// Take the wake-up channel before reading, so a commit after the
		// read still wakes us.
		woken := l.changed.wait()
		evs, err := read(ctx, pos, subscriptionPage)
		if err != nil {
			err = fmt.Errorf("subscription after %d: %w", pos, err)
		}
		if err != nil || len(evs) > 0 {
			select {
			case pages <- page{events: evs, err: err}:
			case <-ctx.Done():
				return
			case <-l.done:
				return
			}
			if err != nil {
				return
			}
			pos = evs[len(evs)-1].Position
		}
		if len(evs) == subscriptionPage {
			continue
		}
		poll.Reset(l.cfg.PollInterval)
		select {
		case <-woken:
		case <-poll.C:
		case <-ctx.Done():
			return
		case <-l.done:
			return
		}
	}
}
