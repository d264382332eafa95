package vaulttest

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/cgp-platform/cgp/vault"
)

// BenchOpener returns a new, empty vault for one benchmark; Bench closes it.
type BenchOpener func(b *testing.B) vault.Vault

// benchSubjects is how many existing subjects the lookup benchmarks cycle
// through: enough to defeat trivial locality, few enough to set up fast.
const benchSubjects = 256

// Bench measures an adapter's hot paths: DataKey of an existing subject
// (serial and parallel), DataKey creating a new subject, and Shred. Run it
// once on the adapter and once on vault.NewCache of it to compare.
func Bench(b *testing.B, open BenchOpener) {
	b.Run("DataKeyExisting", func(b *testing.B) {
		v, subjects := openWithSubjects(b, open)
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := v.DataKey(ctx, "shop_bench", subjects[i%len(subjects)], false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DataKeyExistingParallel", func(b *testing.B) {
		v, subjects := openWithSubjects(b, open)
		ctx := context.Background()
		var next atomic.Uint64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				if _, err := v.DataKey(ctx, "shop_bench", subjects[i%uint64(len(subjects))], false); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("DataKeyCreate", func(b *testing.B) {
		v := openClosed(b, open)
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := v.DataKey(ctx, "shop_bench", fmt.Sprintf("cus_%d", i), true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Shred", func(b *testing.B) {
		v := openClosed(b, open)
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := v.Shred(ctx, "shop_bench", fmt.Sprintf("cus_%d", i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func openClosed(b *testing.B, open BenchOpener) vault.Vault {
	v := open(b)
	b.Cleanup(func() {
		if err := v.Close(); err != nil {
			b.Errorf("close: %v", err)
		}
	})
	return v
}

func openWithSubjects(b *testing.B, open BenchOpener) (vault.Vault, []string) {
	v := openClosed(b, open)
	subjects := make([]string, benchSubjects)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("cus_%d", i)
		if _, err := v.DataKey(context.Background(), "shop_bench", subjects[i], true); err != nil {
			b.Fatal(err)
		}
	}
	return v, subjects
}

// BenchParallelCreate measures DataKey creating distinct new subjects from
// about goroutines concurrent callers (b.SetParallelism rounds it up to a
// multiple of GOMAXPROCS), the load of webhook ingestion when many new
// customers arrive at once. Besides ns/op (wall time per create across all
// callers) it reports creates/s and the number of callers.
func BenchParallelCreate(b *testing.B, open BenchOpener, goroutines int) {
	v := openClosed(b, open)
	procs := runtime.GOMAXPROCS(0)
	parallelism := max(1, (goroutines+procs-1)/procs)
	ctx := context.Background()
	var next atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			subject := "cus_" + strconv.FormatUint(next.Add(1), 10)
			k, err := v.DataKey(ctx, "shop_bench", subject, true)
			if err != nil {
				b.Error(err)
				return
			}
			if len(k) != vault.KeySize {
				b.Errorf("%s: key of %d bytes", subject, len(k))
				return
			}
		}
	})
	b.StopTimer()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "creates/s")
	}
	b.ReportMetric(float64(parallelism*procs), "callers")
}
