package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
	"github.com/cgp-platform/cgp/replay"
)

// defaultVersionPoll is how often cgp serve checks the live read-model
// version.
const defaultVersionPoll = time.Second

// followReadModelVersions moves the server to the read-model version a
// replay made live, until ctx ends: the projections pause, the store
// switches files (queries go on, answered from the old file until then),
// caches drop, and projecting resumes from the new version's checkpoints.
// It returns when ctx ends.
func (a *App) followReadModelVersions(ctx context.Context) error {
	every := a.versionPoll
	if every <= 0 {
		every = defaultVersionPoll
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		path, err := replay.Current(a.dataDir)
		if err != nil {
			a.Logger.Warn().Err(err).Msg("reading the live read-model version")
			continue
		}
		if path == a.Store.Path() {
			continue
		}
		err = a.Runtime.Reload(ctx, func(ctx context.Context) error {
			old := a.Store.Path()
			if err := a.Store.Switch(ctx, path); err != nil {
				return err
			}
			// The new version has no outbox triggers yet. Its rows
			// equal the old version's (a replay is row-for-row
			// equal), so the warehouse holds them already.
			if err := a.migrateOutbox(ctx); err != nil {
				return errors.Join(err, a.Store.Switch(ctx, old))
			}
			return nil
		})
		if err != nil {
			if ctx.Err() == nil {
				a.Logger.Error().Err(err).Str("version", path).Msg("switching to the replayed read models")
			}
			continue
		}
		a.readModelsChanged()
		a.Logger.Info().Str("version", path).Msg("read models switched to the replayed version")
	}
}

// readModelPath is the live read-model version of the data directory.
func (c Config) readModelPath() (string, error) { return replay.Current(c.DataDir) }

// openReadModels opens the live read-model version of the data directory,
// for a one-shot command.
func (c Config) openReadModels() (*rmsqlite.Store, error) {
	path, err := c.readModelPath()
	if err != nil {
		return nil, err
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: path})
	if err != nil {
		return nil, fmt.Errorf("open read models: %w", err)
	}
	return store, nil
}

func newReplayCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var only []string
	var batch int
	var progress, cpuProfile string
	cmd := &cobra.Command{Use: "replay [--projector NAME]...",
		Short: "Rebuild read models from the event log into a new version, then switch to it (a running server follows)",
		Long: `Rebuilds the read models from position 0 of the event log into a new version beside the live one while
the server keeps serving, catches up with the head of the log, then switches atomically and drops the old
version. A running cgp serve on the same data directory moves to the new version within a second.
With --projector only the named projectors are rebuilt; the others are copied from the live version.
Interrupted, it resumes where it stopped when started again with the same projectors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if batch < 1 || batch > 100_000 {
				return usageError{errors.New("flag --batch: 1 to 100000")}
			}
			known := allProjectors(&App{Core: &Core{}}, func() {})
			for _, n := range only {
				if !slices.ContainsFunc(known, func(p projections.Projector) bool { return p.Name == n }) {
					var names []string
					for _, p := range known {
						names = append(names, p.Name)
					}
					return usageError{fmt.Errorf("flag --projector: unknown projector %q (known: %s)", n, strings.Join(names, ", "))}
				}
			}
			var p replay.Progress
			switch progress {
			case "auto":
				if f, ok := stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
					p = replay.NewBar(stderr)
				} else {
					p = replay.NewLines(stderr, 10*time.Second)
				}
			case "bar":
				p = replay.NewBar(stderr)
			case "lines":
				p = replay.NewLines(stderr, 10*time.Second)
			case "none":
			default:
				return usageError{fmt.Errorf("flag --progress: auto, bar, lines or none")}
			}
			if cpuProfile != "" {
				f, err := os.OpenFile(cpuProfile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				a := &App{Core: c}
				res, err := replay.Run(cmd.Context(), replay.Config{Dir: cfg.DataDir, Log: c.Log,
					Projectors: allProjectors(a, func() {}), Reactors: allReactors(a), Only: only, Batch: batch, Progress: p, Logger: c.Logger})
				if err != nil {
					if errors.Is(err, context.Canceled) {
						return fmt.Errorf("replay interrupted; run it again to resume: %w", err)
					}
					return err
				}
				return printJSON(stdout, res)
			})
		}}
	f := cmd.Flags()
	f.StringSliceVar(&only, "projector", nil, "rebuild only this projector (repeatable); default: all")
	f.IntVar(&batch, "batch", replay.DefaultBatch, "events per read-model transaction")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a Go CPU profile of the replay to this file")
	f.StringVar(&progress, "progress", "auto", "progress on stderr: auto (a bar on a terminal, plain lines otherwise), bar, lines or none")
	return cmd
}
