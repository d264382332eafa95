// Command adminapi measures the admin API's customer reads on a large
// synthetic shop (issue 5, "Figures"): it generates the shop with
// `cgp dev generate` (or reuses a data directory generated before), starts
// the cgp binary on it, waits until the read models caught up, then
// measures, closed loop over keep-alive connections, the latency of
// GET /api/v1/customers/{id} and of list pages of 100 with and without
// filters and sorts, and finally walks every customer with the cursor at
// 100 a page (rows/s) while sampling the server's resident memory.
//
//	go run ./bench/adminapi -bin bin/cgp -customers 100000 -orders 500000 -runs 1
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/domain"
)

// options are the command line.
type options struct {
	bin               string
	customers, orders int
	data              string
	requests, runs    int
	workers           int
	genWorkers        int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cgp", "path of the cgp binary (make build)")
	flag.IntVar(&o.customers, "customers", 1_000_000, "customers of the generated shop")
	flag.IntVar(&o.orders, "orders", 5_000_000, "orders of the generated shop")
	flag.StringVar(&o.data, "data", "", "data directory: reused when already generated, else generated into (default: a temporary one, removed)")
	flag.IntVar(&o.requests, "requests", 20000, "requests per latency measurement")
	flag.IntVar(&o.runs, "runs", 3, "runs; medians are reported")
	flag.IntVar(&o.workers, "workers", 8, "concurrent clients of the latency measurements (closed loop)")
	flag.IntVar(&o.genWorkers, "gen-workers", 32, "--workers of cgp dev generate")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "adminapi:", err)
		os.Exit(1)
	}
}

// shop is a generated data directory, as described by its manifest.
type shop struct {
	ShopID     string  `json:"shop_id"`
	Token      string  `json:"token"` // a bench-only token of a throw-away data directory
	Customers  int     `json:"customers"`
	Orders     int     `json:"orders"`
	Position   uint64  `json:"position"`
	GenSeconds float64 `json:"generate_seconds"`
}

const manifestName = "adminapi-bench.json"

