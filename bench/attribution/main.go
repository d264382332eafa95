// Command attribution measures the analysts' attribution reads and the
// projection lag of the attribution and customers read models (issue 6,
// "Figures") on a synthetic shop: it generates the shop with
// `cgp dev generate --touchpoints-per-order` (or reuses a data directory
// generated before), starts the cgp binary on it, waits until the read
// models caught up, then measures
//
//   - closed loop over keep-alive connections, the latency of
//     GET /api/v1/attribution?limit=100&include=touchpoints: the first page
//     of the shop, first pages of random 30-day ranges, and deeper pages
//     reached with cursors collected beforehand;
//
//   - the time of GET /api/v1/attribution/summary over the last 30 days of
//     the shop for each group_by (and each model by channel);
//
//   - open loop, signed orders/create deliveries at a fixed rate: for each,
//     the time from the webhook's acknowledgement until a GET with
//     X-Wait-For-Position at the delivery's position answers, on the
//     attribution list (even deliveries) or the customer list (odd ones).
//
//     go run ./bench/attribution -bin bin/cgp -data /work/benchdata/attr-200k -customers 40000 -orders 200000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// options are the command line.
type options struct {
	bin                            string
	data                           string
	customers, orders, touchpoints int
	genWorkers                     int
	requests, runs, workers        int
	summaryRepeats                 int
	rate                           int
	duration                       time.Duration
	debugAddr                      string
	skip                           string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cgp", "path of the cgp binary (make build)")
	flag.StringVar(&o.data, "data", "", "data directory: reused when already generated, else generated into (required; keep it out of the repository)")
	flag.IntVar(&o.customers, "customers", 200_000, "customers of the generated shop")
	flag.IntVar(&o.orders, "orders", 1_000_000, "orders of the generated shop")
	flag.IntVar(&o.touchpoints, "touchpoints-per-order", 5, "--touchpoints-per-order of cgp dev generate")
	flag.IntVar(&o.genWorkers, "gen-workers", 32, "--workers of cgp dev generate")
	flag.IntVar(&o.requests, "requests", 2000, "requests per latency measurement")
	flag.IntVar(&o.runs, "runs", 3, "runs; medians are reported")
	flag.IntVar(&o.workers, "workers", 8, "concurrent clients of the list measurements (closed loop)")
	flag.IntVar(&o.summaryRepeats, "summary-repeats", 3, "times each summary is asked per run")
	flag.IntVar(&o.rate, "rate", 2000, "orders/create deliveries per second of the lag measurement (open loop)")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of each lag measurement")
	flag.StringVar(&o.debugAddr, "debug-addr", "", "pass --debug-addr to the server (pprof)")
	flag.StringVar(&o.skip, "skip", "", "comma-separated parts to skip: list, summary, lag")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "attribution:", err)
		os.Exit(1)
	}
}

// shop is a generated data directory, as described by its manifest.
type shop struct {
	ShopID      string  `json:"shop_id"`
	Domain      string  `json:"domain"`
	Secret      string  `json:"secret"` // the webhook secret of a throw-away bench shop
	Token       string  `json:"token"`  // a bench-only token of a throw-away data directory
	Customers   int     `json:"customers"`
	Orders      int     `json:"orders"`
	Touchpoints int     `json:"touchpoints"`
	Position    uint64  `json:"position"`
	GenSeconds  float64 `json:"generate_seconds"`
	// Until is the end of the generated history (the UTC day it was
	// generated on).
	Until time.Time `json:"until"`
}

const manifestName = "attribution-bench.json"

func run(o options) error {
	if o.data == "" {
		return fmt.Errorf("-data is required")
	}
	sh, err := prepare(o)
	if err != nil {
		return err
	}
	fmt.Printf("shop %s: %s customers, %s orders, %s touchpoints, position %d (generated in %.0f s)\n", sh.ShopID,
		benchkit.Thousands(float64(sh.Customers)), benchkit.Thousands(float64(sh.Orders)), benchkit.Thousands(float64(sh.Touchpoints)),
		sh.Position, sh.GenSeconds)
	args := []string{"--rate-limit-enterprise", "10000000", "--di-daily-at", "off"}
	if o.debugAddr != "" {
		args = append(args, "--debug-addr", o.debugAddr)
	}
	srv, err := benchkit.Start(o.bin, o.data, args...)
	if err != nil {
		return err
	}
	defer srv.Stop()
	b := &bench{o: o, shop: sh, srv: srv, client: benchkit.Client(512, 5*time.Minute)}
	t0 := time.Now()
	if err := b.waitCaughtUp(); err != nil {
		return err
	}
	if err := b.srv.WaitProjections(b.client, maxIdleLag, 6*time.Hour); err != nil {
		fmt.Println("warning:", err, "(measuring anyway)")
	}
	fmt.Printf("read models caught up in %.0f s\n", time.Since(t0).Seconds())
	skip := strings.Split(o.skip, ",")
	var rs []result
	for i := range o.runs {
		fmt.Printf("run %d:\n", i+1)
		var r result
		if !slices.Contains(skip, "list") {
			if err := b.lists(&r); err != nil {
				return err
			}
		}
		if !slices.Contains(skip, "summary") {
			if err := b.summaries(&r); err != nil {
				return err
			}
		}
		if !slices.Contains(skip, "lag") {
			if err := b.lag(&r, i); err != nil {
				return err
			}
		}
		rs = append(rs, r)
	}
	report(o, sh, rs)
	if n := srv.ErrorLines.Load(); n > 0 {
		fmt.Printf("\nserver logged %d error lines\n", n)
	}
	return nil
}

