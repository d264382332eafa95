package main

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/intelligence"
)

// runDISchedule is the daily decision-intelligence schedule
// (--di-daily-at; app.DISchedule); nil when off.
func (a *App) runDISchedule() func(ctx context.Context) error {
	at, on, err := intelligence.ParseDailyAt(a.Config.DIDailyAt)
	if err != nil || !on { // err: Config.Validate rejected it already
		return nil
	}
	now := a.Config.diClock
	if now == nil {
		now = time.Now
	}
	a.Logger.Info().Str("daily_at", a.Config.DIDailyAt).Msg("decision-intelligence schedule started")
	return app.DISchedule{Commands: a.Commands, DB: a.Store.DB(), Log: a.Log, WaitFor: a.Runtime.WaitFor, At: at, Now: now,
		Logger: a.Logger}.Job
}
