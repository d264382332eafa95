package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", benchkit.Ms(d)) }

func rate(v float64) string { return benchkit.Thousands(v) + "/s" }

// line is one measurement on one line.
func line(mode string, r loadResult) string {
	var b strings.Builder
	if mode == "max" {
		fmt.Fprintf(&b, "%s acknowledged", rate(r.ackRate))
	} else {
		fmt.Fprintf(&b, "sent %s, acknowledged %s", rate(r.sendRate), rate(r.ackRate))
	}
	fmt.Fprintf(&b, ", ack p50 %s p90 %s p99 %s max %s, 2xx %s, non-2xx %d, no answer %d",
		ms(r.lat.P(50)), ms(r.lat.P(90)), ms(r.lat.P(99)), ms(r.lat.Max()), benchkit.Thousands(float64(r.ok)), r.non2xx, r.transport)
	if r.non2xx > 0 {
		fmt.Fprintf(&b, " %v", r.statuses)
	}
	fmt.Fprintf(&b, "; CPU cores: ")
	if r.serverCores > 0 {
		fmt.Fprintf(&b, "cgp %.2f, load generator %.2f", r.serverCores, r.benchCores)
	} else {
		fmt.Fprintf(&b, "load generator + bare receiver %.2f", r.benchCores)
	}
	if r.exhausted {
		b.WriteString(" (ran out of unique deliveries: raise -max-pool)")
	}
	return b.String()
}

// printSummary prints the medians over the runs as a Markdown table.
func printSummary(cfg config, runs []runResult) {
	med := func(f func(runResult) float64) float64 { return benchkit.MedianOf(runs, f) }
	dur := func(f func(runResult) time.Duration) string {
		return ms(time.Duration(med(func(r runResult) float64 { return float64(f(r)) })))
	}
	ratio := func(f func(runResult) float64) string { return fmt.Sprintf("%.2f", med(f)) }
	row := func(cells ...string) { fmt.Println("| " + strings.Join(cells, " | ") + " |") }

	fmt.Printf("\nSummary: medians of %d runs; orders/create, %d-byte signed bodies, to POST /webhooks/events on the embedded default; bare = in-process net/http handler that reads the body, verifies the HMAC and answers 200; ratios are per run, then the median.\n\n", cfg.runs, payloadSize)
	row("measurement", "cgp", "bare", "cgp / bare")
	row("---", "---", "---", "---")
	if cfg.does("rate") {
		fmt.Printf("| **open loop, %s offered for %v, %d connections** | | | |\n", rate(float64(cfg.rate)), cfg.duration, cfg.conns)
		row("acknowledged rate", rate(med(func(r runResult) float64 { return r.rateCGP.ackRate })), rate(med(func(r runResult) float64 { return r.rateBare.ackRate })), "")
		for _, q := range []float64{50, 90, 99} {
			row(fmt.Sprintf("ack p%.0f (from due time)", q),
				dur(func(r runResult) time.Duration { return r.rateCGP.lat.P(q) }), dur(func(r runResult) time.Duration { return r.rateBare.lat.P(q) }),
				ratio(func(r runResult) float64 { return float64(r.rateCGP.lat.P(q)) / float64(r.rateBare.lat.P(q)) }))
		}
		row("ack max", dur(func(r runResult) time.Duration { return r.rateCGP.lat.Max() }), dur(func(r runResult) time.Duration { return r.rateBare.lat.Max() }), "")
		row("CPU cores: server / this process", cores(runs, func(r runResult) loadResult { return r.rateCGP }), cores(runs, func(r runResult) loadResult { return r.rateBare }), "")
		row("non-2xx / no answer",
			fmt.Sprintf("%.0f / %.0f", med(func(r runResult) float64 { return float64(r.rateCGP.non2xx) }), med(func(r runResult) float64 { return float64(r.rateCGP.transport) })),
			fmt.Sprintf("%.0f / %.0f", med(func(r runResult) float64 { return float64(r.rateBare.non2xx) }), med(func(r runResult) float64 { return float64(r.rateBare.transport) })), "")
	}
	if cfg.does("max") {
		fmt.Printf("| **closed loop, %d workers, %v** | | | |\n", cfg.workers, cfg.duration)
		row("deliveries/s", rate(med(func(r runResult) float64 { return r.maxCGP.ackRate })), rate(med(func(r runResult) float64 { return r.maxBare.ackRate })),
			ratio(func(r runResult) float64 { return r.maxCGP.ackRate / r.maxBare.ackRate }))
		row("ack p50 / p99",
			dur(func(r runResult) time.Duration { return r.maxCGP.lat.P(50) })+" / "+dur(func(r runResult) time.Duration { return r.maxCGP.lat.P(99) }),
			dur(func(r runResult) time.Duration { return r.maxBare.lat.P(50) })+" / "+dur(func(r runResult) time.Duration { return r.maxBare.lat.P(99) }), "")
		row("CPU cores: server / this process", cores(runs, func(r runResult) loadResult { return r.maxCGP }), cores(runs, func(r runResult) loadResult { return r.maxBare }), "")
	}
	if cfg.does("rate") {
		fmt.Println()
		fmt.Println(verdict(cfg, runs))
	}
}

