package lease

import (
	"context"
	"errors"
	"sync"
)

// ErrLost is matched (errors.Is) by the error Run returns when the lease
// was lost while f ran: the holder's hold on it broke (its connection to
// the shared store failed), so another holder may have it now.
var ErrLost = errors.New("lease lost")

// Lease grants named leases, each to one holder at a time.
type Lease interface {
	// Run waits until this holder has the lease named name, runs f, and
	// gives the lease back when f returns. f's ctx ends when ctx ends or
	// as soon as the lease is found lost; f must then return.
	//
	// Run returns ctx's error (f not run) when ctx ends before the lease is
	// had; an error matching ErrLost when the lease was lost while f ran
	// (joined with f's error unless that is only its context's end); else
	// f's error. A lost lease is not taken again by Run: the caller calls
	// Run again to wait for it.
	//
	// Any number of Run calls, of one process or several, may wait on one
	// name; one at a time runs its f. Names are independent. Safe for
	// concurrent use.
	Run(ctx context.Context, name string, f func(ctx context.Context) error) error
}

// Local is the in-process Lease: the holders of one process take each
// name in turn, and no other process is known. For a single server it is
// granted at once, so the work runs as it would without a lease. A Local
// lease is never lost.
type Local struct {
	mu    sync.Mutex
	names map[string]chan struct{}
}

// NewLocal returns an in-process lease with no name held.
func NewLocal() *Local { return &Local{names: map[string]chan struct{}{}} }

// Run implements Lease.
func (l *Local) Run(ctx context.Context, name string, f func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	held, ok := l.names[name]
	if !ok {
		held = make(chan struct{}, 1)
		l.names[name] = held
	}
	l.mu.Unlock()
	select {
	case held <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-held }()
	return f(ctx)
}
