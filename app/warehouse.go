package app

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/readmodel/versioned/outbox"
)

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

// warehouseJob ships the outbox to the warehouse until ctx ends; it is nil
// with --warehouse none.
func warehouseJob(a *App) func(ctx context.Context) error {
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

// WarehouseFallback answers the attribution summary from the warehouse
// and, when the warehouse fails, from the read model (logged), so the
// endpoint answers whenever the read model can.
type WarehouseFallback struct {
	Primary  attribution.WarehouseSummary
	Fallback readapi.AttributionSummarizer
	Log      zerolog.Logger
}

// Summary answers from Primary, else from Fallback.
func (w WarehouseFallback) Summary(ctx context.Context, shop, model, groupBy string, from, before time.Time) ([]attribution.SummaryRow, error) {
	rows, err := w.Primary.Summary(ctx, shop, model, groupBy, from, before)
	if err == nil || domain.ErrorCode(err) == domain.CodeInvalid || ctx.Err() != nil {
		return rows, err
	}
	w.Log.Warn().Err(err).Msg("attribution summary from the warehouse failed; answered from the read model")
	return w.Fallback.Summary(ctx, shop, model, groupBy, from, before)
}

// attributionSummary is where the attribution summary is computed: the
// warehouse when the server ships to one that answers SQL (ClickHouse),
// else the read model.
func (a *App) attributionSummary(q *attribution.Queries) readapi.AttributionSummarizer {
	if a.Warehouse == nil || a.Adapters.WarehouseQueries == nil {
		return q
	}
	if w, ok := a.Adapters.WarehouseQueries(a.Warehouse); ok {
		return WarehouseFallback{Primary: attribution.WarehouseSummary{W: w}, Fallback: q, Log: a.Logger}
	}
	return q
}
