// Command outwebhooks measures the outbound webhooks' delivery over real
// HTTP: it starts the cgp binary on a fresh data directory with
// --outbound-allow-private, subscribes a receiver of this process to
// customer.created (S subscriptions, made with a core of this process on
// the server's data directory), posts signed customers/create commerce
// webhooks at R per second (open loop) for D, and reports the deliveries
// per second the receiver got over the steady window, the delivery lag
// (receive time − the body's created_at, the log's commit time), the
// duplicates and the missing deliveries, and the server's CPU and memory.
//
// In the same run, a bare loop of signed POSTs from this process to the
// same receiver (K goroutines, keep-alive) gives the baseline, and a
// backlog of N deliveries gives the drain throughput. A last server
// queues events for a dead endpoint and reports its memory.
//
//	go run ./bench/outwebhooks -bin bin/cgp -rate 500 -subs 4 -duration 20s -runs 3
//
// -rate and -subs take comma-separated lists: every pair is measured.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// serveArgs are added to the server's command line: the receiver is on
// loopback and plain http.
var serveArgs = []string{"--outbound-allow-private"}

func main() {
	bin := flag.String("bin", "bin/cgp", "path of the cgp binary (make build)")
	rates := flag.String("rate", "500", "events per second, open loop (comma-separated list to sweep)")
	subsList := flag.String("subs", "4", "subscriptions receiving every event (comma-separated list to sweep)")
	duration := flag.Duration("duration", 20*time.Second, "length of each live run and of its baseline")
	runs := flag.Int("runs", 3, "runs; medians are reported")
	k := flag.Int("k", 64, "goroutines of the bare POST loop (the dispatcher sends 16 at once per subscription)")
	drainN := flag.Int("drain", 20000, "deliveries in the drain backlog (split over the subscriptions; 0: no drain)")
	memEvents := flag.Int("memory-events", 10000, "events queued for a dead endpoint (0: skip)")
	memWait := flag.Duration("memory-wait", 60*time.Second, "how long the dead endpoint is retried before the last reading")
	debug := flag.String("debug-addr", "", "pass --debug-addr to the server (profiling)")
	flag.Parse()
	if *debug != "" {
		serveArgs = append(serveArgs, "--debug-addr", *debug)
	}
	rc, err := newReceiver()
	if err != nil {
		fail(err)
	}
	defer rc.close()
	type row struct {
		rate, subs int
		res        []live
	}
	var rows []row
	for _, rate := range ints(*rates) {
		for _, subs := range ints(*subsList) {
			r := row{rate: rate, subs: subs}
			for i := 0; i < *runs; i++ {
				res, err := runOnce(*bin, rc, rate, subs, *duration, *k, *drainN)
				if err != nil {
					fail(err)
				}
				fmt.Printf("rate %d × subs %d, run %d: acked %d/%d, sustained %.0f/s (overall %.0f/s), lag p50 %v p95 %v p99 %v, dup %d, missing %d, bad signatures %d, at the end of the sends %d not fanned out and %d pending, cpu %.2f cores, rss %.0f MB, baseline %.0f posts/s, drain %.0f/s (missing %d, dup %d)\n",
					rate, subs, i+1, res.acked, res.sent, res.sustained, res.overall, res.lag.P(50), res.lag.P(95), res.lag.P(99),
					res.duplicates, res.missing, res.badSig, res.notFannedOut, res.pendingAtEnd, res.cpuCores, res.rssMB, res.baseline, res.drain, res.drainMissing, res.drainDuplicates)
				r.res = append(r.res, res)
			}
			rows = append(rows, r)
		}
	}
	fmt.Printf("\nMedians of %d runs of %v; the bare loop has %d goroutines; the drain backlog is %s deliveries.\n\n",
		*runs, *duration, *k, benchkit.Thousands(float64(*drainN)))
	fmt.Println("| events/s × subscriptions | offered deliveries/s | sustained deliveries/s (steady window) | all delivered, deliveries/s | lag p50 / p95 / p99 | duplicates / missing / bad signatures | at the end of the sends: not fanned out / pending | server CPU, cores | server RSS | bare POST loop | ratio | drain deliveries/s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		med := func(f func(live) float64) float64 { return benchkit.MedianOf(r.res, f) }
		sustained := med(func(l live) float64 { return l.sustained })
		baseline := med(func(l live) float64 { return l.baseline })
		ratio := 0.0
		if baseline > 0 {
			ratio = sustained / baseline
		}
		fmt.Printf("| %d × %d | %s/s | %s/s | %s/s | %s / %s / %s ms | %.0f / %.0f / %.0f | %s / %s | %.2f | %.0f MB | %s posts/s | %.2f | %s/s |\n",
			r.rate, r.subs, benchkit.Thousands(float64(r.rate*r.subs)), benchkit.Thousands(sustained),
			benchkit.Thousands(med(func(l live) float64 { return l.overall })),
			ms(med(func(l live) float64 { return benchkit.Ms(l.lag.P(50)) })), ms(med(func(l live) float64 { return benchkit.Ms(l.lag.P(95)) })),
			ms(med(func(l live) float64 { return benchkit.Ms(l.lag.P(99)) })),
			med(func(l live) float64 { return float64(l.duplicates) }), med(func(l live) float64 { return float64(l.missing) }),
			med(func(l live) float64 { return float64(l.badSig) }),
			benchkit.Thousands(med(func(l live) float64 { return float64(l.notFannedOut) })),
			benchkit.Thousands(med(func(l live) float64 { return float64(l.pendingAtEnd) })),
			med(func(l live) float64 { return l.cpuCores }), med(func(l live) float64 { return l.rssMB }),
			benchkit.Thousands(baseline), ratio, benchkit.Thousands(med(func(l live) float64 { return l.drain })))
	}
	if *memEvents > 0 {
		m, err := deadEndpoint(*bin, *memEvents, *memWait)
		if err != nil {
			fail(err)
		}
		fmt.Printf("\n| dead endpoint, %s events | server RSS | pending deliveries |\n|---|---|---|\n", benchkit.Thousands(float64(m.events)))
		fmt.Printf("| before | %.0f MB | 0 |\n", m.rssBefore)
		fmt.Printf("| queued | %.0f MB | %s |\n", m.rssQueued, benchkit.Thousands(float64(m.pendingQueued)))
		fmt.Printf("| after %v of retrying (%d attempts made) | %.0f MB | %s |\n", m.retryWindow, m.attemptsLate, m.rssLate,
			benchkit.Thousands(float64(m.pendingLate)))
	}
}

// ms formats milliseconds: one decimal below 100, else whole with
// thousands separators.
func ms(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return benchkit.Thousands(v)
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fail(fmt.Errorf("%q: want positive integers separated by commas", s))
		}
		out = append(out, n)
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "outwebhooks:", err)
	os.Exit(1)
}
