// Command cgp is the commerce-growth platform service: one binary for the
// server (cgp serve) and the operator's commands. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// defaultGCPercent is the garbage collector's target unless GOGC is set:
// the service's live heap is small (tens of MB) and allocation-heavy per
// request, so trading some memory for half the collections pays (see
// docs/performance.md).
const defaultGCPercent = 200

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
