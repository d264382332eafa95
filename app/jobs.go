package app

// The modules' background jobs: each builder returns the job's run
// function for this server, or nil when the configuration turns it off
// (the Supervisor skips it). The module table in modules.go says which
// module each belongs to.

import (
	"context"
	"errors"
	"time"

	"github.com/cgp-platform/cgp/dataexport"
	"github.com/cgp-platform/cgp/intelligence"
	"github.com/cgp-platform/cgp/outbound"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
	"github.com/cgp-platform/cgp/replay"
)

// DefaultVersionPoll is how often cgp serve checks the live read-model
// version.
const DefaultVersionPoll = time.Second

// projectionsJob runs the projection runtime: every projector and reactor.
func projectionsJob(a *App) func(ctx context.Context) error { return a.Runtime.Run }

// tokenLastUseJob saves the tokens' last-use times and request counts.
func tokenLastUseJob(a *App) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		a.Auth.LastUsed.Run(ctx, a.LastUse, 5*time.Second, func(err error) {
			a.Logger.Warn().Err(err).Msg("saving token last-use times and request counts")
		})
		return nil
	}
}

// erasureFollowupsJob finishes the erasures' clean-ups (Erasures).
func erasureFollowupsJob(a *App) func(ctx context.Context) error { return a.erasures.FollowupsJob }

// retentionJob runs the retention countdown after app/uninstalled
// (Erasures).
func retentionJob(a *App) func(ctx context.Context) error { return a.erasures.RetentionJob }

// diScheduleJob is the daily decision-intelligence schedule
// (--di-daily-at; DISchedule); nil when off.
func diScheduleJob(a *App) func(ctx context.Context) error {
	at, on, err := intelligence.ParseDailyAt(a.Config.DIDailyAt)
	if err != nil || !on { // err: Config.Validate rejected it already
		return nil
	}
	now := a.Config.Test.DIClock
	if now == nil {
		now = time.Now
	}
	a.Logger.Info().Str("daily_at", a.Config.DIDailyAt).Msg("decision-intelligence schedule started")
	return DISchedule{Commands: a.Commands, DB: a.Store.DB(), Log: a.Log, WaitFor: a.Runtime.WaitFor, At: at, Now: now,
		Logger: a.Logger}.Job
}

// exportRequested wakes the exporter (never blocks).
func (a *App) exportRequested() {
	select {
	case a.exportWake <- struct{}{}:
	default:
	}
}

// dataExportsJob is the data-export job (Exporter); nil when no
// gdpr_requests projector is registered.
func dataExportsJob(a *App) func(ctx context.Context) error {
	if a.exportWake == nil {
		return nil
	}
	cfg := a.Config
	x := &Exporter{
		Log: a.Log, Codec: a.Codec, WaitFor: a.Runtime.WaitFor, Requests: gdprrequests.NewQueries(a.Store.DB()),
		Source: &dataexport.Source{Log: a.Log, Codec: a.Codec, DB: a.Store.DB()},
		Delivery: &dataexport.Delivery{
			Sender: &outbound.Sender{AllowPrivate: cfg.OutboundAllowPrivate, TLSConfig: cfg.Test.OutboundTLS, UserAgent: "cgp-data-export/1"},
			Mailer: &dataexport.Mailer{Addr: cfg.SMTPAddr, From: cfg.SMTPFrom, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword,
				TLSConfig: cfg.Test.ExportSMTPTLS},
		},
		Retry: cfg.Test.ExportRetry, Poll: cfg.Test.ExportPoll, Wake: a.exportWake, Now: time.Now,
		// Tagged here, not in Job: Job runs again after a lost lease.
		Logger: a.Logger.With().Str("job", "data_export").Logger(),
	}
	return x.Job
}

// readModelVersionsJob moves the server to the read-model version a
// replay made live, until ctx ends: the projections pause, the store
// switches files (queries go on, answered from the old file until then),
// caches drop, and projecting resumes from the new version's checkpoints.
func readModelVersionsJob(a *App) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		every := a.Config.Test.VersionPoll
		if every <= 0 {
			every = DefaultVersionPoll
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			a.followReadModelVersion(ctx)
		}
	}
}

// followReadModelVersion switches to the live read-model version when a
// replay changed it.
func (a *App) followReadModelVersion(ctx context.Context) {
	path, err := replay.Current(a.Config.DataDir)
	if err != nil {
		a.Logger.Warn().Err(err).Msg("reading the live read-model version")
		return
	}
	if path == a.Store.Path() {
		return
	}
	err = a.Runtime.Reload(ctx, func(ctx context.Context) error {
		old := a.Store.Path()
		if err := a.Store.Switch(ctx, path); err != nil {
			return err
		}
		// The new version has no outbox triggers yet. Its rows equal the
		// old version's (a replay is row-for-row equal), so the warehouse
		// holds them already.
		if err := a.migrateOutbox(ctx); err != nil {
			return errors.Join(err, a.Store.Switch(ctx, old))
		}
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			a.Logger.Error().Err(err).Str("version", path).Msg("switching to the replayed read models")
		}
		return
	}
	a.readModelsChanged()
	a.Logger.Info().Str("version", path).Msg("read models switched to the replayed version")
}
