// Command scaleout measures webhook ingest of two cgp servers sharing one
// set of stores against one server (issue 23): the event log and the key
// vault in PostgreSQL (fresh random schemas per run, dropped at its end),
// the counters and idempotency records in Redis, one master key.
//
// Configurations alternate, A, B, A, B, …, -runs times each: (A) one
// server; (B) two servers, the deliveries sent to each in turn. A run
// creates an account and a shop with the binary's CLI (its own data
// directory, the same stores), starts the servers (each on its own data
// directory and a free port), waits until each acknowledges a probe, then
// runs a closed loop: -senders goroutines each post a signed
// customers/create delivery of a new customer as soon as the previous one
// is answered, -warmup uncounted, then -duration measured. It reports the
// acknowledged (2xx) deliveries per second, their acknowledgement latency
// p50/p99, the servers' CPU and the whole machine's; then it reads the
// run's log from PostgreSQL and checks that every acknowledged delivery
// (warm-up and probes included) has exactly one CustomerCreated event in
// its customer's stream. The summary is a Markdown table of medians and the ratio B/A.
//
// Everything runs on this machine: the servers, PostgreSQL, Redis and the
// load generator share its cores, so B/A shows what a second server over
// one log costs, not the capacity a second machine would add.
//
//	make build && go run ./bench/scaleout -bin bin/cgp
//
// It exits non-zero when a run fails or an acknowledged delivery is missing
// from the log or in it twice.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"
)

type config struct {
	bin                        string
	pgURL, redisURL, masterKey string
	senders, runs              int
	duration, warmup           time.Duration
}

func (c config) validate() error {
	var errs []error
	if c.senders < 1 {
		errs = append(errs, errors.New("-senders must be at least 1"))
	}
	if c.runs < 1 {
		errs = append(errs, errors.New("-runs must be at least 1"))
	}
	if c.duration <= 0 {
		errs = append(errs, errors.New("-duration must be positive"))
	}
	if c.warmup < 0 {
		errs = append(errs, errors.New("-warmup must not be negative"))
	}
	if _, err := os.Stat(c.bin); err != nil {
		errs = append(errs, fmt.Errorf("-bin: %w (make build)", err))
	}
	return errors.Join(errs...)
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "bin/cgp", "path of the cgp binary (make build)")
	flag.StringVar(&cfg.pgURL, "postgres-url", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL database the runs' schemas are made in")
	flag.StringVar(&cfg.redisURL, "redis-url", "redis://127.0.0.1:6379/0", "Redis the servers share")
	flag.IntVar(&cfg.senders, "senders", 64, "concurrent senders of the closed loop, in all")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each measurement")
	flag.DurationVar(&cfg.warmup, "warmup", 2*time.Second, "closed-loop warm-up before each measurement, not counted")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of each configuration; medians are reported")
	flag.Parse()
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		os.Exit(2)
	}
	key, err := newMasterKey()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		os.Exit(1)
	}
	cfg.masterKey = key
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := measure(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		os.Exit(1)
	}
}

// measure runs the configurations in turn and prints each run and the
// summary.
func measure(ctx context.Context, cfg config) error {
	results := map[int][]result{}
	for i := range cfg.runs {
		for _, n := range []int{1, 2} {
			r, err := run(ctx, cfg, n)
			if err != nil {
				return fmt.Errorf("run %d, %d server(s): %w", i+1, n, err)
			}
			printRun(i+1, r)
			results[n] = append(results[n], r)
		}
	}
	fmt.Println()
	printSummary(cfg, results[1], results[2])
	for _, r := range append(results[1], results[2]...) {
		if !r.check.ok() {
			return errors.New("an acknowledged delivery is missing from the log or in it twice")
		}
	}
	return nil
}

func printRun(i int, r result) {
	l := r.load
	fmt.Printf("run %d, %d server(s): %d acknowledged in %.1fs = %.0f/s, ack p50 %v p99 %v, failed %d %v, servers' CPU %.2f cores, machine busy %.2f cores; log: %d acknowledged, %d missing, %d twice, %d not acknowledged; error lines %d\n",
		i, r.servers, l.acked, l.elapsed.Seconds(), l.rate(), l.lat.P(50).Round(10*time.Microsecond), l.lat.P(99).Round(10*time.Microsecond),
		l.failed, l.statuses, r.serverCores, r.machineBusy, r.check.acked, r.check.missing, r.check.duplicated, r.check.unacked, r.errorLines)
	if r.errorLines > 0 {
		fmt.Fprintf(os.Stderr, "scaleout: warning: the servers logged %d error lines in run %d\n", r.errorLines, i)
	}
}
