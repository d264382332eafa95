// Command authflood measures the admin API under a brute-force flood over
// real HTTP: it starts the cgp binary on a fresh data directory, creates a
// shop and one token per good client with the binary's CLI, then, for the
// length of the run,
//
//   - an attacker sends requests with random well-formed bad tokens
//     (copt_live_ + 32 base62) at a fixed rate (open loop, default 5,000/s),
//     all from one source address (127.0.0.2);
//   - good clients, each from its own source address (127.0.1.x) with its
//     own token, keep calling at a rate under their plan's limit.
//
// The server is started on the loopback address as it is, with no trusted
// proxy, so the address it counts failures under is the TCP peer: the
// attacker's loopback alias. (Linux routes all of 127.0.0.0/8 to the
// loopback interface, so binding those source addresses needs nothing.)
//
// It prints, per sample interval, the server's resident memory (VmRSS) and
// CPU, the attacker's answers by status and error code, and the good
// clients' successes and latency; then a summary: the good clients' success
// rate and latency percentiles, the attacker's achieved rate and answers,
// and how many error-level lines and alert lines the server logged (never
// their content).
//
//	go run ./bench/authflood -bin bin/cgp -rate 5000 -duration 30s
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

type config struct {
	bin         string
	rate        int
	duration    time.Duration
	sample      time.Duration
	goodClients int
	goodRate    float64
	plan        string
	path        string
	badAddr     string
	goodNet     string
	maxInflight int
	debugAddr   string
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "bin/cgp", "path of the cgp binary (make build)")
	flag.IntVar(&c.rate, "rate", 5000, "bad-token requests per second from the attacker, open loop")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "length of the flood")
	flag.DurationVar(&c.sample, "sample", time.Second, "sample interval of the time series")
	flag.IntVar(&c.goodClients, "good-clients", 8, "good clients, each with its own token and source address")
	flag.Float64Var(&c.goodRate, "good-rate", 5, "requests per second of each good client (agency allows 10)")
	flag.StringVar(&c.plan, "plan", "agency", "plan of the account and shop")
	flag.StringVar(&c.path, "path", "/api/v1/customers?limit=1", "admin API path every client calls (scope customers:read)")
	flag.StringVar(&c.badAddr, "bad-addr", "127.0.0.2", "source address of the attacker")
	flag.StringVar(&c.goodNet, "good-net", "127.0.1.", "source addresses of the good clients: this prefix and 1, 2, …")
	flag.IntVar(&c.maxInflight, "max-inflight", 4096, "attacker requests in flight at most; beyond, a send is counted as dropped")
	flag.StringVar(&c.debugAddr, "debug-addr", "", "pass --debug-addr to the server (profiling)")
	flag.Parse()
	if c.rate < 1 || c.goodClients < 1 || c.goodRate <= 0 || c.duration <= 0 || c.sample <= 0 || c.goodClients > 254 {
		fmt.Fprintln(os.Stderr, "authflood: -rate, -good-clients (1 to 254), -good-rate, -duration and -sample must be positive")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "authflood:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	dir, err := os.MkdirTemp("", "cgp-authflood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tokens, err := provision(c, dir)
	if err != nil {
		return err
	}
	var extra []string
	if c.debugAddr != "" {
		extra = append(extra, "--debug-addr", c.debugAddr)
	}
	srv, err := benchkit.Start(c.bin, dir, extra...)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }() // the report is out; how the server exits does not change it

	good := make([]*http.Client, c.goodClients)
	for i := range good {
		good[i] = benchkit.ClientFrom(fmt.Sprintf("%s%d", c.goodNet, i+1), 4, clientTimeout)
	}
	attacker := benchkit.ClientFrom(c.badAddr, 512, clientTimeout)
	if err := waitUsable(srv.Base+c.path, good[0], tokens[0]); err != nil {
		return err
	}

	st := newStats()
	ctx, cancel := context.WithTimeout(context.Background(), c.duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range good {
		wg.Add(1)
		go func() {
			defer wg.Done()
			goodClient(ctx, good[i], srv.Base+c.path, tokens[i], c.goodRate, st)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		flood(ctx, attacker, srv.Base+c.path, c.rate, c.maxInflight, st)
	}()
	series := sampleLoop(ctx, srv, c.sample, st)
	wg.Wait()
	report(c, st, series, srv)
	return nil
}

// clientTimeout bounds each request of the good clients and the attacker.
const clientTimeout = 10 * time.Second

// provision creates an account, a shop and one token per good client with
// the binary's CLI, and returns the raw tokens.
func provision(c config, dir string) ([]string, error) {
	t, err := benchkit.NewTenant(c.bin, dir, "Flood bench", "flood.example.com", "flood-secret-0123456789abcdef", c.plan)
	if err != nil {
		return nil, err
	}
	tokens := make([]string, c.goodClients)
	for i := range tokens {
		if tokens[i], err = t.Token(c.bin, dir, "customers:read", "--name", fmt.Sprintf("good-%d", i+1)); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}

// waitUsable polls until the token is projected and accepted.
func waitUsable(url string, c *http.Client, token string) error {
	var status int
	var err error
	if benchkit.WaitFor(15*time.Second, "good token usable", func() bool {
		status, _, err = call(context.Background(), c, url, token)
		return err == nil && status == http.StatusOK
	}) != nil {
		return fmt.Errorf("the good token never became usable (last status %d, error %v)", status, err)
	}
	return nil
}

// call does one GET with a bearer token and returns the status and the
// error.code of an error answer.
func call(ctx context.Context, c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 400 {
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, "", err
	}
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
	io.Copy(io.Discard, resp.Body)
	if err != nil {
		body.Error.Code = "(no envelope)"
	}
	return resp.StatusCode, body.Error.Code, nil
}

// stats are counters shared by the clients and the sampler.
type stats struct {
	badSent, badDropped, badTransport atomic.Int64
	goodOK, goodFailed                atomic.Int64

	mu        sync.Mutex
	badByCode map[string]int64 // "401 invalid_token", …: whole run
	goodByErr map[string]int64 // "429 rate_limited", "transport", …
	goodLat   []time.Duration  // whole run
	window    []time.Duration  // since the last sample
	winCodes  map[string]int64 // attacker answers since the last sample
}

func newStats() *stats {
	return &stats{badByCode: map[string]int64{}, goodByErr: map[string]int64{}, winCodes: map[string]int64{}}
}

// goodClient calls at rate per second until ctx ends, each request at its
// slot (or at once when behind).
func goodClient(ctx context.Context, c *http.Client, url, token string, rate float64, st *stats) {
	interval := time.Duration(float64(time.Second) / rate)
	benchkit.PaceUntil(ctx, time.Now(), interval, func(int, time.Time) bool {
		// A request started in the run is finished even if the run ends.
		t0 := time.Now()
		status, code, err := call(context.Background(), c, url, token)
		lat := time.Since(t0)
		st.mu.Lock()
		defer st.mu.Unlock()
		switch {
		case err != nil:
			st.goodFailed.Add(1)
			st.goodByErr["transport error"]++
		case status != http.StatusOK:
			st.goodFailed.Add(1)
			st.goodByErr[strconv.Itoa(status)+" "+code]++
		default:
			st.goodOK.Add(1)
			st.goodLat = append(st.goodLat, lat)
			st.window = append(st.window, lat)
		}
		return true
	})
}

// flood sends bad-token requests at rate per second, open loop, until ctx
// ends, then waits for those in flight.
func flood(ctx context.Context, c *http.Client, url string, rate, maxInflight int, st *stats) {
	interval := time.Second / time.Duration(rate)
	sem := make(chan struct{}, maxInflight)
	var wg sync.WaitGroup
	defer wg.Wait()
	benchkit.PaceUntil(ctx, time.Now(), interval, func(int, time.Time) bool {
		st.badSent.Add(1)
		select {
		case sem <- struct{}{}:
		default:
			st.badDropped.Add(1)
			return true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			status, code, err := call(context.Background(), c, url, badToken())
			if err != nil {
				st.badTransport.Add(1)
				return
			}
			k := strconv.Itoa(status) + " " + code
			st.mu.Lock()
			st.badByCode[k]++
			st.winCodes[k]++
			st.mu.Unlock()
		}()
		return true
	})
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// badToken returns a random well-formed admin token that does not exist.
func badToken() string {
	var b strings.Builder
	b.WriteString("copt_live_")
	for range 32 {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(base62))))
		b.WriteByte(base62[n.Int64()])
	}
	return b.String()
}

