package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/internal/follow"
)

// Subscribe starts a catch-up subscription delivering every event with
// Position > after: it pages through history, then waits for appends of
// this process (woken as soon as they are durable, never before: see
// doc.go) and of other processes (seen within PollInterval). Delivery
// blocks while the reader is not keeping up. The subscription ends with Err
// nil when ctx ends or it is closed, and with eventlog.ErrClosed when the
// log is closed.
func (l *Log) Subscribe(ctx context.Context, after eventlog.Position) (eventlog.Subscription, error) {
	return l.subscribe(ctx, after, nil)
}

var _ eventlog.TypeSubscriber = (*Log)(nil)

// SubscribeTypes is Subscribe delivering skeletons of the events whose
// type is not in types (see eventlog.TypeSubscriber): their payloads are
// never read into memory.
func (l *Log) SubscribeTypes(ctx context.Context, after eventlog.Position, types []string) (eventlog.Subscription, error) {
	if types == nil {
		types = []string{}
	}
	typesJSON, err := json.Marshal(types)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	read := func(ctx context.Context, after eventlog.Position, limit int) ([]eventlog.Event, error) {
		return l.skimAll(ctx, after, limit, string(typesJSON))
	}
	return l.subscribe(ctx, after, read)
}

func (l *Log) subscribe(ctx context.Context, after eventlog.Position, read follow.Reader) (eventlog.Subscription, error) {
	if read == nil {
		read = l.readAll
	}
	if err := l.readLock(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	defer l.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	// Added under mu, so Close (which flips closed under mu) waits for it.
	l.subs.Add(1)
	return follow.Start(ctx, after, follow.Config{Read: read, Changed: l.changed, Closed: l.done,
		Exited: l.subs.Done}), nil
}

// runPoller is the goroutine that notices commits of other processes: every
// PollInterval it reads PRAGMA data_version on its own connection (a cheap
// check that changes whenever another connection commits, this process's
// writer included: the subscriptions woken for those re-read in vain, their
// reads being capped until the syncer wakes them) and wakes the
// subscriptions when it changed. It exits when the log closes.
func (l *Log) runPoller() {
	defer close(l.pollerDone)
	ctx := context.Background()
	last := l.pollVersion
	ticker := time.NewTicker(l.cfg.PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-ticker.C:
		}
		var version int64
		if err := l.pollConn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
			// A failed check is retried on the next tick; subscriptions
			// still wake on this process's own commits meanwhile.
			continue
		}
		if version != last {
			last = version
			l.changed.Notify()
		}
	}
}
