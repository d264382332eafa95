// Command replay measures `cgp replay` (issue 6, "Figures"): the rate at
// which every projector rebuilds its read models from the whole event log,
// and, in the same run, a bare read of that log (every event read in
// position order, payloads included, nothing decoded) as the baseline the
// rate is compared with.
//
// It generates a shop with `cgp dev generate` (or reuses -data), then
// alternates a bare read and a replay -runs times and prints the medians.
//
//	make build && go run ./bench/replay -bin bin/cgp -customers 20000 -orders 100000 -runs 3
//	go run ./bench/replay -bin bin/cgp -data /path/to/generated -runs 1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
)

// target is the figure: events/s of a replay of every projector.
const target = 100_000

type options struct {
	bin, data         string
	customers, orders int
	touchpoints       int
	runs, batch       int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cgp", "the cgp binary")
	flag.StringVar(&o.data, "data", "", "a data directory generated before (default: generate one in a temporary directory)")
	flag.IntVar(&o.customers, "customers", 20_000, "customers to generate")
	flag.IntVar(&o.orders, "orders", 100_000, "orders to generate")
	flag.IntVar(&o.touchpoints, "touchpoints-per-order", 0, "touchpoints to generate per order (when the generator has the flag)")
	flag.IntVar(&o.runs, "runs", 3, "measurements (medians are reported)")
	flag.IntVar(&o.batch, "batch", 0, "cgp replay --batch (default: its own)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/replay:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir := o.data
	if dir == "" {
		tmp, err := os.MkdirTemp("", "cgp-bench-replay-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
		if err := generate(o, dir); err != nil {
			return err
		}
	}
	var bare, replayed, ratios, cpus []float64
	var events uint64
	for i := range o.runs {
		b, n, err := bareRead(filepath.Join(dir, "events.db"))
		if err != nil {
			return err
		}
		args := []string{"replay", "--progress", "none"}
		if o.batch > 0 {
			args = append(args, "--batch", fmt.Sprint(o.batch))
		}
		cpuBefore := childCPU()
		res, err := benchkit.CLI(o.bin, dir, args...)
		cpu := childCPU() - cpuBefore
		if err != nil {
			return err
		}
		r, _ := res["events_per_second"].(float64)
		if r <= 0 {
			return fmt.Errorf("replay printed %v", res)
		}
		events = n
		bare, replayed, ratios = append(bare, b), append(replayed, r), append(ratios, r/b)
		cpus = append(cpus, cpu)
		fmt.Printf("run %d: %d events; bare read %s events/s; replay %s events/s (%.1f s, %.1f CPU s); ratio %.4f\n",
			i+1, n, benchkit.Thousands(b), benchkit.Thousands(r), res["seconds"], cpu, r/b)
	}
	mr := benchkit.Median(replayed)
	verdict := "MET"
	if mr < target {
		verdict = "NOT MET"
	}
	fmt.Printf("\n%d events, medians of %d runs: bare read %s events/s, replay of every projector %s events/s, ratio %.4f; target %s events/s: %s\n",
		events, o.runs, benchkit.Thousands(benchkit.Median(bare)), benchkit.Thousands(mr), benchkit.Median(ratios), benchkit.Thousands(target), verdict)
	// On a shared machine the replay's wall time follows the other load;
	// its CPU time (user and system, every thread) does much less.
	fmt.Printf("replay CPU time: median %.1f s (%s events per CPU second)\n", benchkit.Median(cpus),
		benchkit.Thousands(float64(events)/benchkit.Median(cpus)))
	return nil
}

// childCPU is the user and system CPU time, in seconds, of the child
// processes waited for so far.
func childCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// generate records an account, a shop and its synthetic history.
func generate(o options, dir string) error {
	t, err := benchkit.NewTenant(o.bin, dir, "Bench Replay", "bench-replay.example.com", "bench-replay-secret-0123456789", "agency")
	if err != nil {
		return err
	}
	args := []string{"dev", "generate", "--shop", t.ShopID, "--customers", fmt.Sprint(o.customers), "--orders", fmt.Sprint(o.orders)}
	if o.touchpoints > 0 {
		args = append(args, "--touchpoints-per-order", fmt.Sprint(o.touchpoints))
	}
	start := time.Now()
	res, err := benchkit.CLI(o.bin, dir, args...)
	if err != nil {
		return err
	}
	fmt.Printf("generated %v in %.0f s\n", res, time.Since(start).Seconds())
	return nil
}

// bareRead reads every event of the log in position order, pages of 4,096,
// and returns events/s and the count.
func bareRead(path string) (float64, uint64, error) {
	l, err := logsqlite.Open(logsqlite.Config{Path: path})
	if err != nil {
		return 0, 0, err
	}
	defer l.Close()
	ctx := context.Background()
	start := time.Now()
	var after eventlog.Position
	var n uint64
	for {
		evs, err := l.ReadAll(ctx, after, 4096)
		if err != nil {
			return 0, 0, err
		}
		n += uint64(len(evs))
		if len(evs) == 0 {
			break
		}
		after = evs[len(evs)-1].Position
	}
	d := time.Since(start).Seconds()
	if n == 0 {
		return 0, 0, errors.New("the log is empty")
	}
	return float64(n) / d, n, nil
}
