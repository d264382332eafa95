package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/sidestore"
	"github.com/cgp-platform/cgp/outbound"
	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// Config configures the delivery side (Open).
type Config struct {
	// Path is the delivery store's SQLite file (webhooks.db in the data
	// directory). Required.
	Path string
	// Log is followed by the fan-out reactor. Required.
	Log   eventlog.Log
	Codec *envelope.Codec
	// Commands records the dispatcher's disablings and warnings.
	Commands *commands.Handler
	Logger   zerolog.Logger
	// Registry receives the fan-out's projection metrics (prefixed
	// cgp_webhooks_). Optional.
	Registry prometheus.Registerer
	// Sender posts the deliveries (its AllowPrivate and TLSConfig are the
	// operator's).
	Sender *outbound.Sender
	// Dispatch tunes the dispatcher: its DB, Write, Codec, Sender,
	// Commands and Logger are filled by Open.
	Dispatch DispatcherConfig
}

// Service is the delivery side of the outbound webhooks: its store, the
// fan-out reactor (a projection runtime of its own over that store, so a
// replay of the read models never touches deliveries) and the dispatcher.
type Service struct {
	log        eventlog.Log
	Store      *rmsqlite.Store
	Runtime    *projections.Runtime
	Dispatcher *Dispatcher
	Queries    *Queries
}

// Open opens the delivery store, migrates it and builds the fan-out and
// the dispatcher. Run starts them.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	side, err := sidestore.Open(sidestore.Config{Path: cfg.Path, What: "the webhook delivery store", Log: cfg.Log, Logger: cfg.Logger,
		Registry: cfg.Registry, Prefix: "cgp_webhooks_"})
	if err != nil {
		return nil, err
	}
	store, rt := side.Store, side.Runtime
	dc := cfg.Dispatch
	dc.DB, dc.Codec, dc.Sender, dc.Commands, dc.Logger = store.DB(), cfg.Codec, cfg.Sender, cfg.Commands, cfg.Logger
	dc.Write = store.Maintain
	s := &Service{log: cfg.Log, Store: store, Runtime: rt, Dispatcher: NewDispatcher(dc), Queries: &Queries{db: store.DB()}}
	if err := side.Register(ctx, fanoutProjector(cfg.Codec, s.Dispatcher.Wake, s.Dispatcher.SubscriptionsChanged)); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the fan-out and the dispatcher until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Runtime.Run(ctx) })
	g.Go(func() error { return s.Dispatcher.Run(ctx) })
	return g.Wait()
}

// WaitFor waits until the fan-out has applied the log up to pos.
func (s *Service) WaitFor(ctx context.Context, pos eventlog.Position, _ ...string) error {
	return s.Runtime.WaitFor(ctx, pos, FanoutName)
}

// Close closes the fan-out's runtime and the store.
func (s *Service) Close() error {
	return errors.Join(s.Runtime.Close(), s.Store.Close())
}

// WaitAttempted waits until ok holds, checking after each batch of
// recorded attempts, at most until ctx ends.
func (s *Service) WaitAttempted(ctx context.Context, ok func() (bool, error)) error {
	for {
		done, err := ok()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.Dispatcher.recorded():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// MaxCatchUp bounds how long Knows waits for the fan-out to catch up.
const MaxCatchUp = 10 * time.Second

// Knows reports whether subscription id of shop is known to the delivery
// side; when it is not yet, it waits (at most MaxCatchUp) for the fan-out
// to reach the log's head and looks again, so that a subscription just
// created is found.
func (s *Service) Knows(ctx context.Context, shop, id string) (bool, error) {
	ok, err := s.Queries.HasSubscription(ctx, shop, id)
	if err != nil || ok {
		return ok, err
	}
	head, err := s.log.HeadPosition(ctx)
	if err != nil {
		return false, fmt.Errorf("log head: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, MaxCatchUp)
	defer cancel()
	if err := s.WaitFor(wctx, head); err != nil && ctx.Err() != nil {
		return false, ctx.Err()
	}
	return s.Queries.HasSubscription(ctx, shop, id)
}
