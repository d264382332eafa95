package notify

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/sidestore"
)

// Config configures the notifier (Open).
type Config struct {
	// Path is the notifier's SQLite file (notify.db in the data
	// directory). Required.
	Path     string
	Log      eventlog.Log
	Codec    *envelope.Codec
	Commands *commands.Handler
	Logger   zerolog.Logger
	// Registry receives the reactor's metrics (prefixed cgp_notify_).
	Registry prometheus.Registerer
	// Dispatch tunes the dispatcher: its DB, Write, Commands and Logger
	// are filled by Open.
	Dispatch DispatcherConfig
}

// Service is the notifier: its store, its reactor's runtime and the
// dispatcher.
type Service struct {
	*sidestore.Side
	Dispatcher *Dispatcher
	log        eventlog.Log
}

// Open opens the notifier's store and builds its reactor and dispatcher;
// Run starts them.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	side, err := sidestore.Open(sidestore.Config{Path: cfg.Path, What: "the notification store", Log: cfg.Log, Logger: cfg.Logger,
		Registry: cfg.Registry, Prefix: "cgp_notify_"})
	if err != nil {
		return nil, err
	}
	dc := cfg.Dispatch
	dc.DB, dc.Write, dc.Commands, dc.Logger = side.Store.DB(), side.Store.Maintain, cfg.Commands, cfg.Logger
	s := &Service{Side: side, Dispatcher: NewDispatcher(dc), log: cfg.Log}
	p := outboxProjector(cfg.Codec, s.Dispatcher.cfg.Now, s.Dispatcher.Wake, dc.OperatorEmail != "")
	if err := side.Register(ctx, p); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the reactor and, once it caught up with the log as it was at
// the start (so that every send recorded before, by this server or by the
// one that ran the notifier before it, is marked), the dispatcher, until
// ctx ends. It may be called again once it returned.
func (s *Service) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Runtime.Run(ctx) })
	g.Go(func() error {
		head, err := s.log.HeadPosition(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("notify: log head: %w", err)
		}
		if err := s.Runtime.WaitFor(ctx, head, OutboxName); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("notify: catch up: %w", err)
		}
		return s.Dispatcher.Run(ctx)
	})
	return g.Wait()
}

// WaitFor waits until the reactor has applied the log up to pos.
func (s *Service) WaitFor(ctx context.Context, pos eventlog.Position) error {
	return s.Runtime.WaitFor(ctx, pos, OutboxName)
}
