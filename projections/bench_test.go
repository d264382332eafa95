package projections_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
)

// BenchmarkProjection measures events projected per second through the
// whole runtime (subscription, router, middleware, read-model
// transactions with the checkpoint) with a projector that writes nothing
// of its own, catching up on a log filled before the timer starts: with
// the default batching (DefaultBatch events per transaction at most), and with one
// event per transaction as the baseline of the same run.
func BenchmarkProjection(b *testing.B) {
	for _, batch := range []int{projections.DefaultBatch, 1} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchmarkProjection(b, batch) })
	}
}

func benchmarkProjection(b *testing.B, maxBatch int) {
	e := newEnv(b)
	const batch = 500
	var last eventlog.Position
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		events := make([]eventlog.EventData, n)
		for j := range events {
			events[j] = eventlog.EventData{ID: uuid.New(), Type: "Ticked", SchemaVersion: 1, ShopID: "shop_1",
				OccurredAt: time.Now().UTC(), Data: []byte(`{"n":1}`)}
		}
		res, err := e.log.Append(context.Background(), fmt.Sprintf("tick-%d", i), eventlog.NoStream(), events...)
		if err != nil {
			b.Fatal(err)
		}
		last = res.Position
	}
	h := newRuntimeWith(b, e, e.store, func(c *projections.Config) { c.Batch = maxBatch }, projections.Projector{
		Name:   "trivial",
		Handle: func(context.Context, *sql.Tx, eventlog.Event) error { return nil },
	})
	b.ReportAllocs()
	b.ResetTimer()
	h.start(b)
	h.waitFor(b, last)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