// prepare returns the generated shop of o.data, generating it unless the
// manifest says it already holds one of the requested size.
func prepare(o options) (shop, error) {
	path := filepath.Join(o.data, manifestName)
	if raw, err := os.ReadFile(path); err == nil {
		var sh shop
		if err := json.Unmarshal(raw, &sh); err != nil {
			return shop{}, fmt.Errorf("manifest %s: %w", path, err)
		}
		if sh.Customers != o.customers || sh.Orders != o.orders || sh.Touchpoints != o.orders*o.touchpoints {
			return shop{}, fmt.Errorf("%s holds %d customers, %d orders and %d touchpoints, not the %d, %d and %d asked", o.data,
				sh.Customers, sh.Orders, sh.Touchpoints, o.customers, o.orders, o.orders*o.touchpoints)
		}
		return sh, nil
	}
	if err := os.MkdirAll(o.data, 0o700); err != nil {
		return shop{}, err
	}
	tn, err := benchkit.NewTenant(o.bin, o.data, "Bench", "attr-bench.example.com", "bench-secret-0123456789abcdef", "enterprise")
	if err != nil {
		return shop{}, err
	}
	token, err := tn.Token(o.bin, o.data, "attribution:read,customers:read")
	if err != nil {
		return shop{}, err
	}
	fmt.Printf("generating %d customers, %d orders and %d touchpoints per order in %s …\n", o.customers, o.orders, o.touchpoints, o.data)
	until := time.Now().UTC().Truncate(24 * time.Hour)
	out, err := benchkit.CLI(o.bin, o.data, "dev", "generate", "--shop", tn.ShopID, "--customers", strconv.Itoa(o.customers),
		"--orders", strconv.Itoa(o.orders), "--touchpoints-per-order", strconv.Itoa(o.touchpoints), "--workers", strconv.Itoa(o.genWorkers))
	if err != nil {
		return shop{}, err
	}
	pos, _ := out["position"].(float64)
	secs, _ := out["seconds"].(float64)
	sh := shop{ShopID: tn.ShopID, Domain: tn.Domain, Secret: tn.Secret, Token: token, Customers: o.customers, Orders: o.orders,
		Touchpoints: o.orders * o.touchpoints, Position: uint64(pos), GenSeconds: secs, Until: until}
	raw, err := json.Marshal(sh)
	if err != nil {
		return shop{}, err
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return shop{}, fmt.Errorf("write manifest: %w", err)
	}
	return sh, nil
}

type bench struct {
	o      options
	shop   shop
	srv    *benchkit.Server
	client *http.Client
}

// get fetches path with the shop's token and returns the status and body.
func (b *bench) get(ctx context.Context, path string, headers ...string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.Base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.shop.Token)
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

// waitCaughtUp asks for an attribution page with X-Wait-For-Position at
// the generator's last position until the answer is 200.
func (b *bench) waitCaughtUp() error {
	pos := strconv.FormatUint(b.shop.Position, 10)
	deadline := time.Now().Add(6 * time.Hour)
	last := time.Now()
	for {
		st, _, err := b.get(context.Background(), "/api/v1/attribution?limit=1", "X-Wait-For-Position", pos)
		if err == nil && st == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("attribution read model not caught up: %d %v", st, err)
		}
		if time.Since(last) > time.Minute {
			fmt.Printf("  still catching up (last answer %d)\n", st)
			last = time.Now()
		}
		if st != http.StatusServiceUnavailable && st != http.StatusGatewayTimeout {
			time.Sleep(time.Second) // an unexpected answer: do not spin
		}
	}
}

