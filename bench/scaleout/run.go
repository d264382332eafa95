package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// serveArgs are added to every server's command line. The per-token rate
// limit is lifted as in bench/webhooks: rate limiting is not what this
// measures.
var serveArgs = []string{"--rate-limit-agency", "1000000"}

// result is one run of one configuration.
type result struct {
	servers     int
	load        phase    // the measured closed loop
	check       logCheck // every acknowledgement of the run, warm-up and probes included
	serverCores float64  // CPU of the servers together during the measurement, in cores
	machineBusy float64  // CPU of the whole machine during the measurement, in cores
	errorLines  int64    // error lines the servers logged
}

// run measures one configuration: n servers over fresh shared stores, the
// load split between them in turn.
func run(ctx context.Context, cfg config, n int) (res result, err error) {
	res.servers = n
	st, err := newStores(cfg.pgURL, cfg.redisURL, cfg.masterKey)
	if err != nil {
		return res, err
	}
	if err := st.export(); err != nil {
		return res, err
	}
	// Deferred first, so it runs after the servers have stopped.
	defer func() { err = errors.Join(err, st.drop()) }()

	// The CLI gets a data directory of its own; the stores are shared.
	cliDir, err := os.MkdirTemp("", "cgp-scaleout-cli-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(cliDir)
	tag := st.logSchema[len("cgp_bench_log_"):]
	tenant, err := benchkit.NewTenant(cfg.bin, cliDir, "Scale-out bench", "scale-"+tag+".example.com",
		"scale-bench-secret-0123456789abcdef", "agency")
	if err != nil {
		return res, err
	}

	var servers []*benchkit.Server
	var dirs []string
	// The servers stop (they drain and flush) before their directories go.
	defer func() {
		for _, srv := range servers {
			err = errors.Join(err, srv.Stop())
			res.errorLines += srv.ErrorLines.Load()
		}
		for _, dir := range dirs {
			err = errors.Join(err, os.RemoveAll(dir))
		}
	}()
	s := &sender{client: benchkit.Client(0, 30*time.Second), tenant: tenant, tag: tag}
	defer s.client.CloseIdleConnections()
	var probes []string
	for range n {
		dir, err := os.MkdirTemp("", "cgp-scaleout-")
		if err != nil {
			return res, err
		}
		dirs = append(dirs, dir)
		srv, err := benchkit.Start(cfg.bin, dir, serveArgs...)
		if err != nil {
			return res, err
		}
		servers = append(servers, srv)
		// The receiver answers once the server's read model knows the
		// shop: probe it alone until a delivery is acknowledged.
		probe := &sender{client: s.client, urls: []string{srv.Base + benchkit.EventsPath}, tenant: tenant, tag: tag}
		probe.next.Store(int64(1e9 + 1e6*len(servers)))
		err = benchkit.WaitFor(30*time.Second, "the receiver knows the shop", func() bool {
			status, _, stream := probe.post(ctx)
			if status >= 200 && status < 300 {
				probes = append(probes, stream)
				return true
			}
			return false
		})
		if err != nil {
			return res, err
		}
		s.urls = append(s.urls, srv.Base+benchkit.EventsPath)
	}

	warm := closedLoop(ctx, s, cfg.senders, cfg.warmup)
	before, err := cpuOf(servers)
	if err != nil {
		return res, err
	}
	busy0, total0, err := machineTicks()
	if err != nil {
		return res, err
	}
	res.load = closedLoop(ctx, s, cfg.senders, cfg.duration)
	after, err := cpuOf(servers)
	if err != nil {
		return res, err
	}
	busy1, total1, err := machineTicks()
	if err != nil {
		return res, err
	}
	res.serverCores = (after - before).Seconds() / res.load.elapsed.Seconds()
	if total1 > total0 {
		res.machineBusy = float64(busy1-busy0) / float64(total1-total0) * float64(runtime.NumCPU())
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}

	// Acknowledged means appended: the log is read at once, servers running.
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	counts, err := st.createdPerStream(readCtx)
	if err != nil {
		return res, err
	}
	acked := append(append(probes, warm.streams...), res.load.streams...)
	res.check = checkLog(acked, counts)
	return res, nil
}

// cpuOf returns the CPU time the servers have used together.
func cpuOf(servers []*benchkit.Server) (time.Duration, error) {
	var sum time.Duration
	for _, srv := range servers {
		d, err := benchkit.ProcessCPU(srv.Pid())
		if err != nil {
			return 0, fmt.Errorf("server %d: %w", srv.Pid(), err)
		}
		sum += d
	}
	return sum, nil
}
