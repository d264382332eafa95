// Command audit measures the audit history API (issue 7, "Figures": pages
// of 100 events in under 50 ms p99 on a log of 10,000,000 events).
//
// It builds a data directory (or reuses one with -data when it already
// holds a log): a few shops made with the binary's CLI, then -events
// events written straight into the embedded log with its batch append,
// sealed by the same envelope codec and vault the service uses (so the API
// decrypts them as it would any other): customer streams of one
// CustomerCreated (personal fields sealed with the customer's key) and
// CustomerTagsSet events, interleaved across streams and shops, with
// several actors. The shop measured holds -share of the events; the other
// shops the rest. Then it starts the binary on the directory, waits until
// every projector reached the head of the log, and measures, closed loop
// over keep-alive connections, the latency of GET /api/v1/audit-events
// with limit=100: the first page, by type, by stream, by resource id, by
// actor, by a time range in the middle of the log, newest first, and deep
// pages (cursors collected from the middle of the history).
//
//	make build && go run ./bench/audit -bin bin/cgp -data /work/benchdata/audit-10m -events 10000000
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
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/vault"
	vaultsqlite "github.com/cgp-platform/cgp/vault/sqlite"
)

type options struct {
	bin, data    string
	events       int
	shops        int
	share        float64
	perStream    int
	workers      int
	requests     int
	concurrency  int
	readyTimeout time.Duration
	waitFor      string
}

// state is what the build leaves for the measurement (state.json).
type state struct {
	ShopID  string   `json:"shop_id"`
	Token   string   `json:"token"`
	Streams []string `json:"streams"` // a sample of the measured shop's customer streams
	Events  int      `json:"events"`
	Head    uint64   `json:"head"`
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cgp", "the cgp binary")
	flag.StringVar(&o.data, "data", "", "data directory (built when it has no state.json; default a temporary one)")
	flag.IntVar(&o.events, "events", 1_000_000, "events in the log")
	flag.IntVar(&o.shops, "shops", 4, "shops in the log")
	flag.Float64Var(&o.share, "share", 0.6, "share of the events that are the measured shop's")
	flag.IntVar(&o.perStream, "per-stream", 50, "events per customer stream (one CustomerCreated, the rest CustomerTagsSet)")
	flag.IntVar(&o.workers, "workers", 32, "concurrent appenders while building")
	flag.IntVar(&o.requests, "requests", 300, "requests per measurement")
	flag.IntVar(&o.concurrency, "concurrency", 1, "concurrent clients while measuring")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 2*time.Hour, "how long to wait for the read models to reach the head")
	flag.StringVar(&o.waitFor, "wait-for", "", "wait for this projector only (default: every projector) before measuring")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "audit bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.data == "" {
		d, err := os.MkdirTemp("", "cgp-audit-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.data = d
	}
	st, err := loadState(o.data)
	if err != nil {
		if st, err = build(o); err != nil {
			return err
		}
	} else {
		fmt.Printf("reusing %s: %d events, head %d\n", o.data, st.Events, st.Head)
	}
	srv, err := benchkit.Start(o.bin, o.data, extraServeArgs...)
	if err != nil {
		return err
	}
	defer srv.Stop()
	client := benchkit.Client(o.concurrency+1, time.Minute)
	start := time.Now()
	if err := waitProjected(client, srv.Base, st.Head, o.waitFor, o.readyTimeout); err != nil {
		return err
	}
	fmt.Printf("read models at the head %d after %.1f s\n", st.Head, time.Since(start).Seconds())
	return measure(o, client, srv.Base, st)
}

// extraServeArgs lift the per-token rate limit: the measurement would
// exceed the agency plan's 600 requests per minute, and rate limiting is
// not what is measured.
var extraServeArgs = []string{"--rate-limit-agency", "1000000"}

