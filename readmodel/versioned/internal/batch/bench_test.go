package batch_test

import (
	"context"
	"testing"

	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/internal/batch"
)

type discard struct{}

func (discard) Send(context.Context, *batch.Batch) error                  { return nil }
func (discard) SaveCheckpoints(context.Context, []batch.Checkpoint) error { return nil }

// BenchmarkAddFlush measures the batcher's own cost per row: queueing,
// sealing with the content token, checkpoint accounting.
func BenchmarkAddFlush(b *testing.B) {
	bt := batch.New(batch.Config{MaxRows: 5000}, discard{})
	row := versioned.Row{Values: []any{"shop_1", "ord_123456789", "linear", int64(12345), 0.25}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		row.Version = uint64(i + 1)
		bt.Add("attribution", uint64(i+1), []batch.Entry{{Table: "t", Row: row}})
		if i%5000 == 4999 {
			if err := bt.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
}