// sample is one row of the time series.
type sample struct {
	at        time.Duration
	rss       int64 // bytes, -1 when unreadable
	cpu       float64
	badSent   int64
	codes     map[string]int64
	goodOK    int64
	goodFail  int64
	goodP99   time.Duration
	goodCount int
}

// sampleLoop samples the server every interval until ctx ends and returns
// the series.
func sampleLoop(ctx context.Context, srv *benchkit.Server, interval time.Duration, st *stats) []sample {
	var series []sample
	start := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastCPU, lastErr := srv.CPU()
	lastAt := time.Now()
	var lastSent, lastOK, lastFail int64
	take := func() {
		now := time.Now()
		cpu, err := srv.CPU()
		s := sample{at: now.Sub(start).Round(time.Millisecond), rss: rss(srv)}
		if err == nil && lastErr == nil {
			s.cpu = (cpu - lastCPU).Seconds() / now.Sub(lastAt).Seconds() * 100
		}
		lastCPU, lastErr, lastAt = cpu, err, now
		sent, ok, fail := st.badSent.Load(), st.goodOK.Load(), st.goodFailed.Load()
		s.badSent, s.goodOK, s.goodFail = sent-lastSent, ok-lastOK, fail-lastFail
		lastSent, lastOK, lastFail = sent, ok, fail
		st.mu.Lock()
		s.codes, st.winCodes = st.winCodes, map[string]int64{}
		s.goodP99, s.goodCount = benchkit.Durations(st.window).P(99), len(st.window)
		st.window = st.window[:0]
		st.mu.Unlock()
		series = append(series, s)
	}
	series = append(series, sample{rss: rss(srv), codes: map[string]int64{}})
	for {
		select {
		case <-ctx.Done():
			take()
			return series
		case <-tick.C:
			take()
		}
	}
}

