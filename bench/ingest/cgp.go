package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// The benchmark's shop.
const (
	shopDomain = "ingest-bench.example.com"
	secret     = "ingest-bench-secret-0123456789abcdef"
	// probeBase numbers the orders of the probe deliveries, far from the
	// benchmark's own.
	probeBase = 1 << 30
)

// instance is cgp serve on a fresh data directory holding one shop.
type instance struct {
	dir    string
	tenant benchkit.Tenant
	srv    *benchkit.Server
}

// startCGP creates a data directory, an account and a shop with the CLI,
// starts the server and waits until its receiver knows the shop (a probe
// delivery is acknowledged).
func startCGP(cfg config, gen generator) (_ *instance, err error) {
	in := &instance{}
	if in.dir, err = os.MkdirTemp("", "cgp-ingest-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	if in.tenant, err = benchkit.NewTenant(cfg.bin, in.dir, "Ingest bench", shopDomain, secret, "agency"); err != nil {
		return nil, err
	}
	var args []string
	if cfg.debugAddr != "" {
		args = append(args, "--debug-addr", cfg.debugAddr)
	}
	if in.srv, err = benchkit.Start(cfg.bin, in.dir, args...); err != nil {
		return nil, err
	}
	c := benchkit.Client(1, 5*time.Second)
	defer c.CloseIdleConnections()
	probe := probeBase
	err = benchkit.WaitFor(15*time.Second, "the receiver knows the shop", func() bool {
		probe++
		return post(context.Background(), c, in.target(), gen.delivery(probe)) == 200
	})
	return in, err
}

func (in *instance) target() target {
	return target{url: in.srv.Base + benchkit.EventsPath, domain: in.tenant.Domain}
}

// eventsDB is the embedded event log's file.
func (in *instance) eventsDB() string { return filepath.Join(in.dir, "events.db") }

// stop stops the server (it drains and flushes the log) and warns of the
// error lines it logged; the data directory stays until close.
func (in *instance) stop() error {
	if in.srv == nil {
		return nil
	}
	srv := in.srv
	in.srv = nil
	err := srv.Stop()
	if n := srv.ErrorLines.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "ingest: warning: the server logged %d error lines\n", n)
	}
	return err
}

// close stops the server and removes the data directory.
func (in *instance) close() error {
	return errors.Join(in.stop(), os.RemoveAll(in.dir))
}