// maxIdleLag is the projection lag (positions) counted as caught up.
const maxIdleLag = 1000

// latency is one latency measurement.
type latency struct {
	name   string
	target float64 // p99 target in ms
	d      benchkit.Durations
	errors int
}

// result is one run's measurements.
type result struct {
	lat     []latency
	summary []latency // each summary's durations
	lagAck  benchkit.Durations
	lagAttr benchkit.Durations
	lagCust benchkit.Durations
	lagErrs int
	sent    int
	rate    float64
}

const listPath = "/api/v1/attribution?limit=100&include=touchpoints"

// day formats t as a filter date.
func day(t time.Time) string { return t.Format(time.DateOnly) }

// rangeQuery is the filter of the 30 days starting at from.
func rangeQuery(from time.Time) string {
	return "&filter[date_from]=" + day(from) + "&filter[date_to]=" + day(from.AddDate(0, 0, 29))
}

// randomStart is the first day of a random 30-day range of the shop's
// two years of history.
func (b *bench) randomStart(rng *rand.Rand) time.Time {
	return b.shop.Until.AddDate(0, 0, -730+rng.IntN(700))
}

func (b *bench) lists(r *result) error {
	// The generated history ends the day before Until; the lag
	// measurement's orders are dated Until and later, so they stay out.
	last30 := listPath + rangeQuery(b.shop.Until.AddDate(0, 0, -30))
	r.lat = append(r.lat, b.closedLoop("first page of the last 30 days", 50, func(*rand.Rand) string { return last30 }))
	r.lat = append(r.lat, b.closedLoop("first page of a random 30-day range", 50, func(rng *rand.Rand) string {
		return listPath + rangeQuery(b.randomStart(rng))
	}))
	cursors, err := b.collectCursors(40, 10)
	if err != nil {
		return err
	}
	r.lat = append(r.lat, b.closedLoop(fmt.Sprintf("deeper pages via cursors (pages 2–11 of random 30-day ranges; %d cursors)", len(cursors)), 50,
		func(rng *rand.Rand) string { return cursors[rng.IntN(len(cursors))] }))
	return nil
}

