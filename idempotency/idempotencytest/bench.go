package idempotencytest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/idempotency"
)

// Benchmark measures the adapter that open makes, on one backend with the
// default lease and window:
//
//   - Begin: a claim of a new key (the write path of every first request);
//   - BeginComplete: a claim and the storing of a 1 KiB response;
//   - BeginReplay: Begin on a completed key (a retry);
//   - BeginCompleteParallel: BeginComplete from GOMAXPROCS goroutines over
//     two store instances.
func Benchmark(b *testing.B, open Opener) {
	backend := open(b, Config{Lease: idempotency.DefaultLease, Window: idempotency.DefaultWindow, Now: time.Now})
	store := backend.Open()
	resp := benchResponse()
	ctx := context.Background()
	fingerprint := idempotency.Fingerprint(http.MethodPost, "/api/v1/campaigns", resp.Body)
	var seq atomic.Int64
	newKey := func() string { return "bench-" + strconv.FormatInt(seq.Add(1), 10) }

	b.Run("Begin", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := store.Begin(ctx, "tok_bench", newKey(), fingerprint); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BeginComplete", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := beginComplete(store, newKey(), fingerprint, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BeginReplay", func(b *testing.B) {
		key := newKey()
		if err := beginComplete(store, key, fingerprint, resp); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			c, err := store.Begin(ctx, "tok_bench", key, fingerprint)
			if err != nil || c.Outcome != idempotency.Replay {
				b.Fatalf("Begin = %v, %v; want Replay", c.Outcome, err)
			}
		}
	})
	b.Run("BeginCompleteParallel", func(b *testing.B) {
		stores := []idempotency.Store{store, backend.Open()}
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			s := stores[n.Add(1)%2]
			for pb.Next() {
				if err := beginComplete(s, newKey(), fingerprint, resp); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark's goroutine
					return
				}
			}
		})
	})
}

func beginComplete(s idempotency.Store, key, fingerprint string, resp idempotency.Response) error {
	ctx := context.Background()
	c, err := s.Begin(ctx, "tok_bench", key, fingerprint)
	if err != nil {
		return err
	}
	if c.Outcome != idempotency.Started {
		return fmt.Errorf("begin answered %v, want started", c.Outcome)
	}
	return s.Complete(ctx, c, resp)
}

func benchResponse() idempotency.Response {
	body := make([]byte, 1024)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	return idempotency.Response{
		Status: http.StatusCreated,
		Header: http.Header{
			"Content-Type":     {"application/json"},
			"Location":         {"/api/v1/campaigns/cmp_0123456789"},
			"X-Event-Position": {"123456"},
		},
		Body: body,
	}
}