func loadState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// build makes the shops with the CLI and writes the events into the log.
func build(o options) (state, error) {
	var st state
	var shops []string
	for i := range o.shops {
		tn, err := benchkit.NewTenant(o.bin, o.data, fmt.Sprintf("Audit bench %d", i), fmt.Sprintf("audit-bench-%d.example.com", i),
			"whsec_"+strings.Repeat("a", 24), "agency")
		if err != nil {
			return st, err
		}
		shops = append(shops, tn.ShopID)
		if i == 0 {
			if st.Token, err = tn.Token(o.bin, o.data, "audit:read"); err != nil {
				return st, err
			}
		}
	}
	st.ShopID = shops[0]
	master, err := vault.LoadOrCreateKeyFile(filepath.Join(o.data, "master.key"))
	if err != nil {
		return st, err
	}
	vs, err := vaultsqlite.Open(vaultsqlite.Config{Path: filepath.Join(o.data, "vault.db"), MasterKey: master})
	if err != nil {
		return st, err
	}
	keys := vault.NewCache(vs, 100_000)
	defer keys.Close()
	codec := envelope.New(domain.Events(), keys)
	log, err := logsqlite.Open(logsqlite.Config{Path: filepath.Join(o.data, "events.db")})
	if err != nil {
		return st, err
	}
	defer log.Close()

	// Streams: each belongs to a shop (the measured one for share of them)
	// and gets perStream events, appended in rounds of 5 so that streams
	// interleave in the log.
	nStreams := max(1, o.events/o.perStream)
	const round = 5
	type job struct{ stream, from int }
	jobs := make(chan job, 1024)
	var written atomic.Int64
	var head atomic.Uint64
	errc := make(chan error, o.workers)
	var wg sync.WaitGroup
	shopOf := func(s int) string {
		if float64(s%1000) < o.share*1000 {
			return shops[0]
		}
		return shops[1+s%(len(shops)-1)]
	}
	ctx := context.Background()
	for range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				shop := shopOf(j.stream)
				cus := fmt.Sprintf("cus_bench%08d", j.stream)
				evs := make([]eventlog.EventData, 0, round)
				for k := j.from; k < min(j.from+round, o.perStream); k++ {
					var ev domain.Event
					meta := eventlog.Metadata{CorrelationID: fmt.Sprintf("req_bench%d_%d", j.stream, k)}
					if k == 0 {
						email, first, last := fmt.Sprintf("person%d@bench.example.com", j.stream), "First", "Last"
						ev = &domain.CustomerCreated{CustomerID: cus, ShopID: shop, CustomerProfile: domain.CustomerProfile{
							ExternalID: strconv.Itoa(j.stream), Email: &email, FirstName: &first, LastName: &last, State: "enabled", Currency: "USD"}}
						meta.Actor, meta.Source = fmt.Sprintf("webhook:dlv_bench%d", j.stream), "webhook"
					} else {
						ev = &domain.CustomerTagsSet{CustomerID: cus, ShopID: shop, Tags: []string{"t" + strconv.Itoa(k%7), "vip"}}
						meta.Actor, meta.Source = fmt.Sprintf("tok_bench%02d", (j.stream+k)%20), "api"
					}
					id := eventlog.DeterministicID("audit-bench", cus, strconv.Itoa(k))
					ed, err := codec.Encode(ctx, id, shop, ev, time.Now(), meta)
					if err != nil {
						errc <- err
						return
					}
					evs = append(evs, ed)
				}
				res, err := log.Append(ctx, domain.CustomerStream(cus), eventlog.Any(), evs...)
				if err != nil {
					errc <- err
					return
				}
				for {
					h := head.Load()
					if res.Position <= h || head.CompareAndSwap(h, res.Position) {
						break
					}
				}
				written.Add(int64(len(evs)))
			}
		}()
	}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := written.Load()
				fmt.Printf("  built %d events (%.0f/s)\n", n, float64(n)/time.Since(start).Seconds())
			}
		}
	}()
	// Rounds of streams in blocks of 10,000, so a block's streams
	// interleave with each other.
	const block = 10_000
feed:
	for b := 0; b < nStreams; b += block {
		for from := 0; from < o.perStream; from += round {
			for s := b; s < min(b+block, nStreams); s++ {
				select {
				case jobs <- job{s, from}:
				case err := <-errc:
					close(jobs)
					wg.Wait()
					close(done)
					return st, err
				}
			}
			if len(errc) > 0 {
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	close(done)
	select {
	case err := <-errc:
		return st, err
	default:
	}
	el := time.Since(start)
	st.Events = int(written.Load())
	fmt.Printf("built %d events in %.1f s (%.0f events/s)\n", st.Events, el.Seconds(), float64(st.Events)/el.Seconds())
	if st.Head, err = log.HeadPosition(ctx); err != nil {
		return st, err
	}
	for s := 0; s < nStreams && len(st.Streams) < 200; s += max(1, nStreams/400) {
		if shopOf(s) == shops[0] {
			st.Streams = append(st.Streams, fmt.Sprintf("customer-cus_bench%08d", s))
		}
	}
	b, _ := json.Marshal(st)
	return st, os.WriteFile(filepath.Join(o.data, "state.json"), b, 0o600)
}

// waitProjected waits until no projector lags behind head.
func waitProjected(c *http.Client, base string, head uint64, only string, timeout time.Duration) error {
	last := time.Now()
	return benchkit.WaitFor(timeout, "read models at the head of the log", func() bool {
		resp, err := c.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		seen, behind := 0, 0
		var low uint64 = 1 << 63
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "cgp_projection_checkpoint_position{") ||
				(only != "" && !strings.Contains(line, `projector="`+only+`"`)) {
				continue
			}
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			seen++
			if uint64(v) < head {
				behind++
				low = min(low, uint64(v))
			}
		}
		if time.Since(last) > 30*time.Second {
			last = time.Now()
			fmt.Printf("  %d of %d projectors behind the head (lowest checkpoint %d of %d)\n", behind, seen, low, head)
		}
		return seen > 0 && behind == 0
	})
}

// page is one GET of the list; it returns the entries' positions,
// recorded_at and the next cursor.
type page struct {
	positions []uint64
	recorded  []string
	next      string
}

