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

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/replay"
)

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
			known := (&app.App{Core: &Core{}}).AllProjectors(func() {})
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
				a := &app.App{Core: c}
				res, err := replay.Run(cmd.Context(), replay.Config{Dir: cfg.DataDir, Log: c.Log,
					Projectors: a.AllProjectors(func() {}), Reactors: a.AllReactors(), Only: only, Batch: batch, Progress: p, Logger: c.Logger})
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
