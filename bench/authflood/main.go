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
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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

// server is the cgp process under test.
type server struct {
	cmd  *exec.Cmd
	base string
	// errorLines and alertLines count log lines at level error and lines
	// carrying an "alert" field.
	errorLines, alertLines atomic.Int64
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
	srv, err := start(c, dir)
	if err != nil {
		return err
	}
	defer srv.stop()

	good := make([]*http.Client, c.goodClients)
	for i := range good {
		good[i] = clientFrom(fmt.Sprintf("%s%d", c.goodNet, i+1), 4)
	}
	attacker := clientFrom(c.badAddr, 512)
	if err := waitUsable(srv.base+c.path, good[0], tokens[0]); err != nil {
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
			goodClient(ctx, good[i], srv.base+c.path, tokens[i], c.goodRate, st)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		flood(ctx, attacker, srv.base+c.path, c.rate, c.maxInflight, st)
	}()
	series := sampleLoop(ctx, srv.cmd.Process.Pid, c.sample, st)
	wg.Wait()
	report(c, st, series, srv)
	return nil
}

// provision creates an account, a shop and one token per good client with
// the binary's CLI, and returns the raw tokens.
func provision(c config, dir string) ([]string, error) {
	cli := func(args ...string) (map[string]any, error) {
		out, err := exec.Command(c.bin, append(args, "--data-dir", dir)...).Output()
		if err != nil {
			return nil, fmt.Errorf("cgp %s: %w", strings.Join(args, " "), err)
		}
		var v map[string]any
		return v, json.Unmarshal(out, &v)
	}
	acc, err := cli("accounts", "create", "--name", "Flood bench", "--plan", c.plan)
	if err != nil {
		return nil, err
	}
	shop, err := cli("shops", "create", "--account", acc["id"].(string), "--domain", "flood.example.com",
		"--plan", c.plan, "--webhook-secret", "flood-secret-0123456789abcdef")
	if err != nil {
		return nil, err
	}
	tokens := make([]string, c.goodClients)
	for i := range tokens {
		tok, err := cli("tokens", "create", "--shop", shop["id"].(string), "--scopes", "customers:read", "--name", fmt.Sprintf("good-%d", i+1))
		if err != nil {
			return nil, err
		}
		tokens[i] = tok["token"].(string)
	}
	return tokens, nil
}

