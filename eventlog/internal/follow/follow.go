// Package follow is the catch-up subscription the event-log adapters
// share (SQLite, PostgreSQL): a goroutine pages through the log from a
// position while another hands the pages over, then waits for a wake-up
// (the adapter's Broadcast, notified after each commit it can see) or,
// when set, a poll interval. Each adapter supplies how to read a page and
// when it has closed.
package follow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
)

const (
	// Page is how many events a subscription reads per query.
	Page = 512
	// Buffer is the capacity of a subscription's channel.
	Buffer = 256
)

// Broadcast wakes every waiter at once: Wait returns a channel that Notify
// closes (and replaces).
type Broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewBroadcast returns a broadcast with no notification pending.
func NewBroadcast() *Broadcast { return &Broadcast{ch: make(chan struct{})} }

// Wait returns the channel the next Notify closes.
func (b *Broadcast) Wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

// Notify wakes every waiter.
func (b *Broadcast) Notify() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// Reader reads the events after a position, at most limit.
type Reader func(ctx context.Context, after eventlog.Position, limit int) ([]eventlog.Event, error)

// Config is what a subscription follows.
type Config struct {
	// Read reads a page. Every event below the last position it returned
	// must already be visible (the adapter's ordering guarantee).
	Read Reader
	// Changed is notified when new events may be readable.
	Changed *Broadcast
	// Closed is closed when the log closes: the subscription then ends
	// with eventlog.ErrClosed.
	Closed <-chan struct{}
	// Poll, when not zero, reads again after this long without a wake-up
	// (for commits no notification reports).
	Poll time.Duration
	// Exited is called once the subscription's goroutines have exited.
	Exited func()
}

// Start starts a subscription delivering every event with Position >
// after. It ends with Err nil when ctx ends or it is closed, with
// eventlog.ErrClosed when the log closes, or with a read's error.
func Start(ctx context.Context, after eventlog.Position, cfg Config) eventlog.Subscription {
	ctx, cancel := context.WithCancel(ctx)
	s := &subscription{events: make(chan eventlog.Event, Buffer), cancel: cancel, ended: make(chan struct{})}
	go s.run(ctx, after, cfg)
	return s
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

func (s *subscription) run(ctx context.Context, after eventlog.Position, cfg Config) {
	if cfg.Exited != nil {
		defer cfg.Exited()
	}
	defer close(s.ended)
	defer close(s.events)
	defer s.cancel()
	err := s.deliver(ctx, after, cfg)
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
func (s *subscription) deliver(ctx context.Context, after eventlog.Position, cfg Config) error {
	readCtx, stopReader := context.WithCancel(ctx)
	pages := make(chan page, 1)
	go readPages(readCtx, after, cfg, pages)
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
		case <-cfg.Closed:
			return eventlog.ErrClosed
		}
		if p.err != nil {
			select {
			case <-cfg.Closed:
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
			case <-cfg.Closed:
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
// wake-up (or the poll interval, when set). It exits, closing pages, when
// ctx ends, the log closes or a read fails (the failure is its last
// page).
func readPages(ctx context.Context, after eventlog.Position, cfg Config, pages chan<- page) {
	defer close(pages)
	var poll <-chan time.Time
	var timer *time.Timer
	if cfg.Poll > 0 {
		timer = time.NewTimer(cfg.Poll)
		defer timer.Stop()
	}
	pos := after
	for {
		// Take the wake-up channel before reading, so a commit after the
		// read still wakes us.
		woken := cfg.Changed.Wait()
		evs, err := cfg.Read(ctx, pos, Page)
		if err != nil {
			err = fmt.Errorf("subscription after %d: %w", pos, err)
		}
		if err != nil || len(evs) > 0 {
			select {
			case pages <- page{events: evs, err: err}:
			case <-ctx.Done():
				return
			case <-cfg.Closed:
				return
			}
			if err != nil {
				return
			}
			pos = evs[len(evs)-1].Position
		}
		if len(evs) == Page {
			continue
		}
		if timer != nil {
			timer.Reset(cfg.Poll)
			poll = timer.C
		}
		select {
		case <-woken:
		case <-poll:
		case <-ctx.Done():
			return
		case <-cfg.Closed:
			return
		}
	}
}
