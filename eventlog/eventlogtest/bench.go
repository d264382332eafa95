package eventlogtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// benchAppenders is how many goroutines per GOMAXPROCS append in parallel:
// enough for group commit to matter, as under real load.
const benchAppenders = 32

// Bench runs the shared benchmarks against the adapter that open returns.
// open is called once per sub-benchmark run and must return a fresh, empty
// log, registering its cleanup with b.Cleanup.
//
//   - AppendParallel1KB: many goroutines each appending one 1 KB event per
//     call to their own stream; ns/op is per event.
//   - ReadAll: paging through a prefilled log of 1 KB events, 500 per call;
//     ns/op is per event read.
func Bench(b *testing.B, open func(b *testing.B) eventlog.Log) {
	b.Run("AppendParallel1KB", func(b *testing.B) {
		l := open(b)
		payload := make([]byte, 1024)
		var streams atomic.Int64
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		b.SetParallelism(benchAppenders)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			stream := fmt.Sprintf("bench-%d", streams.Add(1))
			e := eventlog.EventData{Type: "BenchAppended", SchemaVersion: 1, ShopID: "shop_bench", OccurredAt: occurred(), Data: payload}
			for pb.Next() {
				e.ID = uuid.New()
				if _, err := l.Append(context.Background(), stream, eventlog.Any(), e); err != nil {
					b.Errorf("append: %v", err)
					return
				}
			}
		})
	})
	b.Run("ReadAll", func(b *testing.B) {
		const prefill, perAppend, page = 5000, 100, 500
		l := open(b)
		payload := make([]byte, 1024)
		for i := 0; i < prefill; i += perAppend {
			evs := make([]eventlog.EventData, perAppend)
			for j := range evs {
				evs[j] = eventlog.EventData{ID: uuid.New(), Type: "BenchAppended", SchemaVersion: 1, ShopID: "shop_bench", OccurredAt: occurred(), Data: payload}
			}
			mustAppend(b, l, fmt.Sprintf("bench-%d", i/1000), eventlog.Any(), evs...)
		}
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		b.ResetTimer()
		var after eventlog.Position
		for read := 0; read < b.N; {
			evs, err := l.ReadAll(context.Background(), after, min(page, b.N-read))
			if err != nil {
				b.Fatalf("read all after %d: %v", after, err)
			}
			if len(evs) == 0 {
				after = 0
				continue
			}
			read += len(evs)
			after = evs[len(evs)-1].Position
		}
	})
}
