// Command ingest measures the commerce webhook receiver of the cgp binary on
// the embedded default (SQLite) over real HTTP, against a bare receiver
// measured in the same run.
//
// Each run starts the binary on a fresh data directory, creates an account
// and a shop with its CLI, and posts signed 2 KB orders/create deliveries
// (unique order and webhook ids, customers drawn from a pool; bodies signed
// before the clock starts) to POST /webhooks/events:
//
//   - rate: open loop at -rate per second for -duration over -conns
//     keep-alive connections; each latency runs from the delivery's due
//     time, so queueing behind a slow answer counts. Then the same load on
//     the bare receiver: an in-process net/http server that reads the body,
//     verifies its HMAC (constant time) and answers 200
//     {"status":"accepted"}. Reports acknowledged rate, p50/p90/p99/max
//     acknowledgement latency, answers that are not 2xx, and the ratios
//     cgp / bare.
//   - max: closed loop, -workers senders as fast as answers come, on both;
//     deliveries per second and their ratio.
//   - dups: -dups-total deliveries posted at once, -dups-fraction of them
//     repeats of another's webhook id and body (some several times, copies
//     in flight together); every post must be acknowledged, and, read from
//     the stopped server's event log (events.db, read-only), every unique
//     delivery must have exactly one event with its deterministic event id.
//     Exits non-zero otherwise.
//
// -runs runs of rate and max (which of cgp and bare goes first alternates);
// the summary gives medians and is a Markdown table. Each measurement also
// reports the CPU the server and this process (load generator, and the bare
// receiver when it is measured) used meanwhile, in cores.
//
//	make build && go run ./bench/ingest -bin bin/cgp
//	go run ./bench/ingest -bin bin/cgp -mode rate -rate 5000 -duration 10s -runs 3
//	go run ./bench/ingest -bin bin/cgp -mode dups
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// Targets the figures are judged against.
const (
	targetRate = 5000                  // deliveries/s sustained
	targetP99  = 50 * time.Millisecond // acknowledgement
)

type config struct {
	bin, mode, debugAddr string
	rate, runs, conns    int
	workers, customers   int
	maxPool, dupTotal    int
	dupFraction          float64
	duration, warmup     time.Duration
	seed                 uint64
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "bin/cgp", "path of the cgp binary (make build)")
	flag.StringVar(&cfg.mode, "mode", "all", "rate, max, dups or all")
	flag.IntVar(&cfg.rate, "rate", targetRate, "deliveries per second, open loop (rate mode; also the warm-up rate)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each measurement")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "open-loop warm-up at -rate before each measurement, not counted")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of rate and max; medians are reported")
	flag.IntVar(&cfg.conns, "conns", 512, "client connections of the open loop (keep-alive)")
	flag.IntVar(&cfg.workers, "workers", 64, "senders of the closed loop (max mode), one connection each")
	flag.IntVar(&cfg.customers, "customers", 10_000, "customers the orders are drawn from")
	flag.IntVar(&cfg.maxPool, "max-pool", 100_000, "unique deliveries prepared for a closed-loop run on cgp (it ends early when they run out)")
	flag.IntVar(&cfg.dupTotal, "dups-total", 2000, "deliveries posted at once in the duplicates scenario")
	flag.Float64Var(&cfg.dupFraction, "dups-fraction", 0.30, "fraction of those that repeat another's webhook id and body")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the generated orders")
	flag.StringVar(&cfg.debugAddr, "debug-addr", "", "pass --debug-addr to the server (profiling)")
	flag.Parse()
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(2)
	}
	ok, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func (c config) validate() error {
	switch c.mode {
	case "rate", "max", "dups", "all":
	default:
		return fmt.Errorf("-mode %q: want rate, max, dups or all", c.mode)
	}
	if c.rate < 1 || c.runs < 1 || c.conns < 1 || c.workers < 1 || c.customers < 1 || c.maxPool < 1 || c.dupTotal < 1 {
		return fmt.Errorf("-rate, -runs, -conns, -workers, -customers, -max-pool and -dups-total must be positive")
	}
	if c.duration < 100*time.Millisecond || c.warmup < 0 {
		return fmt.Errorf("-duration must be at least 100ms and -warmup not negative")
	}
	if c.dupFraction < 0 || c.dupFraction >= 1 {
		return fmt.Errorf("-dups-fraction must be in [0, 1)")
	}
	return nil
}

func (c config) does(mode string) bool { return c.mode == mode || c.mode == "all" }

// runResult is one run: each receiver under each load.
type runResult struct {
	rateCGP, rateBare loadResult
	maxCGP, maxBare   loadResult
}

