// Command reviews measures the storefront's read of a product's reviews
// over HTTP (issue 20, "Figures": GET /api/public/reviews of a product
// with 10,000 reviews, p99 < 10 ms with one client, and the throughput
// with 32 clients). It makes an account, a shop and a storefront public
// key with the CLI, records the reviews with `cgp dev generate-reviews`
// (every one published), starts the cgp binary, waits until the shop's
// summary counts every review, then measures over keep-alive connections,
// closed loop: one client sending -requests GETs of the first page
// (newest first, 20 a page), of the best rated first, of the third page
// (its cursor) and of the first page with If-None-Match (304s); then
// -clients clients for -duration on the first page (requests/s, the
// server's CPU per request). Medians over -runs.
//
//	make build && go run ./bench/reviews -bin bin/cgp -reviews 10000 -runs 3
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// options are the command line.
type options struct {
	bin            string
	reviews        int
	requests, runs int
	clients        int
	duration       time.Duration
	genWorkers     int
	serverArgs     string
	debugAddr      string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cgp", "path of the cgp binary (make build)")
	flag.IntVar(&o.reviews, "reviews", 10000, "published reviews of the product")
	flag.IntVar(&o.requests, "requests", 5000, "requests of each one-client latency measurement")
	flag.IntVar(&o.runs, "runs", 3, "runs; medians are reported")
	flag.IntVar(&o.clients, "clients", 32, "concurrent clients of the throughput measurement (closed loop)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "length of the throughput measurement")
	flag.IntVar(&o.genWorkers, "gen-workers", 32, "--workers of cgp dev generate-reviews")
	flag.StringVar(&o.debugAddr, "debug-addr", "", "pass --debug-addr to the server (pprof), e.g. 127.0.0.1:6060")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "reviews:", err)
		os.Exit(1)
	}
}

// product is the reviewed product: the platform's numeric id of a product
// the shop never synced (the reviews need none).
const product = "9000000000001"

