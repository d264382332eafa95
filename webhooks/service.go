package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
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
	// Commands records the dispatcher's attempts, disablings and
	// warnings. Required.
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
// The fan-out runs on every server (RunFanout): it folds the deliveries
// and the attempts the dispatcher recorded in the log, so every server's
// store tells the same attempt log. The dispatcher runs on one server at
// a time (RunDispatcher).
type Service struct {
	log        eventlog.Log
	Store      *rmsqlite.Store
	Runtime    *projections.Runtime
	Dispatcher *Dispatcher
	Queries    *Queries

	// folded is closed after each transaction of the fan-out, then
	// replaced.
	mu     sync.Mutex
	folded chan struct{}
}

// Open opens the delivery store, migrates it and builds the fan-out and
// the dispatcher. Run starts them.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	side, err := sidestore.Open(sidestore.Config{Path: cfg.Path, What: "the webhook delivery store", Log: cfg.Log, Logger: cfg.Logger,
		Registry: cfg.Registry, Prefix: "cgp_webhooks_"})
	if err != nil {
		return nil, err
	}
	if cfg.Commands == nil {
		return nil, errors.Join(errors.New("webhooks: Config.Commands is required (the attempts are recorded in the log)"),
			side.Runtime.Close(), side.Store.Close())
	}
	store, rt := side.Store, side.Runtime
	dc := cfg.Dispatch
	dc.DB, dc.Codec, dc.Sender, dc.Commands, dc.Logger = store.DB(), cfg.Codec, cfg.Sender, cfg.Commands, cfg.Logger
	dc.Record = func(ctx context.Context, shop string, attempts []domain.WebhookAttempt) (uint64, error) {
		res, err := cfg.Commands.RecordWebhookAttempts(ctx, commands.RecordWebhookAttempts{ShopID: shop, Attempts: attempts},
			commands.Meta{Actor: Actor, Source: "system"})
		return res.Position, err
	}
	dc.Folded = func(ctx context.Context, pos uint64) error { return rt.WaitFor(ctx, pos, FanoutName) }
	s := &Service{log: cfg.Log, Store: store, Runtime: rt, Dispatcher: NewDispatcher(dc), Queries: &Queries{db: store.DB()},
		folded: make(chan struct{})}
	committed := func() {
		s.Dispatcher.Wake()
		s.mu.Lock()
		close(s.folded)
		s.folded = make(chan struct{})
		s.mu.Unlock()
	}
	if err := side.Register(ctx, fanoutProjector(cfg.Codec, committed, s.Dispatcher.SubscriptionsChanged)); err != nil {
		return nil, err
	}
	return s, nil
}

// RunFanout runs the fan-out, and purges the settled deliveries past the
// retention every hour, until ctx ends. Every server runs it: its store
// is its own.
func (s *Service) RunFanout(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Runtime.Run(ctx) })
	g.Go(func() error {
		tick := time.NewTicker(time.Hour)
		defer tick.Stop()
		for {
			s.purge(ctx)
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	})
	return g.Wait()
}

// RunDispatcher delivers until ctx ends, on the one server that holds
// the deliveries. It first waits until the fan-out (run by RunFanout)
// applied the log as it was at the start, so that every attempt another
// server recorded before it gave the deliveries up reads in the store and
// none is made again. It may be called again once it returned.
func (s *Service) RunDispatcher(ctx context.Context) error {
	head, err := s.log.HeadPosition(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("webhooks: log head: %w", err)
	}
	if err := s.WaitFor(ctx, head); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("webhooks: catch up: %w", err)
	}
	return s.Dispatcher.Run(ctx)
}

// purge drops settled deliveries older than the retention, their
// attempts and the bodies nothing refers to any more.
func (s *Service) purge(ctx context.Context) {
	cfg := s.Dispatcher.cfg
	cut := cfg.Now().Add(-cfg.Retention).UnixMilli()
	err := s.Store.Maintain(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM wh_attempts WHERE delivery_id IN (SELECT id FROM wh_deliveries WHERE created_at < ? AND state != 'pending')`,
			`DELETE FROM wh_deliveries WHERE created_at < ? AND state != 'pending'`,
		} {
			if _, err := tx.ExecContext(ctx, q, cut); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM wh_payloads WHERE event_id IN (SELECT p.event_id FROM wh_payloads p
		WHERE NOT EXISTS (SELECT 1 FROM wh_deliveries d WHERE d.event_id = p.event_id) LIMIT 10000)`)
		return err
	})
	if err != nil && ctx.Err() == nil {
		cfg.Logger.Warn().Err(err).Msg("purging old webhook deliveries")
	}
}

// WaitFor waits until the fan-out has applied the log up to pos.
func (s *Service) WaitFor(ctx context.Context, pos eventlog.Position, _ ...string) error {
	return s.Runtime.WaitFor(ctx, pos, FanoutName)
}

// Close closes the fan-out's runtime and the store.
func (s *Service) Close() error {
	return errors.Join(s.Runtime.Close(), s.Store.Close())
}

// WaitAttempted waits until ok holds, checking after each transaction of
// the fan-out (which folds the attempts recorded by whichever server
// delivers), at most until ctx ends.
func (s *Service) WaitAttempted(ctx context.Context, ok func() (bool, error)) error {
	for {
		s.mu.Lock()
		folded := s.folded
		s.mu.Unlock()
		done, err := ok()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-folded:
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
