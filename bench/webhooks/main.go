// Command webhooks measures the customers slice end to end over real HTTP:
// it starts the cgp binary on a fresh data directory, creates a shop and a
// token with the binary's CLI, then posts signed customers/create deliveries
// at a fixed rate (open loop) and, for each, asks GET /api/v1/customers/{id}
// to wait for the delivery's position. It prints the latency from sending
// the webhook to the customer being visible, and the acknowledgement
// latency, as medians over several runs.
//
//	go run ./bench/webhooks -bin bin/cgp -rate 1000 -duration 10s -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/domain"
)

func main() {
	bin := flag.String("bin", "bin/cgp", "path of the cgp binary (make build)")
	rate := flag.Int("rate", 1000, "webhooks per second, open loop")
	duration := flag.Duration("duration", 10*time.Second, "length of each run")
	runs := flag.Int("runs", 3, "runs; medians are reported")
	debug := flag.String("debug-addr", "", "pass --debug-addr to the server (profiling)")
	flag.Parse()
	if *debug != "" {
		extraServeArgs = append(extraServeArgs, "--debug-addr", *debug)
	}
	var results []result
	for i := 0; i < *runs; i++ {
		r, err := run(*bin, *rate, *duration)
		if err != nil {
			fmt.Fprintln(os.Stderr, "webhooks:", err)
			os.Exit(1)
		}
		fmt.Printf("run %d: sent %d, achieved %.0f/s, ack p50 %v p99 %v, visible p50 %v p95 %v p99 %v, errors %d\n",
			i+1, r.sent, r.achieved, r.ack.P(50), r.ack.P(99), r.visible.P(50), r.visible.P(95), r.visible.P(99), r.errors)
		results = append(results, r)
	}
	med := func(f func(result) float64) float64 { return benchkit.MedianOf(results, f) }
	ms := benchkit.Ms
	fmt.Printf("\n| metric (median of %d runs, %d webhooks/s for %v) | value |\n|---|---|\n", *runs, *rate, *duration)
	fmt.Printf("| achieved send rate | %.0f/s |\n", med(func(r result) float64 { return r.achieved }))
	fmt.Printf("| acknowledgement p50 / p99 | %.2f ms / %.2f ms |\n", med(func(r result) float64 { return ms(r.ack.P(50)) }), med(func(r result) float64 { return ms(r.ack.P(99)) }))
	fmt.Printf("| webhook to visible in GET p50 / p95 / p99 | %.2f ms / %.2f ms / %.2f ms |\n",
		med(func(r result) float64 { return ms(r.visible.P(50)) }), med(func(r result) float64 { return ms(r.visible.P(95)) }), med(func(r result) float64 { return ms(r.visible.P(99)) }))
	fmt.Printf("| errors | %.0f |\n", med(func(r result) float64 { return float64(r.errors) }))
}

// extraServeArgs are added to the server's command line. The per-token
// rate limit is lifted: the reads of the benchmark would exceed the
// agency plan's 600 requests per minute, and rate limiting is not what
// this measures.
var extraServeArgs = []string{"--rate-limit-agency", "1000000"}

type result struct {
	sent     int
	achieved float64
	errors   int
	ack      benchkit.Durations
	visible  benchkit.Durations
}

func run(bin string, rate int, duration time.Duration) (result, error) {
	dir, err := os.MkdirTemp("", "cgp-bench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	tenant, err := benchkit.NewTenant(bin, dir, "Bench", "bench.example.com", "bench-secret-0123456789abcdef", "agency")
	if err != nil {
		return result{}, err
	}
	token, err := tenant.Token(bin, dir, "customers:read")
	if err != nil {
		return result{}, err
	}
	srv, err := benchkit.Start(bin, dir, extraServeArgs...)
	if err != nil {
		return result{}, err
	}
	defer srv.Stop()
	base := srv.Base
	client := benchkit.Client(512, 30*time.Second)
	// Wait until the token is projected.
	err = benchkit.WaitFor(10*time.Second, "token usable", func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/customers?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	if err != nil {
		return result{}, err
	}
	var mu sync.Mutex
	res := result{}
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	ctx, cancel := context.WithTimeout(context.Background(), duration+30*time.Second)
	defer cancel()
	n := int(duration / interval)
	// Open loop: request i is sent at start + i*interval (or at once when
	// the sender is behind), whatever the server's answers.
	start := time.Now()
	benchkit.Pace(start, interval, n, func(i int, _ time.Time) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack, visible, err := one(ctx, client, base, token, tenant, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.errors++
				return
			}
			res.ack = append(res.ack, ack)
			res.visible = append(res.visible, visible)
		}()
	})
	sendTime := time.Since(start)
	wg.Wait()
	res.sent = n
	res.achieved = float64(n) / sendTime.Seconds()
	return res, nil
}

func one(ctx context.Context, client *http.Client, base, token string, tenant benchkit.Tenant, i int) (ack, visible time.Duration, err error) {
	ext := fmt.Sprint(900000 + i)
	body := []byte(fmt.Sprintf(`{"id":%s,"email":"bench%d@example.com","first_name":"Bench","last_name":"Customer","orders_count":1,"state":"enabled","total_spent":"12.50","tags":"bench","currency":"USD","created_at":"2026-10-01T10:00:00Z","updated_at":"2026-10-01T10:00:00Z","email_marketing_consent":{"state":"subscribed"}}`, ext, i))
	req, err := benchkit.NewDelivery(tenant.Secret, "bench-"+ext, "customers/create", body).Request(ctx, base+benchkit.EventsPath, tenant.Domain)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ack = time.Since(t0)
	if resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("webhook status %d", resp.StatusCode)
	}
	pos := resp.Header.Get("X-Event-Position")
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/customers/"+domain.CustomerIDFromExternal(tenant.ShopID, ext), nil)
	get.Header.Set("Authorization", "Bearer "+token)
	get.Header.Set("X-Wait-For-Position", pos)
	resp, err = client.Do(get)
	if err != nil {
		return 0, 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("get status %d", resp.StatusCode)
	}
	return ack, time.Since(t0), nil
}