func run(o options) error {
	dir := o.data
	if dir == "" {
		tmp, err := os.MkdirTemp("", "cgp-adminapi-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	sh, err := prepare(o, dir)
	if err != nil {
		return err
	}
	fmt.Printf("shop %s: %s customers, %s orders, position %d (generated in %.0f s)\n",
		sh.ShopID, benchkit.Thousands(float64(sh.Customers)), benchkit.Thousands(float64(sh.Orders)), sh.Position, sh.GenSeconds)
	// The per-token rate limit is lifted: the load exceeds any plan's
	// limit, and rate limiting is not what this measures.
	// The daily decision-intelligence run is off: it would read the whole
	// shop while the latencies are measured.
	srv, err := benchkit.Start(o.bin, dir, "--rate-limit-enterprise", "10000000", "--di-daily-at", "off")
	if err != nil {
		return err
	}
	defer srv.Stop()
	b := &bench{base: srv.Base, token: sh.Token, shop: sh, client: benchkit.Client(0, 5*time.Minute), srv: srv}
	t0 := time.Now()
	if err := b.waitCaughtUp(); err != nil {
		return err
	}
	fmt.Printf("customers read model caught up in %.0f s\n", time.Since(t0).Seconds())
	if err := b.waitAllProjections(30 * time.Minute); err != nil {
		fmt.Println("warning:", err, "(measuring anyway)")
	} else {
		fmt.Printf("all projections caught up in %.0f s\n", time.Since(t0).Seconds())
	}
	rss, _ := srv.RSS()
	fmt.Printf("server RSS after catch-up: %.0f MiB\n", mib(rss))
	var results []result
	for i := range o.runs {
		fmt.Printf("run %d:\n", i+1)
		r, err := b.once(o)
		if err != nil {
			return err
		}
		fmt.Printf("  cursor walk: %d rows in %.1f s = %.0f rows/s, max RSS %.0f MiB, errors %d\n",
			r.walkRows, r.walkSeconds, float64(r.walkRows)/r.walkSeconds, mib(r.maxRSS), r.walkErrors)
		results = append(results, r)
	}
	summary(o, sh, results)
	if n := srv.ErrorLines.Load(); n > 0 {
		fmt.Printf("\nserver logged %d error lines\n", n)
	}
	return nil
}

// prepare returns the generated shop of dir, generating it unless the
// manifest says it already holds one of the requested size.
func prepare(o options, dir string) (shop, error) {
	path := filepath.Join(dir, manifestName)
	if b, err := os.ReadFile(path); err == nil {
		var sh shop
		if err := json.Unmarshal(b, &sh); err != nil {
			return shop{}, fmt.Errorf("manifest %s: %w", path, err)
		}
		if sh.Customers != o.customers || sh.Orders != o.orders {
			return shop{}, fmt.Errorf("%s holds %d customers and %d orders, not the %d and %d asked", dir, sh.Customers, sh.Orders, o.customers, o.orders)
		}
		return sh, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return shop{}, err
	}
	tn, err := benchkit.NewTenant(o.bin, dir, "Bench", "adminapi-bench.example.com", "bench-secret-0123456789abcdef", "enterprise")
	if err != nil {
		return shop{}, err
	}
	token, err := tn.Token(o.bin, dir, "customers:read")
	if err != nil {
		return shop{}, err
	}
	fmt.Printf("generating %d customers and %d orders in %s …\n", o.customers, o.orders, dir)
	out, err := benchkit.CLI(o.bin, dir, "dev", "generate", "--shop", tn.ShopID, "--customers", strconv.Itoa(o.customers),
		"--orders", strconv.Itoa(o.orders), "--workers", strconv.Itoa(o.genWorkers))
	if err != nil {
		return shop{}, err
	}
	pos, _ := out["position"].(float64)
	secs, _ := out["seconds"].(float64)
	sh := shop{ShopID: tn.ShopID, Token: token, Customers: o.customers, Orders: o.orders, Position: uint64(pos), GenSeconds: secs}
	b, err := json.Marshal(sh)
	if err != nil {
		return shop{}, err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return shop{}, fmt.Errorf("write manifest: %w", err)
	}
	return sh, nil
}

type bench struct {
	base, token string
	shop        shop
	client      *http.Client
	srv         *benchkit.Server
}

// get fetches path and returns its status and body size.
func (b *bench) get(path string, headers ...string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waitCaughtUp asks for the first customer page with X-Wait-For-Position
// at the generator's last position until the answer is 200 (each request
// waits as long as the server allows).
func (b *bench) waitCaughtUp() error {
	pos := strconv.FormatUint(b.shop.Position, 10)
	deadline := time.Now().Add(6 * time.Hour)
	last := time.Now()
	for {
		st, body, err := b.get("/api/v1/customers?limit=1", "X-Wait-For-Position", pos)
		if err == nil && st == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("read models not caught up: %d %s %v", st, body, err)
		}
		if time.Since(last) > time.Minute {
			rss, _ := b.srv.RSS()
			fmt.Printf("  still catching up (last answer %d, RSS %.0f MiB)\n", st, mib(rss))
			last = time.Now()
		}
		if st != http.StatusServiceUnavailable && st != http.StatusGatewayTimeout && err == nil && st != 0 {
			time.Sleep(time.Second) // an unexpected answer: do not spin
		}
	}
}

// maxIdleLag is the projection lag (positions) counted as caught up: the
// server may append a few events of its own meanwhile.
const maxIdleLag = 1000

// waitAllProjections waits until every projector's lag, as /metrics
// reports it, is at most maxIdleLag, so that no projection work competes
// with the measurements.
func (b *bench) waitAllProjections(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		lagging, err := b.lagging()
		if err == nil && len(lagging) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("projections still lagging after %v: %v %v", timeout, lagging, err)
		}
		time.Sleep(time.Second)
	}
}

// lagging returns the projectors whose lag exceeds maxIdleLag.
func (b *bench) lagging() ([]string, error) {
	st, body, err := b.get("/metrics")
	if err != nil || st != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d %w", st, err)
	}
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, "cgp_projection_lag_positions{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && v > maxIdleLag {
			out = append(out, labels+"="+value)
		}
	}
	return out, nil
}

// latency is one latency measurement.
type latency struct {
	name   string
	target float64 // p99 target in ms
	d      benchkit.Durations
	errors int
}

type result struct {
	lat         []latency
	walkRows    int
	walkSeconds float64
	walkErrors  int
	maxRSS      int64
}

// lists are the list pages measured (all filters and sorts the customer
// list allows: readapi.CustomerListSpec).
var lists = []string{
	"limit=100",
	"limit=100&filter[lifecycle_stage]=at_risk&sort=-total_spent",
	"limit=100&sort=-total_spent",
	"limit=100&sort=-last_order_at",
	"limit=100&sort=created_at",
	"limit=100&filter[lifecycle_stage]=loyal",
	"limit=100&filter[lifecycle_stage]=churned&sort=-last_order_at",
	"limit=100&filter[lifecycle_stage]=prospect&sort=created_at",
}

