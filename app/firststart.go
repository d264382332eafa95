package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/replay"
)

// DefaultInitialBuildEvents is the default of Config.InitialBuildEvents:
// below it the projections fold the log live in less time than a build
// takes to set up.
const DefaultInitialBuildEvents = 100_000

// BuildAtFirstStart builds the read models of a first start when needed
// (NeedsInitialBuild, BuildReadModels) while a starting server answers on
// the process's socket: /healthz 200, everything else 503 with
// Retry-After (httpapi.Starting). It returns once the build is over and
// the starting server has stopped; the service then serves on another
// view of the same socket.
func BuildAtFirstStart(ctx context.Context, cfg Config, core *Core, handoff *httpapi.Handoff) error {
	if need, err := NeedsInitialBuild(ctx, cfg, core); err != nil || !need {
		return err
	}
	srv, err := httpapi.NewServer(httpapi.ServerConfig{Listener: handoff.View(false),
		Handler: httpapi.Starting("building the read models from the event log"), Logger: core.Logger, ShutdownGrace: cfg.ShutdownGrace})
	if err != nil {
		return err
	}
	stop, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Run(stop) }()
	err = BuildReadModels(ctx, cfg, core, LogProgress(core.Logger, 10*time.Second))
	cancel()
	return errors.Join(err, <-served)
}

// NeedsInitialBuild says whether a server starting on this data directory
// builds its read models before serving (BuildReadModels): it has no
// read-model version yet (a first start, or a data directory whose
// versions were removed) and its log holds at least cfg.InitialBuildEvents
// events.
func NeedsInitialBuild(ctx context.Context, cfg Config, core *Core) (bool, error) {
	if cfg.InitialBuildEvents <= 0 {
		return false, nil
	}
	path, err := cfg.ReadModelPath()
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return false, err // a version exists (or cannot be checked)
	}
	head, err := core.Log.HeadPosition(ctx)
	if err != nil {
		return false, fmt.Errorf("event log head: %w", err)
	}
	return int64(head) >= cfg.InitialBuildEvents, nil
}

// BuildReadModels builds the read models of a first start the way `cgp
// replay` does (every projector in a lane of its own, indexes created at
// the end, large transactions), several times faster than the live
// projections folding the same events ProjectionBatch at a time, and
// switches the data directory to them. Interrupted, the next start
// resumes it (the version is switched to only once built). No reactor
// runs during the build; they start from their beginning once the server
// serves, as they would without it. progress may be nil.
func BuildReadModels(ctx context.Context, cfg Config, core *Core, progress replay.Progress) error {
	core.Logger.Info().Msg("first start: building the read models from the event log")
	if cfg.Test.InitialBuildStarted != nil {
		cfg.Test.InitialBuildStarted()
	}
	a := &App{Core: core}
	res, err := replay.Run(ctx, replay.Config{Dir: cfg.DataDir, Log: core.Log, Projectors: a.AllProjectors(func() {}),
		Reactors: a.AllReactors(), Progress: progress, Logger: core.Logger})
	if err != nil {
		return fmt.Errorf("first start: build the read models: %w", err)
	}
	core.Logger.Info().Str("version", res.Version).Msg("first start: read models built")
	return nil
}

// LogProgress reports a build's progress as log lines (events done and
// known, every interval, and once at the end).
func LogProgress(logger zerolog.Logger, every time.Duration) replay.Progress {
	return replay.NewReports(every, func(s replay.Status) {
		msg := "building read models"
		if s.Final {
			msg = "read models built"
		}
		logger.Info().Uint64("events_done", s.Done).Uint64("events_total", s.Total).Float64("events_per_second", s.Rate).
			Str("time_left", s.Left).Msg(msg)
	})
}
