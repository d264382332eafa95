package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/intelligence"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	intelrm "github.com/cgp-platform/cgp/projections/intelligence"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// diCatchUpTimeout bounds a schedule pass's wait for the read models to
// reach the log's head; a pass that times out is retried at the next tick.
const diCatchUpTimeout = 5 * time.Minute

// diInputs are the projectors a decision run and the shop list read.
var diInputs = []string{tenancy.Name, customers.Name, commerce.Name, intelrm.Name, campaigns.Name, messaging.Name}

// newRunner returns a decision-intelligence runner over the read models
// of db, recording through the core's command handler.
func newRunner(c *Core, db *sql.DB) *intelligence.Runner {
	return &intelligence.Runner{Commands: c.Commands, Customers: customers.NewQueries(db), Commerce: commerce.NewQueries(db),
		Intelligence: intelrm.NewQueries(db), Campaigns: campaigns.NewQueries(db), Templates: templateStateReader{messaging.NewQueries(db)},
		Journeys: journeys.NewQueries(db)}
}

// newDIScheduler returns the daily schedule of the server: every shop whose
// app is installed (tenancy read model) runs once a day at `at` (UTC), each
// pass after the read models caught up with the log.
func newDIScheduler(a *App, at time.Duration) *intelligence.Scheduler {
	return &intelligence.Scheduler{
		Runner: newRunner(a.Core, a.Store.DB()),
		Shops:  a.Tenancy,
		At:     at,
		CatchUp: func(ctx context.Context) error {
			head, err := a.Log.HeadPosition(ctx)
			if err != nil {
				return fmt.Errorf("log head: %w", err)
			}
			ctx, cancel := context.WithTimeout(ctx, diCatchUpTimeout)
			defer cancel()
			return a.Runtime.WaitFor(ctx, head, diInputs...)
		},
		Logger: a.Logger.With().Str("job", "di_schedule").Logger(),
	}
}

// startDISchedule starts the daily decision-intelligence schedule
// (--di-daily-at; nothing when off) until ctx ends: a pass at once, the
// catch-up after downtime, then one a minute. The channel is closed once
// it has stopped. It is nil when the schedule is off.
func (a *App) runDISchedule() func(ctx context.Context) error {
	at, on, err := intelligence.ParseDailyAt(a.Config.DIDailyAt)
	if err != nil || !on { // err: Config.Validate rejected it already
		return nil
	}
	now := a.Config.diClock
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context) error {
		s := newDIScheduler(a, at)
		a.Logger.Info().Str("daily_at", a.Config.DIDailyAt).Msg("decision-intelligence schedule started")
		s.Loop(ctx, now, intelligence.DefaultTick)
		return nil
	}
}