// start runs cgp serve on a free loopback port and waits for its address.
func start(c config, dir string) (*server, error) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}
	if c.debugAddr != "" {
		args = append(args, "--debug-addr", c.debugAddr)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), "CGP_LOG_LEVEL=info")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	addrc := make(chan string, 1)
	// Reads the server's log until the server exits (the pipe closes).
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m struct {
				Level, Message, Addr string
				Alert                string `json:"alert"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if m.Message == "serving" {
				select {
				case addrc <- m.Addr:
				default:
				}
			}
			if m.Level == "error" {
				s.errorLines.Add(1)
			}
			if m.Alert != "" {
				s.alertLines.Add(1)
			}
		}
	}()
	select {
	case a := <-addrc:
		s.base = "http://" + a
		return s, nil
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("server did not start")
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}

// clientFrom returns an HTTP client whose connections leave from the local
// address addr.
func clientFrom(addr string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: 5 * time.Second}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns},
		Timeout:   10 * time.Second,
	}
}

// waitUsable polls until the token is projected and accepted.
func waitUsable(url string, c *http.Client, token string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		status, _, err := call(context.Background(), c, url, token)
		if err == nil && status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the good token never became usable (last status %d, error %v)", status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	start := time.Now()
	for i := 0; ; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			return
		}
		// A request started in the run is finished even if the run ends.
		t0 := time.Now()
		status, code, err := call(context.Background(), c, url, token)
		lat := time.Since(t0)
		st.mu.Lock()
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
		st.mu.Unlock()
	}
}

// flood sends bad-token requests at rate per second, open loop, until ctx
// ends, then waits for those in flight.
func flood(ctx context.Context, c *http.Client, url string, rate, maxInflight int, st *stats) {
	interval := time.Second / time.Duration(rate)
	sem := make(chan struct{}, maxInflight)
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	for i := 0; ; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			return
		}
		st.badSent.Add(1)
		select {
		case sem <- struct{}{}:
		default:
			st.badDropped.Add(1)
			continue
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
	}
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
	rssKB     int64 // -1 when unreadable
	cpu       float64
	badSent   int64
	codes     map[string]int64
	goodOK    int64
	goodFail  int64
	goodP99   time.Duration
	goodCount int
}

// sampleLoop samples every interval until ctx ends and returns the series.
func sampleLoop(ctx context.Context, pid int, interval time.Duration, st *stats) []sample {
	var series []sample
	start := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastCPU, lastAt := cpuTicks(pid), time.Now()
	var lastSent, lastOK, lastFail int64
	take := func() {
		now := time.Now()
		ticks := cpuTicks(pid)
		s := sample{at: now.Sub(start).Round(time.Millisecond), rssKB: rssKB(pid)}
		if ticks >= 0 && lastCPU >= 0 {
			s.cpu = float64(ticks-lastCPU) / 100 / now.Sub(lastAt).Seconds() * 100 // USER_HZ is 100 on Linux
		}
		lastCPU, lastAt = ticks, now
		sent, ok, fail := st.badSent.Load(), st.goodOK.Load(), st.goodFailed.Load()
		s.badSent, s.goodOK, s.goodFail = sent-lastSent, ok-lastOK, fail-lastFail
		lastSent, lastOK, lastFail = sent, ok, fail
		st.mu.Lock()
		s.codes, st.winCodes = st.winCodes, map[string]int64{}
		s.goodP99, s.goodCount = percentile(st.window, 99), len(st.window)
		st.window = st.window[:0]
		st.mu.Unlock()
		series = append(series, s)
	}
	series = append(series, sample{rssKB: rssKB(pid), codes: map[string]int64{}})
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

// rssKB reads VmRSS from /proc (Linux); -1 when it cannot.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// cpuTicks reads utime+stime from /proc (Linux); -1 when it cannot.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name may hold spaces: fields start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + k
}

func percentile(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*q/100]
}

func mb(kb int64) string {
	if kb < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(kb)/1024)
}

func report(c config, st *stats, series []sample, srv *server) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
	codes := map[string]bool{}
	for _, s := range series {
		for k := range s.codes {
			codes[k] = true
		}
	}
	cols := make([]string, 0, len(codes))
	for k := range codes {
		cols = append(cols, k)
	}
	sort.Strings(cols)

	fmt.Printf("\nTime series (every %v; attacker and good-client columns count the interval):\n\n", c.sample)
	fmt.Printf("| t | server RSS MB | server CPU %% | bad sent | %s | good ok | good failed | good p99 ms |\n", strings.Join(cols, " | "))
	fmt.Printf("|---|---|---|---|%s---|---|---|\n", strings.Repeat("---|", len(cols)))
	for _, s := range series {
		row := make([]string, len(cols))
		for i, k := range cols {
			row[i] = strconv.FormatInt(s.codes[k], 10)
		}
		fmt.Printf("| %v | %s | %.0f | %d | %s | %d | %d | %s |\n", s.at, mb(s.rssKB), s.cpu, s.badSent, strings.Join(row, " | "), s.goodOK, s.goodFail, ms(s.goodP99))
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	ok, failed := st.goodOK.Load(), st.goodFailed.Load()
	total := ok + failed
	rate := 0.0
	if total > 0 {
		rate = 100 * float64(ok) / float64(total)
	}
	var maxRSS int64 = -1
	for _, s := range series {
		maxRSS = max(maxRSS, s.rssKB)
	}
	fmt.Printf("\n| metric (%d bad-token requests/s from %s for %v; %d good clients at %.1f/s each) | value |\n|---|---|\n",
		c.rate, c.badAddr, c.duration, c.goodClients, c.goodRate)
	fmt.Printf("| good clients: success rate | %.2f %% (%d of %d) |\n", rate, ok, total)
	fmt.Printf("| good clients: latency p50 / p95 / p99 / max | %s / %s / %s / %s ms |\n",
		ms(percentile(st.goodLat, 50)), ms(percentile(st.goodLat, 95)), ms(percentile(st.goodLat, 99)), ms(percentile(st.goodLat, 100)))
	for _, k := range sortedKeys(st.goodByErr) {
		fmt.Printf("| good clients: %s | %d |\n", k, st.goodByErr[k])
	}
	sent := st.badSent.Load()
	fmt.Printf("| attacker: sent (achieved rate) | %d (%.0f/s) |\n", sent, float64(sent)/c.duration.Seconds())
	for _, k := range sortedKeys(st.badByCode) {
		fmt.Printf("| attacker: %s | %d |\n", k, st.badByCode[k])
	}
	fmt.Printf("| attacker: dropped (over %d in flight) / transport errors | %d / %d |\n", c.maxInflight, st.badDropped.Load(), st.badTransport.Load())
	fmt.Printf("| server RSS: start / max / end | %s / %s / %s MB |\n", mb(series[0].rssKB), mb(maxRSS), mb(series[len(series)-1].rssKB))
	fmt.Printf("| server log: error lines / alert lines | %d / %d |\n", srv.errorLines.Load(), srv.alertLines.Load())
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
