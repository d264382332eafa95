// Package sidestore opens a side of the service that keeps a store of its
// own (sending.db, webhooks.db, notify.db) with a projection runtime of its
// own over it, hosting its reactor: a replay of the read models never
// touches it, and its transactions never wait on the read models' writer.
package sidestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// Config configures Open.
type Config struct {
	// Path is the store's SQLite file. Required.
	Path string
	// What names the side in errors ("the sending store").
	What string
	// Log is followed by the side's reactor. Required.
	Log    eventlog.Log
	Logger zerolog.Logger
	// Registry receives the runtime's metrics, prefixed with Prefix
	// ("cgp_sending_"). Optional.
	Registry prometheus.Registerer
	Prefix   string
}

// Side is an open store with its runtime.
type Side struct {
	Store   *rmsqlite.Store
	Runtime *projections.Runtime
}

// Open opens the store and a runtime over it that takes up to 256 events
// a transaction (those already waiting: the reactor shares the store's one
// writer with its dispatcher, so fewer and larger transactions leave it
// free more).
func Open(cfg Config) (*Side, error) {
	store, err := rmsqlite.Open(rmsqlite.Config{Path: cfg.Path, WriterCacheKiB: 16 * 1024})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.What, err)
	}
	reg := cfg.Registry
	if reg != nil && cfg.Prefix != "" {
		reg = prometheus.WrapRegistererWithPrefix(cfg.Prefix, reg)
	}
	rt, err := projections.New(projections.Config{Log: cfg.Log, Store: store, Logger: cfg.Logger, Registry: reg, Batch: 256})
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	return &Side{Store: store, Runtime: rt}, nil
}

// Register migrates the store for p and registers p on the runtime; on
// failure the side is closed.
func (s *Side) Register(ctx context.Context, p projections.Projector) error {
	err := s.Store.Migrate(ctx, p.Name, p.Migrations)
	if err == nil {
		err = s.Runtime.Register(p)
	}
	if err != nil {
		return errors.Join(err, s.Close())
	}
	return nil
}

// Close closes the runtime and the store.
func (s *Side) Close() error {
	return errors.Join(s.Runtime.Close(), s.Store.Close())
}
