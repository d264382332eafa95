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
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

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
			i+1, r.sent, r.achieved, r.ack.p(50), r.ack.p(99), r.visible.p(50), r.visible.p(95), r.visible.p(99), r.errors)
		results = append(results, r)
	}
	med := func(f func(result) float64) float64 {
		v := make([]float64, len(results))
		for i, r := range results {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	fmt.Printf("\n| metric (median of %d runs, %d webhooks/s for %v) | value |\n|---|---|\n", *runs, *rate, *duration)
	fmt.Printf("| achieved send rate | %.0f/s |\n", med(func(r result) float64 { return r.achieved }))
	fmt.Printf("| acknowledgement p50 / p99 | %.2f ms / %.2f ms |\n", med(func(r result) float64 { return ms(r.ack.p(50)) }), med(func(r result) float64 { return ms(r.ack.p(99)) }))
	fmt.Printf("| webhook to visible in GET p50 / p95 / p99 | %.2f ms / %.2f ms / %.2f ms |\n",
		med(func(r result) float64 { return ms(r.visible.p(50)) }), med(func(r result) float64 { return ms(r.visible.p(95)) }), med(func(r result) float64 { return ms(r.visible.p(99)) }))
	fmt.Printf("| errors | %.0f |\n", med(func(r result) float64 { return float64(r.errors) }))
}

// extraServeArgs are added to the server's command line. The per-token
// rate limit is lifted: the reads of the benchmark would exceed the
// agency plan's 600 requests per minute, and rate limiting is not what
// this measures.
var extraServeArgs = []string{"--rate-limit-agency", "1000000"}

type durations []time.Duration

func (d durations) p(q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append(durations(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*q/100]
}

type result struct {
	sent     int
	achieved float64
	errors   int
	ack      durations
	visible  durations
}

func run(bin string, rate int, duration time.Duration) (result, error) {
	dir, err := os.MkdirTemp("", "cgp-bench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	cli := func(args ...string) (map[string]any, error) {
		cmd := exec.Command(bin, append(args, "--data-dir", dir)...)
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("cgp %s: %w", strings.Join(args, " "), err)
		}
		var v map[string]any
		return v, json.Unmarshal(out, &v)
	}
	acc, err := cli("accounts", "create", "--name", "Bench", "--plan", "agency")
	if err != nil {
		return result{}, err
	}
	secret := "bench-secret-0123456789abcdef"
	shop, err := cli("shops", "create", "--account", acc["id"].(string), "--domain", "bench.example.com", "--plan", "agency", "--webhook-secret", secret)
	if err != nil {
		return result{}, err
	}
	tok, err := cli("tokens", "create", "--shop", shop["id"].(string), "--scopes", "customers:read")
	if err != nil {
		return result{}, err
	}
	token := tok["token"].(string)

	srv := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, extraServeArgs...)...)
	stderr, _ := srv.StderrPipe()
	srv.Env = append(os.Environ(), "CGP_LOG_LEVEL=info")
	srv.Stdout = io.Discard
	if err := srv.Start(); err != nil {
		return result{}, err
	}
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Message == "serving" {
				addrc <- m.Addr
			}
		}
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case <-time.After(30 * time.Second):
		return result{}, fmt.Errorf("server did not start")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 512}, Timeout: 30 * time.Second}
	// Wait until the token is projected.
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/customers?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("token never became usable")
		}
		time.Sleep(20 * time.Millisecond)
	}
	shopID := shop["id"].(string)
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
	for i := 0; i < n; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ack, visible, err := one(ctx, client, base, token, secret, shopID, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.errors++
				return
			}
			res.ack = append(res.ack, ack)
			res.visible = append(res.visible, visible)
		}(i)
	}
	sendTime := time.Since(start)
	wg.Wait()
	res.sent = n
	res.achieved = float64(n) / sendTime.Seconds()
	return res, nil
}

func one(ctx context.Context, client *http.Client, base, token, secret, shopID string, i int) (ack, visible time.Duration, err error) {
	ext := fmt.Sprint(900000 + i)
	body := []byte(fmt.Sprintf(`{"id":%s,"email":"bench%d@example.com","first_name":"Bench","last_name":"Customer","orders_count":1,"total_spent":"12.50","tags":"bench","currency":"USD","created_at":"2026-10-01T10:00:00Z","updated_at":"2026-10-01T10:00:00Z","email_marketing_consent":{"state":"subscribed"}}`, ext, i))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhooks/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Commerce-Hmac-Sha256", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-Commerce-Webhook-Id", "bench-"+ext)
	req.Header.Set("X-Commerce-Topic", "customers/create")
	req.Header.Set("X-Commerce-Shop-Domain", "bench.example.com")
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
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/customers/"+domain.CustomerIDFromExternal(shopID, ext), nil)
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
