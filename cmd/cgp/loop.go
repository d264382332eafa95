package main

import (
	"context"
	"time"
)

// everyTick runs pass at once and then every interval until ctx ends, and
// returns nil then (after the pass under way, if any): a job of the
// supervisor.
func everyTick(ctx context.Context, every time.Duration, pass func(ctx context.Context)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
