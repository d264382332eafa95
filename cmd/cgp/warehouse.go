package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	vclickhouse "github.com/cgp-platform/cgp/readmodel/versioned/clickhouse"
	"github.com/cgp-platform/cgp/readmodel/versioned/outbox"
	vsqlite "github.com/cgp-platform/cgp/readmodel/versioned/sqlite"
)

// Warehouse adapters (--warehouse).
const (
	warehouseNone       = "none"
	warehouseSQLite     = "sqlite"
	warehouseClickHouse = "clickhouse"
)

// openWarehouse opens the warehouse the read models are shipped to: nil
// with --warehouse none.
func openWarehouse(ctx context.Context, cfg Config, onErr func(error)) (versioned.Store, error) {
	switch cfg.Warehouse {
	case warehouseSQLite:
		st, err := vsqlite.Open(vsqlite.Config{Path: cfg.path("warehouse.db"), OnError: onErr})
		if err != nil {
			return nil, fmt.Errorf("warehouse: %w", err)
		}
		return st, nil
	case warehouseClickHouse:
		st, err := vclickhouse.Open(ctx, vclickhouse.Config{URL: cfg.WarehouseURL, OnError: onErr})
		if err != nil {
			return nil, fmt.Errorf("warehouse: %w", err) // the adapter never repeats the URL (it holds a password)
		}
		return st, nil
	default:
		return nil, nil
	}
}

// migrateOutbox installs, in the live read models, the triggers that record
// every change of the shipped tables (customers, attribution, touchpoints)
// in the outbox. It runs after the projectors' migrations, whose tables the
// triggers name, and again on each read-model version a replay switches to.
func (a *App) migrateOutbox(ctx context.Context) error {
	if a.Warehouse == nil {
		return nil
	}
	migs, err := outbox.Migrations(outbox.DefaultSources())
	if err != nil {
		return err
	}
	if err := a.Store.Migrate(ctx, outbox.Projector, migs); err != nil {
		return fmt.Errorf("warehouse outbox: %w", err)
	}
	return nil
}

// runWarehouse ships the outbox to the warehouse until ctx ends; it is nil
// with --warehouse none.
func (a *App) runWarehouse() func(ctx context.Context) error {
	if a.Warehouse == nil {
		return nil
	}
	return func(ctx context.Context) error {
		sh, err := outbox.New(ctx, outbox.Config{ReadModels: a.Store, Warehouse: a.Warehouse, Sources: outbox.DefaultSources(),
			Interval: time.Second})
		if err != nil {
			return fmt.Errorf("warehouse shipper: %w", err)
		}
		_ = sh.Run(ctx, func(err error) { a.Logger.Warn().Err(err).Msg("shipping read models to the warehouse") })
		return nil
	}
}

// chWarehouse adapts the ClickHouse warehouse to attribution.Warehouse.
type chWarehouse struct{ s *vclickhouse.Store }

func (w chWarehouse) Query(ctx context.Context, query string, args ...any) (attribution.WarehouseRows, error) {
	return w.s.Query(ctx, query, args...)
}

// warehouseSummary answers the attribution summary from ClickHouse and,
// when ClickHouse fails, from the read model (logged), so the endpoint
// answers whenever the read model can.
type warehouseSummary struct {
	primary  attribution.WarehouseSummary
	fallback readapi.AttributionSummarizer
	log      zerolog.Logger
}

func (w warehouseSummary) Summary(ctx context.Context, shop, model, groupBy string, from, before time.Time) ([]attribution.SummaryRow, error) {
	rows, err := w.primary.Summary(ctx, shop, model, groupBy, from, before)
	if err == nil || domain.ErrorCode(err) == domain.CodeInvalid || ctx.Err() != nil {
		return rows, err
	}
	w.log.Warn().Err(err).Msg("attribution summary from the warehouse failed; answered from the read model")
	return w.fallback.Summary(ctx, shop, model, groupBy, from, before)
}

// attributionSummary is where the attribution summary is computed: the
// ClickHouse warehouse when the server ships to one, else the read model.
func (a *App) attributionSummary(q *attribution.Queries) readapi.AttributionSummarizer {
	if ch, ok := a.Warehouse.(*vclickhouse.Store); ok {
		return warehouseSummary{primary: attribution.WarehouseSummary{W: chWarehouse{ch}}, fallback: q, log: a.Logger}
	}
	return q
}
