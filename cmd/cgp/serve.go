package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/httpapi"
)

// Core is the write side every command opens (app.Core).
type Core = app.Core

// OpenCore opens the core with the adapters the configuration chose.
func OpenCore(ctx context.Context, cfg Config, logger zerolog.Logger) (*Core, error) {
	return app.OpenCore(ctx, cfg, logger, adapters)
}

func newServeCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "serve", Short: "Run the HTTP service", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), *cfg, stdout, stderr, nil)
		}}
	bindServe(cfg, cmd.Flags())
	return cmd
}

// serve runs the server until ctx ends. ready, when set, receives the
// listening address once the server accepts connections.
func serve(ctx context.Context, cfg Config, stdout, stderr io.Writer, ready func(addr string)) error {
	logger := newLogger(&cfg, stderr)
	core, err := OpenCore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	raw, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("listen: %w", err), core.Close())
	}
	// One socket for the whole life of the process: while a first start
	// builds the read models, a starting server answers 503 on it.
	handoff := httpapi.NewHandoff(raw)
	if cfg.Test.Listening != nil {
		cfg.Test.Listening(raw.Addr().String())
	}
	if err := app.BuildAtFirstStart(ctx, cfg, core, handoff); err != nil {
		return errors.Join(err, handoff.Close(), core.Close())
	}
	a, err := app.OpenApp(ctx, cfg, core)
	if err != nil {
		return errors.Join(err, handoff.Close(), core.Close())
	}
	ln := handoff.View(true)
	if cfg.Demo {
		if err := app.CreateDemo(ctx, a, ln.Addr().String(), stdout); err != nil {
			return errors.Join(err, ln.Close(), a.Close())
		}
	}
	if cfg.DebugAddr != "" {
		stopDebug, err := serveDebug(cfg.DebugAddr, logger)
		if err != nil {
			return errors.Join(err, ln.Close(), a.Close())
		}
		defer stopDebug()
	}
	logger.Info().Str("addr", ln.Addr().String()).Str("event_log", cfg.EventLog).Str("vault", cfg.Vault).Msg("serving")
	if ready != nil {
		ready(ln.Addr().String())
	}
	err = a.Serve(ctx, ln, cfg.ShutdownGrace)
	return errors.Join(err, a.Close())
}
