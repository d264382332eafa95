package main

import (
	"fmt"
	"runtime"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// printSummary prints the Markdown table of medians of one and two
// servers, the ratio B/A and the note on the machine.
func printSummary(cfg config, one, two []result) {
	med := func(rs []result, f func(result) float64) float64 { return benchkit.MedianOf(rs, f) }
	row := func(name string, f func(result) float64, format func(float64) string) {
		a, b := med(one, f), med(two, f)
		ratio := "–"
		if a != 0 {
			ratio = fmt.Sprintf("%.2f", b/a)
		}
		fmt.Printf("| %s | %s | %s | %s |\n", name, format(a), format(b), ratio)
	}
	ms := func(v float64) string { return fmt.Sprintf("%.1f ms", v) }
	fmt.Printf("| median of %d runs, %d senders, %v each | (A) one server | (B) two servers | B/A |\n|---|---|---|---|\n",
		cfg.runs, cfg.senders, cfg.duration)
	row("acknowledged deliveries/s", func(r result) float64 { return r.load.rate() }, benchkit.Thousands)
	row("acknowledgement p50", func(r result) float64 { return benchkit.Ms(r.load.lat.P(50)) }, ms)
	row("acknowledgement p99", func(r result) float64 { return benchkit.Ms(r.load.lat.P(99)) }, ms)
	row("servers' CPU (cores, both servers in B)", func(r result) float64 { return r.serverCores }, func(v float64) string { return fmt.Sprintf("%.2f", v) })
	row("servers' CPU per delivery", func(r result) float64 {
		return r.serverCores / r.load.rate() * 1e6
	}, func(v float64) string { return fmt.Sprintf("%.0f µs", v) })
	row("machine's CPU busy, every process (cores)", func(r result) float64 { return r.machineBusy }, func(v float64) string { return fmt.Sprintf("%.2f", v) })
	fmt.Printf("| failed posts (all runs) | %d | %d | |\n", failed(one), failed(two))
	fmt.Printf("| acknowledged deliveries in the log exactly once (all runs) | %s | %s | |\n", exactlyOnce(one), exactlyOnce(two))
	fmt.Printf("\nBoth servers share this machine's %d cores with PostgreSQL, Redis and the load generator, so B/A shows the overhead of a second server over one log, not added capacity.\n",
		runtime.NumCPU())
}

func failed(rs []result) int {
	n := 0
	for _, r := range rs {
		n += r.load.failed
	}
	return n
}

// exactlyOnce sums the log checks of rs: "N of M", and what went wrong.
func exactlyOnce(rs []result) string {
	var sum logCheck
	for _, r := range rs {
		sum.acked += r.check.acked
		sum.missing += r.check.missing
		sum.duplicated += r.check.duplicated
		sum.unacked += r.check.unacked
	}
	s := fmt.Sprintf("%s of %s", benchkit.Thousands(float64(sum.acked-sum.missing-sum.duplicated)), benchkit.Thousands(float64(sum.acked)))
	if !sum.ok() {
		s += fmt.Sprintf(" (%d missing, %d twice)", sum.missing, sum.duplicated)
	}
	if sum.unacked > 0 {
		s += fmt.Sprintf("; %d more not acknowledged", sum.unacked)
	}
	return s
}
