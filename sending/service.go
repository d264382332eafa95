package sending

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/sidestore"
	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// Config configures the sending side (Open).
type Config struct {
	// Path is the sending store's SQLite file (sending.db in the data
	// directory). Required.
	Path string
	// Log is followed by the outbox reactor. Required.
	Log      eventlog.Log
	Codec    *envelope.Codec
	Commands *commands.Handler
	Logger   zerolog.Logger
	// Registry receives the outbox's projection metrics (prefixed
	// cgp_sending_). Optional.
	Registry prometheus.Registerer
	// Dispatch tunes the dispatcher: its DB, Write, Commands and Logger
	// are filled by Open; Directory and Channels are the caller's.
	Dispatch DispatcherConfig
}

// Service is the sending side: its store, the outbox reactor (a
// projection runtime of its own over that store) and the dispatcher.
type Service struct {
	log        eventlog.Log
	Store      *rmsqlite.Store
	Runtime    *projections.Runtime
	Dispatcher *Dispatcher
}

// Open opens the sending store, migrates it and builds the outbox reactor
// and the dispatcher. Run starts them.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	side, err := sidestore.Open(sidestore.Config{Path: cfg.Path, What: "the sending store", Log: cfg.Log, Logger: cfg.Logger,
		Registry: cfg.Registry, Prefix: "cgp_sending_"})
	if err != nil {
		return nil, err
	}
	store, rt := side.Store, side.Runtime
	dc := cfg.Dispatch
	dc.DB, dc.Commands, dc.Logger, dc.Write = store.DB(), cfg.Commands, cfg.Logger, store.Maintain
	dc.Head = cfg.Log.HeadPosition
	dc.Applied = func() uint64 { return rt.Checkpoints()[OutboxName] }
	dc.Trigger = func(ctx context.Context, pos uint64) (domain.Event, error) {
		return decodeAt(ctx, cfg.Log, cfg.Codec, pos)
	}
	s := &Service{log: cfg.Log, Store: store, Runtime: rt, Dispatcher: NewDispatcher(dc)}
	now := func() int64 { return s.Dispatcher.cfg.Now().UnixMicro() }
	if err := side.Register(ctx, outboxProjector(cfg.Codec, now, s.Dispatcher.Wake)); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the outbox reactor and, once it caught up with the log as it
// was at the start (so that every outcome recorded before a crash is
// marked), the dispatcher, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Runtime.Run(ctx) })
	g.Go(func() error {
		head, err := s.log.HeadPosition(ctx)
		if err != nil {
			return fmt.Errorf("sending: log head: %w", err)
		}
		if err := s.Runtime.WaitFor(ctx, head, OutboxName); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sending: catch up: %w", err)
		}
		return s.Dispatcher.Run(ctx)
	})
	return g.Wait()
}

// WaitFor waits until the outbox reactor has applied the log up to pos.
func (s *Service) WaitFor(ctx context.Context, pos eventlog.Position, _ ...string) error {
	return s.Runtime.WaitFor(ctx, pos, OutboxName)
}

// decodeAt decodes the event at pos.
func decodeAt(ctx context.Context, log eventlog.Log, codec *envelope.Codec, pos uint64) (domain.Event, error) {
	evs, err := log.ReadAll(ctx, pos-1, 1)
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", pos, err)
	}
	if len(evs) == 0 || evs[0].Position != pos {
		return nil, fmt.Errorf("read event %d: not in the log", pos)
	}
	d, err := codec.Decode(ctx, &evs[0])
	if err != nil {
		return nil, err
	}
	return d.Event, nil
}

// Close closes the reactor's runtime and the store.
func (s *Service) Close() error {
	return errors.Join(s.Runtime.Close(), s.Store.Close())
}

// WaitRecorded waits until ok holds, checking after each batch of
// recorded sends, at most until ctx ends.
func (s *Service) WaitRecorded(ctx context.Context, ok func() (bool, error)) error {
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