func get(c *http.Client, base, token, query string) (page, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/audit-events?"+query, nil)
	if err != nil {
		return page{}, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return page{}, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	el := time.Since(t0)
	if err != nil {
		return page{}, 0, err
	}
	if resp.StatusCode != 200 {
		return page{}, 0, fmt.Errorf("GET %s: %d %s", query, resp.StatusCode, body)
	}
	var doc struct {
		Data []struct {
			Attributes struct {
				Position   uint64 `json:"position"`
				RecordedAt string `json:"recorded_at"`
			} `json:"attributes"`
		} `json:"data"`
		Pagination struct {
			NextCursor string `json:"next_cursor"`
		} `json:"pagination"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return page{}, 0, err
	}
	var p page
	for _, d := range doc.Data {
		p.positions = append(p.positions, d.Attributes.Position)
		p.recorded = append(p.recorded, d.Attributes.RecordedAt)
	}
	p.next = doc.Pagination.NextCursor
	return p, el, nil
}

func measure(o options, c *http.Client, base string, st state) error {
	rng := rand.New(rand.NewPCG(7, 7))
	// A time range in the middle of the log: the recorded_at of the
	// events around the middle position.
	first, _, err := get(c, base, st.Token, "limit=1")
	if err != nil {
		return err
	}
	lastP, _, err := get(c, base, st.Token, "limit=1&sort=-position")
	if err != nil {
		return err
	}
	if len(first.recorded) == 0 || len(lastP.recorded) == 0 {
		return fmt.Errorf("the shop's history is empty")
	}
	t0, _ := time.Parse(time.RFC3339Nano, first.recorded[0])
	t1, _ := time.Parse(time.RFC3339Nano, lastP.recorded[0])
	mid := t0.Add(t1.Sub(t0) / 2)
	// Deep cursors: walk from the middle of the history.
	deep := []string{}
	cur := ""
	q := "limit=100&filter[recorded_at][gte]=" + url.QueryEscape(mid.Format(time.RFC3339Nano))
	for len(deep) < 50 {
		p, _, err := get(c, base, st.Token, q+cursorParam(cur))
		if err != nil {
			return err
		}
		if p.next == "" {
			break
		}
		deep = append(deep, p.next)
		cur = p.next
	}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	cases := []struct {
		name  string
		query func() string
	}{
		{"first page, unfiltered", func() string { return "limit=100" }},
		{"newest first", func() string { return "limit=100&sort=-position" }},
		{"by type (CustomerCreated, 1 event in -per-stream)", func() string { return "limit=100&filter[type]=CustomerCreated" }},
		{"by stream", func() string { return "limit=100&filter[stream]=" + url.QueryEscape(pick(st.Streams)) }},
		{"by resource id", func() string {
			return "limit=100&filter[resource_id]=" + strings.TrimPrefix(pick(st.Streams), "customer-")
		}},
		{"by actor (1 of 20 tokens)", func() string { return fmt.Sprintf("limit=100&filter[actor]=tok_bench%02d", rng.IntN(20)) }},
		{"by time range (a tenth of the history, in its middle half)", func() string {
			span := t1.Sub(t0)
			from := t0.Add(span/4 + time.Duration(rng.Int64N(int64(span/2)+1)))
			return "limit=100&filter[recorded_at][gte]=" + url.QueryEscape(from.Format(time.RFC3339Nano)) +
				"&filter[recorded_at][lt]=" + url.QueryEscape(from.Add(span/10).Format(time.RFC3339Nano))
		}},
	}
	if len(deep) > 0 {
		cases = append(cases, struct {
			name  string
			query func() string
		}{"deep cursor (middle of the history)", func() string { return q + cursorParam(pick(deep)) }})
	}
	fmt.Printf("\nGET /api/v1/audit-events, limit=100, %d requests each, %d client(s); shop %s holds %.0f%% of %d events\n\n",
		o.requests, o.concurrency, st.ShopID, o.share*100, st.Events)
	fmt.Printf("| query | entries/page | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|\n")
	for _, cs := range cases {
		for range 10 { // warm up
			if _, _, err := get(c, base, st.Token, cs.query()); err != nil {
				return err
			}
		}
		var mu sync.Mutex
		var lat []float64
		entries := 0
		var wg sync.WaitGroup
		var firstErr error
		per := o.requests / o.concurrency
		for range o.concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					mu.Lock()
					query := cs.query()
					mu.Unlock()
					p, el, err := get(c, base, st.Token, query)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					lat = append(lat, float64(el.Microseconds())/1000)
					entries += len(p.positions)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		slices.Sort(lat)
		fmt.Printf("| %s | %.0f | %.1f | %.1f | %.1f |\n", cs.name, float64(entries)/float64(len(lat)),
			pct(lat, 0.50), pct(lat, 0.99), lat[len(lat)-1])
	}
	return nil
}

func cursorParam(c string) string {
	if c == "" {
		return ""
	}
	return "&cursor=" + url.QueryEscape(c)
}

// pct is the p-quantile of sorted values (nearest rank).
func pct(sorted []float64, p float64) float64 {
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
