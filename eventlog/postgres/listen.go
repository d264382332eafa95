package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bounds of the listener's backoff between reconnections.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// runListener is the listener goroutine: on a connection of its own it
// LISTENs on the schema's channel, to which every append transaction
// sends its new head (pg_notify, delivered once the transaction commits),
// and wakes the subscriptions on each notification. When the connection
// fails it reconnects with backoff, waking the subscriptions once it
// listens again, since notifications sent meanwhile are lost (the
// subscriptions' polling covers that window too). It exits when ctx ends
// (Close).
func (l *Log) runListener(ctx context.Context) {
	defer close(l.listenerDone)
	wait := listenRetryMin
	for {
		listening, _ := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if listening {
			wait = listenRetryMin
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// listen connects, LISTENs and forwards notifications until the
// connection fails or ctx ends. It reports whether it got as far as
// listening.
func (l *Log) listen(ctx context.Context) (listening bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, l.listenConfig)
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	// Whatever was committed before LISTEN took effect sent no
	// notification this connection will see.
	l.changed.Notify()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return true, err
		}
		l.changed.Notify()
	}
}