func (b *bench) once(o options) (result, error) {
	var r result
	r.lat = append(r.lat, b.closedLoop(o, "GET /customers/{id} (random id)", 5, func(rng *rand.Rand) string {
		ext := "gen-c" + strconv.Itoa(rng.IntN(b.shop.Customers))
		return "/api/v1/customers/" + domain.CustomerIDFromExternal(b.shop.ShopID, ext)
	}))
	for _, q := range lists {
		path := "/api/v1/customers?" + q
		r.lat = append(r.lat, b.closedLoop(o, "GET /customers?"+q, 20, func(*rand.Rand) string { return path }))
	}
	if err := b.walk(&r); err != nil {
		return r, err
	}
	return r, nil
}

// closedLoop sends o.requests GETs of the paths next returns from
// o.workers clients, each sending its next request when the last one is
// answered.
func (b *bench) closedLoop(o options, name string, target float64, next func(*rand.Rand) string) latency {
	var mu sync.Mutex
	m := latency{name: name, target: target}
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			var local benchkit.Durations
			errs := 0
			for sent.Add(1) <= int64(o.requests) {
				path := next(rng)
				t0 := time.Now()
				st, _, err := b.get(path)
				d := time.Since(t0)
				if err != nil || st != http.StatusOK {
					errs++
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			m.d = append(m.d, local...)
			m.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("  %-66s p50 %7.2f ms  p99 %7.2f ms  errors %d\n", m.name, benchkit.Ms(m.d.P(50)), benchkit.Ms(m.d.P(99)), m.errors)
	return m
}

// walk pages through every customer at 100 a page with the cursor, one
// request at a time, while sampling the server's RSS every 100 ms.
func (b *bench) walk(r *result) error {
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := b.srv.RSS(); err == nil {
				r.maxRSS = max(r.maxRSS, rss)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); sampler.Wait() }()
	t0 := time.Now()
	next := "/api/v1/customers?limit=100"
	for next != "" {
		st, body, err := b.get(next)
		if err != nil || st != http.StatusOK {
			r.walkErrors++
			if r.walkErrors > 10 {
				return fmt.Errorf("cursor walk: %d %s %v", st, body, err)
			}
			continue
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			Pagination struct {
				HasNext    bool   `json:"has_next"`
				NextCursor string `json:"next_cursor"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("cursor walk page: %w", err)
		}
		r.walkRows += len(page.Data)
		next = ""
		if page.Pagination.HasNext {
			next = "/api/v1/customers?limit=100&cursor=" + url.QueryEscape(page.Pagination.NextCursor)
		}
	}
	r.walkSeconds = time.Since(t0).Seconds()
	if r.walkRows != b.shop.Customers {
		return errors.New("cursor walk: " + strconv.Itoa(r.walkRows) + " rows, want " + strconv.Itoa(b.shop.Customers))
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// summary prints the medians of the runs as a Markdown table.
func summary(o options, sh shop, rs []result) {
	fmt.Printf("\n| measurement (median of %d runs; %s customers, %s orders; %d clients, %d requests each) | p50 | p99 | target |\n|---|---|---|---|\n",
		len(rs), benchkit.Thousands(float64(sh.Customers)), benchkit.Thousands(float64(sh.Orders)), o.workers, o.requests)
	for i, m := range rs[0].lat {
		p50 := benchkit.MedianOf(rs, func(r result) float64 { return benchkit.Ms(r.lat[i].d.P(50)) })
		p99 := benchkit.MedianOf(rs, func(r result) float64 { return benchkit.Ms(r.lat[i].d.P(99)) })
		fmt.Printf("| `%s` | %.2f ms | %.2f ms | p99 < %.0f ms %s |\n", m.name, p50, p99, m.target, mark(p99 < m.target))
	}
	rate := benchkit.MedianOf(rs, func(r result) float64 { return float64(r.walkRows) / r.walkSeconds })
	rss := benchkit.MedianOf(rs, func(r result) float64 { return mib(r.maxRSS) })
	fmt.Printf("| full cursor walk, 100 a page | %s rows/s | | ≥ 20,000 rows/s %s |\n", benchkit.Thousands(rate), mark(rate >= 20000))
	fmt.Printf("| server max RSS during the walk | %.0f MiB | | < 1024 MiB %s |\n", rss, mark(rss < 1024))
	fmt.Printf("| data generation (`cgp dev generate`) | %.0f s | | |\n", sh.GenSeconds)
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}