// rss is the server's resident memory in bytes, -1 when unreadable.
func rss(srv *benchkit.Server) int64 {
	n, err := srv.RSS()
	if err != nil {
		return -1
	}
	return n
}

// mb formats a size in bytes in MiB, "n/a" for -1.
func mb(bytes int64) string {
	if bytes < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(bytes)/(1<<20))
}

func report(c config, st *stats, series []sample, srv *benchkit.Server) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", benchkit.Ms(d)) }
	codes := map[string]bool{}
	for _, s := range series {
		for k := range s.codes {
			codes[k] = true
		}
	}
	cols := slices.Sorted(maps.Keys(codes))

	fmt.Printf("\nTime series (every %v; attacker and good-client columns count the interval):\n\n", c.sample)
	fmt.Printf("| t | server RSS MB | server CPU %% | bad sent | %s | good ok | good failed | good p99 ms |\n", strings.Join(cols, " | "))
	fmt.Printf("|---|---|---|---|%s---|---|---|\n", strings.Repeat("---|", len(cols)))
	for _, s := range series {
		row := make([]string, len(cols))
		for i, k := range cols {
			row[i] = strconv.FormatInt(s.codes[k], 10)
		}
		fmt.Printf("| %v | %s | %.0f | %d | %s | %d | %d | %s |\n", s.at, mb(s.rss), s.cpu, s.badSent, strings.Join(row, " | "), s.goodOK, s.goodFail, ms(s.goodP99))
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	ok, failed := st.goodOK.Load(), st.goodFailed.Load()
	total := ok + failed
	rate := 0.0
	if total > 0 {
		rate = 100 * float64(ok) / float64(total)
	}
	lat := benchkit.Durations(st.goodLat)
	var maxRSS int64 = -1
	for _, s := range series {
		maxRSS = max(maxRSS, s.rss)
	}
	fmt.Printf("\n| metric (%d bad-token requests/s from %s for %v; %d good clients at %.1f/s each) | value |\n|---|---|\n",
		c.rate, c.badAddr, c.duration, c.goodClients, c.goodRate)
	fmt.Printf("| good clients: success rate | %.2f %% (%d of %d) |\n", rate, ok, total)
	fmt.Printf("| good clients: latency p50 / p95 / p99 / max | %s / %s / %s / %s ms |\n",
		ms(lat.P(50)), ms(lat.P(95)), ms(lat.P(99)), ms(lat.Max()))
	for _, k := range slices.Sorted(maps.Keys(st.goodByErr)) {
		fmt.Printf("| good clients: %s | %d |\n", k, st.goodByErr[k])
	}
	sent := st.badSent.Load()
	fmt.Printf("| attacker: sent (achieved rate) | %d (%.0f/s) |\n", sent, float64(sent)/c.duration.Seconds())
	for _, k := range slices.Sorted(maps.Keys(st.badByCode)) {
		fmt.Printf("| attacker: %s | %d |\n", k, st.badByCode[k])
	}
	fmt.Printf("| attacker: dropped (over %d in flight) / transport errors | %d / %d |\n", c.maxInflight, st.badDropped.Load(), st.badTransport.Load())
	fmt.Printf("| server RSS: start / max / end | %s / %s / %s MB |\n", mb(series[0].rss), mb(maxRSS), mb(series[len(series)-1].rss))
	fmt.Printf("| server log: error lines / alert lines | %d / %d |\n", srv.ErrorLines.Load(), srv.AlertLines.Load())
}
