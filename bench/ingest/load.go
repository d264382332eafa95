package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// target is a receiver under load.
type target struct {
	url    string // the receiver's URL
	domain string // X-Commerce-Shop-Domain
}

// post sends d to t and returns the status (0 for a transport error).
func post(ctx context.Context, c *http.Client, t target, d benchkit.Delivery) int {
	req, err := d.Request(ctx, t.url, t.domain)
	if err != nil {
		return 0
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// loadResult is one measurement of one receiver.
type loadResult struct {
	offered   int     // deliveries scheduled (open loop) or sent (closed loop)
	sendRate  float64 // deliveries handed to the client per second
	ackRate   float64 // 2xx answers per second
	ok        int     // 2xx answers
	non2xx    int     // other answers
	transport int     // no answer (connection error, timeout)
	statuses  map[int]int
	lat       benchkit.Durations // of the 2xx answers
	exhausted bool               // closed loop: ran out of unique deliveries before the end
	// CPU used during the measurement, in cores: by the cgp server (0 for
	// the bare receiver) and by this process (the load generator, and the
	// bare receiver when it is the target).
	serverCores, benchCores float64
}

func (r *loadResult) count(status int) {
	switch {
	case status == 0:
		r.transport++
	case status >= 200 && status < 300:
		r.ok++
	default:
		r.non2xx++
	}
	if status != 0 {
		r.statuses[status]++
	}
}

// openLoop sends ds to t at rate per second whatever the answers: delivery
// i is due at start + i/rate and taken by the first of the workers that is
// free (each keeps its own keep-alive connection). Its latency runs from
// its due time, so time spent waiting for a free worker or connection
// counts (no coordinated omission).
func openLoop(c *http.Client, t target, ds []benchkit.Delivery, rate, workers int) loadResult {
	n := len(ds)
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, n)
	status := make([]int, n)
	done := make([]time.Time, n)
	jobs := make(chan int, n)
	start := time.Now().Add(5 * time.Millisecond)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				due := start.Add(time.Duration(i) * interval)
				status[i] = post(context.Background(), c, t, ds[i])
				done[i] = time.Now()
				lat[i] = done[i].Sub(due)
			}
		}()
	}
	benchkit.Pace(start, interval, n, func(i int, _ time.Time) { jobs <- i })
	sendSpan := time.Since(start)
	close(jobs)
	wg.Wait()

	r := loadResult{offered: n, statuses: map[int]int{}}
	r.sendRate = float64(n) / max(sendSpan, interval*time.Duration(n-1)).Seconds()
	var first, last time.Time
	for i := range n {
		r.count(status[i])
		if status[i] < 200 || status[i] >= 300 {
			continue
		}
		r.lat = append(r.lat, lat[i])
		if first.IsZero() || done[i].Before(first) {
			first = done[i]
		}
		if done[i].After(last) {
			last = done[i]
		}
	}
	if r.ok > 1 {
		r.ackRate = float64(r.ok-1) / last.Sub(first).Seconds()
	}
	return r
}

// closedLoop runs workers that each send the next delivery as soon as
// their previous one is answered, for duration. When cycle is false every
// delivery is sent once at most and the run ends early when they run out.
func closedLoop(c *http.Client, t target, ds []benchkit.Delivery, workers int, duration time.Duration, cycle bool) loadResult {
	var next atomic.Int64
	var exhausted atomic.Bool
	var mu sync.Mutex
	r := loadResult{statuses: map[int]int{}}
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat benchkit.Durations
			var statuses []int
			for time.Now().Before(deadline) {
				i := int(next.Add(1) - 1)
				if i >= len(ds) {
					if !cycle {
						exhausted.Store(true)
						break
					}
					i %= len(ds)
				}
				t0 := time.Now()
				s := post(context.Background(), c, t, ds[i])
				if s >= 200 && s < 300 {
					lat = append(lat, time.Since(t0))
				}
				statuses = append(statuses, s)
			}
			mu.Lock()
			defer mu.Unlock()
			r.lat = append(r.lat, lat...)
			for _, s := range statuses {
				r.count(s)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	r.offered = r.ok + r.non2xx + r.transport
	r.sendRate = float64(r.offered) / elapsed
	r.ackRate = float64(r.ok) / elapsed
	r.exhausted = exhausted.Load()
	return r
}