// run runs the modes asked for and prints their lines and the summary; it
// returns false when the duplicates scenario failed.
func run(cfg config) (bool, error) {
	gen := generator{secret: secret, customers: cfg.customers, seed: cfg.seed, epoch: time.Date(2026, 3, 9, 9, 0, 0, 0, time.FixedZone("CET", 3600))}
	var runs []runResult
	if cfg.does("rate") || cfg.does("max") {
		warm := int(cfg.warmup.Seconds() * float64(cfg.rate))
		n := max(1, int(cfg.duration.Seconds()*float64(cfg.rate)))
		pool := warm + n
		if cfg.does("max") {
			pool = warm + max(n, cfg.maxPool)
		}
		t0 := time.Now()
		ds := gen.deliveries(0, pool)
		fmt.Printf("prepared %s signed %s deliveries of %d bytes in %v\n", benchkit.Thousands(float64(pool)), topic, len(ds[0].Body), time.Since(t0).Round(time.Millisecond))
		bare, err := startBare(secret)
		if err != nil {
			return false, err
		}
		defer bare.close()
		b := bench{cfg: cfg, gen: gen, warm: ds[:warm], bare: target{url: bare.url, domain: shopDomain}}
		for i := range cfg.runs {
			var r runResult
			if cfg.does("rate") {
				if r.rateCGP, r.rateBare, err = b.pair(i, "rate", ds[warm:warm+n]); err != nil {
					return false, err
				}
			}
			if cfg.does("max") {
				if r.maxCGP, r.maxBare, err = b.pair(i, "max", ds[warm:]); err != nil {
					return false, err
				}
			}
			runs = append(runs, r)
		}
		printSummary(cfg, runs)
	}
	if !cfg.does("dups") {
		return true, nil
	}
	d, err := runDups(cfg, gen)
	if err != nil {
		return false, err
	}
	printDups(d)
	return d.pass(), nil
}

// bench measures both receivers.
type bench struct {
	cfg  config
	gen  generator
	warm []benchkit.Delivery
	bare target
}

// pair measures cgp and the bare receiver under one load, cgp first in
// even runs and second in odd ones, and prints a line for each.
func (b bench) pair(run int, mode string, ds []benchkit.Delivery) (cgp, bare loadResult, err error) {
	order := []string{"cgp", "bare"}
	if run%2 == 1 {
		order = []string{"bare", "cgp"}
	}
	for _, who := range order {
		var r loadResult
		if who == "cgp" {
			r, err = b.measureCGP(mode, ds)
			cgp = r
		} else {
			r = b.measure(b.bare, mode, ds, true, nil)
			bare = r
		}
		if err != nil {
			return cgp, bare, err
		}
		fmt.Printf("run %d %-4s %-4s: %s\n", run+1, mode, who, line(mode, r))
	}
	return cgp, bare, nil
}

// measureCGP starts cgp on a fresh data directory and measures it.
func (b bench) measureCGP(mode string, ds []benchkit.Delivery) (loadResult, error) {
	in, err := startCGP(b.cfg, b.gen)
	if err != nil {
		return loadResult{}, err
	}
	r := b.measure(in.target(), mode, ds, false, in.srv)
	return r, in.close()
}

// measure warms t up and runs one load on it, and measures the CPU used
// meanwhile by srv (nil for the bare receiver) and by this process. cycle
// lets the closed loop send a delivery again (the bare receiver keeps
// nothing).
func (b bench) measure(t target, mode string, ds []benchkit.Delivery, cycle bool, srv *benchkit.Server) loadResult {
	conns := b.cfg.conns
	if mode == "max" {
		conns = b.cfg.workers
	}
	c := benchkit.Client(conns, 30*time.Second)
	defer c.CloseIdleConnections()
	if len(b.warm) > 0 {
		if w := openLoop(c, t, b.warm, b.cfg.rate, conns); w.ok != len(b.warm) {
			fmt.Fprintf(os.Stderr, "ingest: warning: warm-up: %d of %d acknowledged, statuses %v\n", w.ok, len(b.warm), w.statuses)
		}
	}
	var srvCPU time.Duration
	if srv != nil {
		srvCPU, _ = srv.CPU()
	}
	selfCPU, start := benchkit.SelfCPU(), time.Now()
	var r loadResult
	if mode == "max" {
		r = closedLoop(c, t, ds, b.cfg.workers, b.cfg.duration, cycle)
	} else {
		r = openLoop(c, t, ds, b.cfg.rate, conns)
	}
	wall := time.Since(start).Seconds()
	r.benchCores = (benchkit.SelfCPU() - selfCPU).Seconds() / wall
	if srv != nil {
		if now, err := srv.CPU(); err == nil && srvCPU > 0 {
			r.serverCores = (now - srvCPU).Seconds() / wall
		}
	}
	return r
}