// cores renders the median CPU of a measurement: the server's and this
// process's (load generator; with the bare receiver in it for bare).
func cores(runs []runResult, of func(runResult) loadResult) string {
	srv := benchkit.MedianOf(runs, func(r runResult) float64 { return of(r).serverCores })
	self := benchkit.MedianOf(runs, func(r runResult) float64 { return of(r).benchCores })
	if srv == 0 {
		return fmt.Sprintf("– / %.2f", self)
	}
	return fmt.Sprintf("%.2f / %.2f", srv, self)
}

// verdict judges the median open-loop figures of cgp against the target.
func verdict(cfg config, runs []runResult) string {
	acked := benchkit.MedianOf(runs, func(r runResult) float64 { return r.rateCGP.ackRate })
	p99 := time.Duration(benchkit.MedianOf(runs, func(r runResult) float64 { return float64(r.rateCGP.lat.P(99)) }))
	failed := benchkit.MedianOf(runs, func(r runResult) float64 { return float64(r.rateCGP.non2xx + r.rateCGP.transport) })
	var misses []string
	if cfg.rate < targetRate {
		misses = append(misses, fmt.Sprintf("offered %s only", rate(float64(cfg.rate))))
	}
	if acked < 0.99*float64(cfg.rate) {
		misses = append(misses, fmt.Sprintf("acknowledged %s", rate(acked)))
	}
	if p99 >= targetP99 {
		misses = append(misses, fmt.Sprintf("p99 %s", ms(p99)))
	}
	if failed > 0 {
		misses = append(misses, fmt.Sprintf("%.0f deliveries not acknowledged", failed))
	}
	goal := fmt.Sprintf("Target: ≥ %s sustained with p99 acknowledgement < %v", rate(targetRate), targetP99)
	if len(misses) == 0 {
		return fmt.Sprintf("%s: met (%s acknowledged, p99 %s).", goal, rate(acked), ms(p99))
	}
	return fmt.Sprintf("%s: NOT met (%s).", goal, strings.Join(misses, ", "))
}

// printDups prints the duplicates scenario and its verdict.
func printDups(d dupResult) {
	fmt.Printf("\ndups: %s deliveries posted at once: %s unique, %s repeats of %s of them (up to %d copies of one)\n",
		benchkit.Thousands(float64(d.posts)), benchkit.Thousands(float64(d.unique)), benchkit.Thousands(float64(d.posts-d.unique)),
		benchkit.Thousands(float64(d.repeated)), d.maxCopies)
	fmt.Printf("dups: answers: 2xx %s of %s, non-2xx %d, no answer %d; ack p50 %s p99 %s max %s\n",
		benchkit.Thousands(float64(d.ok)), benchkit.Thousands(float64(d.posts)), d.non2xx, d.transport, ms(d.lat.P(50)), ms(d.lat.P(99)), ms(d.lat.Max()))
	fmt.Printf("dups: repeated deliveries with copies in flight together: %d of %d; all copies answered with one X-Event-Position: %d of %d\n",
		d.overlapping, d.repeated, d.samePosition, d.repeated)
	l := d.log
	fmt.Printf("dups: event log: events with a delivery's deterministic id: %s (types %s; stream categories %s); deliveries with exactly one: %s of %s, none: %d, more than one: %d\n",
		benchkit.Thousands(float64(l.once+l.multiple)), counts(l.types), counts(l.streams),
		benchkit.Thousands(float64(l.once)), benchkit.Thousands(float64(l.unique)), l.missing, l.multiple)
	onceMin, onceMax, repMin, repMax := d.actorRange()
	fmt.Printf("dups: events naming the delivery as actor, per delivery: sent once %d–%d, sent more often %d–%d; %d of them with another id than the delivery's\n",
		onceMin, onceMax, repMin, repMax, l.derived)
	if repMax > onceMax {
		fmt.Println("dups: warning: a repeated delivery has more events than any delivery sent once")
	}
	if d.pass() {
		fmt.Printf("dups: PASS: every post acknowledged, every unique delivery applied exactly once (%s of %s)\n",
			benchkit.Thousands(float64(l.once)), benchkit.Thousands(float64(l.unique)))
		return
	}
	fmt.Printf("dups: FAIL: %d of %d posts not acknowledged; %d deliveries missing from the log, %d recorded more than once\n",
		d.posts-d.ok, d.posts, l.missing, l.multiple)
}

// counts renders a tally as "a 3, b 1", largest first.
func counts(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %s", k, benchkit.Thousands(float64(m[k])))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
