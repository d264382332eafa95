package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/internal/follow"
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

func (l *Log) subscribe(ctx context.Context, after eventlog.Position, read follow.Reader) (eventlog.Subscription, error) {
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	defer l.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	// Added under mu, so Close (which flips closed under mu) waits for it.
	l.subs.Add(1)
	return follow.Start(ctx, after, follow.Config{Read: read, Changed: l.changed, Closed: l.done, Poll: l.cfg.PollInterval,
		Exited: l.subs.Done}), nil
}