// collectCursors follows the next links of starts random 30-day ranges up
// to depth pages deep and returns the paths of the pages reached.
func (b *bench) collectCursors(starts, depth int) ([]string, error) {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []string
	for range starts {
		path := listPath + rangeQuery(b.randomStart(rng))
		for range depth {
			st, body, err := b.get(context.Background(), path)
			if err != nil || st != http.StatusOK {
				return nil, fmt.Errorf("collect cursors: GET %s: %d %v", path, st, err)
			}
			var page struct {
				Links struct {
					Next string `json:"next"`
				} `json:"links"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				return nil, fmt.Errorf("collect cursors: %w", err)
			}
			if page.Links.Next == "" {
				break
			}
			u, err := url.Parse(page.Links.Next)
			if err != nil {
				return nil, fmt.Errorf("collect cursors: next link: %w", err)
			}
			path = u.RequestURI()
			out = append(out, path)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("collect cursors: no page has a next link")
	}
	return out, nil
}

// closedLoop sends o.requests GETs of the paths next returns from
// o.workers clients, each sending its next request when the last one is
// answered.
func (b *bench) closedLoop(name string, target float64, next func(*rand.Rand) string) latency {
	var mu sync.Mutex
	m := latency{name: name, target: target}
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := range b.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			var local benchkit.Durations
			errs := 0
			for sent.Add(1) <= int64(b.o.requests) {
				path := next(rng)
				t0 := time.Now()
				st, _, err := b.get(context.Background(), path)
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
	fmt.Printf("  %-90s p50 %7.2f ms  p99 %7.2f ms  errors %d\n", m.name, benchkit.Ms(m.d.P(50)), benchkit.Ms(m.d.P(99)), m.errors)
	return m
}

// summaryQueries are the summaries timed: every group_by under the linear
// model, and every other model by channel.
var summaryQueries = []string{
	"filter[model]=linear&group_by=channel",
	"filter[model]=linear&group_by=source",
	"filter[model]=linear&group_by=campaign",
	"filter[model]=first_touch&group_by=channel",
	"filter[model]=last_touch&group_by=channel",
	"filter[model]=last_non_direct&group_by=channel",
	"filter[model]=time_decay&group_by=channel",
	"filter[model]=position_based&group_by=channel",
}

// summaries times each summary over the last 30 days of the shop, one
// request at a time.
func (b *bench) summaries(r *result) error {
	rq := rangeQuery(b.shop.Until.AddDate(0, 0, -30))
	for _, q := range summaryQueries {
		m := latency{name: "summary " + q + " (last 30 days)", target: 1000}
		for range b.o.summaryRepeats {
			t0 := time.Now()
			st, body, err := b.get(context.Background(), "/api/v1/attribution/summary?"+q+rq)
			d := time.Since(t0)
			if err != nil || st != http.StatusOK {
				return fmt.Errorf("summary %s: %d %s %v", q, st, body, err)
			}
			m.d = append(m.d, d)
		}
		fmt.Printf("  %-90s median %7.1f ms  max %7.1f ms\n", m.name, benchkit.Ms(m.d.P(50)), benchkit.Ms(m.d.Max()))
		r.summary = append(r.summary, m)
	}
	return nil
}

// lag posts signed orders/create deliveries at o.rate for o.duration,
// open loop; after each acknowledgement it asks a cheap GET to wait for
// the delivery's position (X-Wait-For-Position): the attribution list for
// even deliveries, the customer list for odd ones. The lag is the time
// from the acknowledgement to that answer.
func (b *bench) lag(r *result, runIndex int) error {
	interval := time.Second / time.Duration(b.o.rate)
	n := int(b.o.duration / interval)
	nonce := time.Now().UnixNano()
	base := time.Now().UTC()
	ctx, cancel := context.WithTimeout(context.Background(), b.o.duration+2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	benchkit.Pace(start, interval, n, func(i int, _ time.Time) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack, lag, err := b.one(ctx, nonce, base, runIndex, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.lagErrs++
				return
			}
			r.lagAck = append(r.lagAck, ack)
			if i%2 == 0 {
				r.lagAttr = append(r.lagAttr, lag)
			} else {
				r.lagCust = append(r.lagCust, lag)
			}
		}()
	})
	sendTime := time.Since(start)
	wg.Wait()
	r.sent, r.rate = n, float64(n)/sendTime.Seconds()
	fmt.Printf("  lag: sent %d at %.0f/s; ack p50 %.2f p99 %.2f ms; attribution lag p50 %.2f p99 %.2f ms; customers lag p50 %.2f p99 %.2f ms; errors %d\n",
		n, r.rate, benchkit.Ms(r.lagAck.P(50)), benchkit.Ms(r.lagAck.P(99)), benchkit.Ms(r.lagAttr.P(50)), benchkit.Ms(r.lagAttr.P(99)),
		benchkit.Ms(r.lagCust.P(50)), benchkit.Ms(r.lagCust.P(99)), r.lagErrs)
	return nil
}

// lagCustomers is the pool of platform customers the bench orders belong
// to, so that customers order several times.
const lagCustomers = 20_000

// one posts order i and waits for it in a read model.
func (b *bench) one(ctx context.Context, nonce int64, base time.Time, runIndex, i int) (ack, lag time.Duration, err error) {
	id := int64(7_000_000_000_000) + int64(runIndex)*10_000_000 + int64(i)
	body := orderBody(id, int64(8_000_000_000_000)+int64(i%lagCustomers), base.Add(time.Duration(i)*time.Millisecond), i)
	d := benchkit.NewDelivery(b.shop.Secret, fmt.Sprintf("attr-bench-%x-%d", nonce, i), "orders/create", body)
	req, err := d.Request(ctx, b.srv.Base+benchkit.EventsPath, b.shop.Domain)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	acked := time.Now()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("webhook status %d", resp.StatusCode)
	}
	pos := resp.Header.Get("X-Event-Position")
	path := "/api/v1/attribution?limit=1&filter[date_from]=2100-01-01"
	if i%2 == 1 {
		path = "/api/v1/customers?limit=1"
	}
	st, _, err := b.get(ctx, path, "X-Wait-For-Position", pos)
	if err != nil {
		return 0, 0, err
	}
	if st != http.StatusOK {
		return 0, 0, fmt.Errorf("wait status %d", st)
	}
	return acked.Sub(t0), time.Since(acked), nil
}

// Landings of the bench orders (the order's own touchpoint).
var orderLandings = [][2]string{
	{"/products/p1?utm_source=google&utm_medium=cpc&utm_campaign=brand&gclid=abc", "https://www.google.com/"},
	{"/?utm_source=facebook&utm_medium=paid_social&utm_campaign=retargeting&fbclid=xyz", "https://m.facebook.com/"},
	{"/collections/sale?utm_source=newsletter&utm_medium=email&utm_campaign=weekly-digest", ""},
	{"/products/p2", "https://duckduckgo.com/"},
	{"/", ""},
}

// orderBody is an orders/create payload in the platform's shape.
func orderBody(id, customer int64, at time.Time, i int) []byte {
	l := orderLandings[i%len(orderLandings)]
	stamp := at.Format(time.RFC3339)
	price := fmt.Sprintf("%d.%02d", 10+i%190, i%100)
	o := map[string]any{
		"id": id, "admin_graphql_api_id": fmt.Sprintf("gid://shopify/Order/%d", id), "name": fmt.Sprintf("#B%d", id%10_000_000),
		"email": fmt.Sprintf("bench.customer.%d@example.com", customer), "created_at": stamp, "updated_at": stamp, "processed_at": stamp,
		"currency": "USD", "financial_status": "paid", "fulfillment_status": nil, "total_price": price, "subtotal_price": price,
		"total_tax": "0.00", "total_discounts": "0.00", "landing_site": l[0], "referring_site": l[1], "source_name": "web",
		"customer": map[string]any{"id": customer, "email": fmt.Sprintf("bench.customer.%d@example.com", customer),
			"first_name": "Bench", "last_name": "Customer", "state": "enabled", "currency": "USD"},
		"line_items": []map[string]any{{"id": id*10 + 1, "product_id": 632910392, "variant_id": 808950810, "title": "Linen Shirt",
			"sku": "LIN-SHIRT-M-SAND", "quantity": 1, "price": price}},
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err) // plain strings and numbers only
	}
	return b
}

// report prints the medians of the runs as Markdown tables.
func report(o options, sh shop, rs []result) {
	if len(rs) == 0 {
		return
	}
	med := func(f func(result) float64) float64 { return benchkit.MedianOf(rs, f) }
	ms := benchkit.Ms
	size := fmt.Sprintf("%s orders, %s touchpoints", benchkit.Thousands(float64(sh.Orders)), benchkit.Thousands(float64(sh.Touchpoints)))
	if len(rs[0].lat) > 0 {
		fmt.Printf("\n| `GET /api/v1/attribution?limit=100&include=touchpoints` (median of %d runs; %s; %d clients, %d requests each) | p50 | p99 | target (p99) |\n|---|---|---|---|\n",
			len(rs), size, o.workers, o.requests)
		for i, m := range rs[0].lat {
			p50 := med(func(r result) float64 { return ms(r.lat[i].d.P(50)) })
			p99 := med(func(r result) float64 { return ms(r.lat[i].d.P(99)) })
			errs := med(func(r result) float64 { return float64(r.lat[i].errors) })
			fmt.Printf("| %s | %.2f ms | %.2f ms | < %.0f ms %s%s |\n", m.name, p50, p99, m.target, mark(p99 < m.target), errNote(errs))
		}
	}
	if len(rs[0].summary) > 0 {
		fmt.Printf("\n| `GET /api/v1/attribution/summary` over the last 30 days (median of %d runs × %d) | time | target |\n|---|---|---|\n",
			len(rs), o.summaryRepeats)
		for i, m := range rs[0].summary {
			t := med(func(r result) float64 { return ms(r.summary[i].d.P(50)) })
			fmt.Printf("| `%s` | %.0f ms | < 1 s %s |\n", strings.TrimSuffix(strings.TrimPrefix(m.name, "summary "), " (last 30 days)"), t, mark(t < 1000))
		}
	}
	if rs[0].sent > 0 {
		fmt.Printf("\n| projection lag, orders/create at %d/s for %v, open loop (median of %d runs) | p50 | p99 | target (p99) |\n|---|---|---|---|\n",
			o.rate, o.duration, len(rs))
		fmt.Printf("| achieved send rate | %.0f/s | | |\n", med(func(r result) float64 { return r.rate }))
		fmt.Printf("| acknowledgement | %.2f ms | %.2f ms | |\n", med(func(r result) float64 { return ms(r.lagAck.P(50)) }),
			med(func(r result) float64 { return ms(r.lagAck.P(99)) }))
		a99 := med(func(r result) float64 { return ms(r.lagAttr.P(99)) })
		fmt.Printf("| ack → attribution read model | %.2f ms | %.2f ms | < 200 ms %s |\n", med(func(r result) float64 { return ms(r.lagAttr.P(50)) }), a99, mark(a99 < 200))
		c99 := med(func(r result) float64 { return ms(r.lagCust.P(99)) })
		fmt.Printf("| ack → customers read model | %.2f ms | %.2f ms | < 200 ms %s |\n", med(func(r result) float64 { return ms(r.lagCust.P(50)) }), c99, mark(c99 < 200))
		fmt.Printf("| errors | %.0f | | |\n", med(func(r result) float64 { return float64(r.lagErrs) }))
	}
}

func errNote(n float64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.0f errors)", n)
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}
