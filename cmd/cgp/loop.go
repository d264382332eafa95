package main

import (
	"context"
	"time"
)

// everyTick runs pass at once and then every interval until ctx ends, in a
// goroutine, and returns a channel closed when it stopped (after the pass
// under way, if any).
func everyTick(ctx context.Context, every time.Duration, pass func(ctx context.Context)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			pass(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return done
}