func run(o options) error {
	dir, err := os.MkdirTemp("", "cgp-reviews-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tn, err := benchkit.NewTenant(o.bin, dir, "Bench", "reviews-bench.example.com", "bench-secret-0123456789abcdef", "enterprise")
	if err != nil {
		return err
	}
	pk, err := benchkit.CLI(o.bin, dir, "public-keys", "create", "--shop", tn.ShopID)
	if err != nil {
		return err
	}
	key, _ := pk["token"].(string)
	gen, err := benchkit.CLI(o.bin, dir, "dev", "generate-reviews", "--shop", tn.ShopID, "--product", product,
		"--reviews", strconv.Itoa(o.reviews), "--workers", strconv.Itoa(o.genWorkers))
	if err != nil {
		return err
	}
	pos, _ := gen["position"].(float64)
	secs, _ := gen["seconds"].(float64)
	fmt.Printf("shop %s: %v reviews of %v generated (%v published by the rule or a moderator) in %.1f s, position %.0f\n",
		tn.ShopID, gen["created"], gen["product_id"], gen["published"], secs, pos)
	// The daily decision-intelligence run is off: it would work while the
	// latencies are measured.
	args := []string{"--di-daily-at", "off"}
	if o.debugAddr != "" {
		args = append(args, "--debug-addr", o.debugAddr)
	}
	srv, err := benchkit.Start(o.bin, dir, args...)
	if err != nil {
		return err
	}
	defer srv.Stop()
	b := &bench{base: srv.Base, key: key, srv: srv, client: benchkit.Client(o.clients+1, time.Minute)}
	t0 := time.Now()
	if err := b.waitCaughtUp(strconv.FormatUint(uint64(pos), 10), o.reviews); err != nil {
		return err
	}
	fmt.Printf("reviews read model caught up in %.1f s\n", time.Since(t0).Seconds())
	if err := b.waitIdle(2 * time.Minute); err != nil {
		fmt.Println("warning:", err, "(measuring anyway)")
	}
	first := "/api/public/reviews?product_id=" + product + "&limit=20"
	cursor := first
	var etag string
	for page := 1; page < 3; page++ {
		st, body, h, err := b.get(cursor, "")
		if err != nil || st != http.StatusOK {
			return fmt.Errorf("page %d: %d %s %v", page, st, body, err)
		}
		if page == 1 {
			etag = h.Get("ETag")
			fmt.Printf("first page: %d bytes, ETag %s, Cache-Control %q\n", len(body), etag, h.Get("Cache-Control"))
		}
		var doc struct {
			Pagination struct {
				NextCursor string `json:"next_cursor"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || doc.Pagination.NextCursor == "" {
			return fmt.Errorf("page %d has no next cursor: %v", page, err)
		}
		cursor = first + "&cursor=" + url.QueryEscape(doc.Pagination.NextCursor)
	}
	cases := []oneClient{
		{name: "first page, newest (limit=20)", path: first, status: http.StatusOK},
		{name: "first page, sort=-rating", path: first + "&sort=-rating", status: http.StatusOK},
		{name: "third page (cursor)", path: cursor, status: http.StatusOK},
		{name: "first page, If-None-Match (304)", path: first, inm: etag, status: http.StatusNotModified},
	}
	var results []result
	for i := range o.runs {
		fmt.Printf("run %d:\n", i+1)
		var r result
		for _, c := range cases {
			l := b.oneClient(o.requests, c)
			fmt.Printf("  1 client   %-34s p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  errors %d\n", c.name,
				benchkit.Ms(l.d.P(50)), benchkit.Ms(l.d.P(99)), benchkit.Ms(l.d.Max()), l.errors)
			r.one = append(r.one, l)
		}
		r.many = b.manyClients(o, first)
		fmt.Printf("  %d clients first page, newest        %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  server CPU %.2f cores, %.0f µs/request  errors %d\n",
			o.clients, r.many.rps, benchkit.Ms(r.many.d.P(50)), benchkit.Ms(r.many.d.P(99)), r.many.cores, r.many.cpuPerReq, r.many.errors)
		results = append(results, r)
	}
	fmt.Printf("\nmedians over %d runs (%d reviews):\n", o.runs, o.reviews)
	for i, c := range cases {
		p99 := benchkit.MedianOf(results, func(r result) float64 { return benchkit.Ms(r.one[i].d.P(99)) })
		fmt.Printf("  1 client   %-34s p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  (p99 < 10 ms: %v)\n", c.name,
			benchkit.MedianOf(results, func(r result) float64 { return benchkit.Ms(r.one[i].d.P(50)) }), p99,
			benchkit.MedianOf(results, func(r result) float64 { return benchkit.Ms(r.one[i].d.Max()) }), p99 < 10)
	}
	fmt.Printf("  %d clients first page, newest        %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  server CPU %.2f cores, %.0f µs/request\n", o.clients,
		benchkit.MedianOf(results, func(r result) float64 { return r.many.rps }),
		benchkit.MedianOf(results, func(r result) float64 { return benchkit.Ms(r.many.d.P(50)) }),
		benchkit.MedianOf(results, func(r result) float64 { return benchkit.Ms(r.many.d.P(99)) }),
		benchkit.MedianOf(results, func(r result) float64 { return r.many.cores }),
		benchkit.MedianOf(results, func(r result) float64 { return r.many.cpuPerReq }))
	if n := srv.ErrorLines.Load(); n > 0 {
		fmt.Printf("\nserver logged %d error lines\n", n)
	}
	return nil
}

type bench struct {
	base, key string
	srv       *benchkit.Server
	client    *http.Client
}

// get fetches path with the public key (no Origin: a headless storefront)
// and If-None-Match inm when not empty.
func (b *bench) get(path, inm string, headers ...string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("X-Public-Key", b.key)
	if inm != "" {
		req.Header.Set("If-None-Match", inm)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, resp.Header, err
}

// waitCaughtUp asks for the first page with X-Wait-For-Position at the
// generator's last position until the answer is 200 and the summary
// counts every review.
func (b *bench) waitCaughtUp(pos string, want int) error {
	return benchkit.WaitFor(30*time.Minute, "the reviews read model", func() bool {
		st, body, _, err := b.get("/api/public/reviews?product_id="+product+"&limit=1", "", "X-Wait-For-Position", pos)
		if err != nil || st != http.StatusOK {
			return false
		}
		var doc struct {
			Meta struct {
				Summary struct {
					Count int `json:"count"`
				} `json:"summary"`
			} `json:"meta"`
		}
		return json.Unmarshal(body, &doc) == nil && doc.Meta.Summary.Count == want
	})
}

// waitIdle waits until the server's CPU use over a second falls under a
// tenth of a core: every projector caught up and nothing else competes
// with the measurement.
func (b *bench) waitIdle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c0, err := b.srv.CPU()
		if err != nil {
			return err
		}
		time.Sleep(time.Second)
		c1, err := b.srv.CPU()
		if err != nil {
			return err
		}
		if c1-c0 < 100*time.Millisecond {
			return nil
		}
	}
	return fmt.Errorf("server still busy after %v", timeout)
}

// oneClient is a one-client latency measurement.
type oneClient struct {
	name, path, inm string
	status          int
}

// latency is one latency measurement.
type latency struct {
	d      benchkit.Durations
	errors int
}

// throughput is one many-client measurement.
type throughput struct {
	latency
	rps, cores, cpuPerReq float64
}

type result struct {
	one  []latency
	many throughput
}

// oneClient sends n requests one after the other.
func (b *bench) oneClient(n int, c oneClient) latency {
	var l latency
	for range n {
		t0 := time.Now()
		st, _, _, err := b.get(c.path, c.inm)
		d := time.Since(t0)
		if err != nil || st != c.status {
			l.errors++
			continue
		}
		l.d = append(l.d, d)
	}
	return l
}

// manyClients runs o.clients closed-loop clients on path for o.duration,
// with the server's CPU time read before and after.
func (b *bench) manyClients(o options, path string) throughput {
	var t throughput
	var mu sync.Mutex
	var stop atomic.Bool
	var wg sync.WaitGroup
	cpu0, _ := b.srv.CPU()
	t0 := time.Now()
	for range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local benchkit.Durations
			errs := 0
			for !stop.Load() {
				s := time.Now()
				st, _, _, err := b.get(path, "")
				d := time.Since(s)
				if err != nil || st != http.StatusOK {
					errs++
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			t.d = append(t.d, local...)
			t.errors += errs
			mu.Unlock()
		}()
	}
	time.Sleep(o.duration)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(t0)
	cpu1, _ := b.srv.CPU()
	t.rps = float64(len(t.d)) / elapsed.Seconds()
	t.cores = (cpu1 - cpu0).Seconds() / elapsed.Seconds()
	if len(t.d) > 0 {
		t.cpuPerReq = float64((cpu1 - cpu0).Microseconds()) / float64(len(t.d))
	}
	return t
}
