package replay

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// Config configures a replay.
type Config struct {
	// Dir is the data directory holding the read-model versions.
	// Required.
	Dir string
	// Log is the event log. Required.
	Log eventlog.Log
	// Projectors are every projector of the service; all of them follow
	// the log in the new version. Required.
	Projectors []projections.Projector
	// Reactors are the reactors of the service: a replay never runs
	// one. Their tables, checkpoints and parked events are copied from
	// the live version as they are, so that after the switch each goes on
	// from where it was and acts on no event a second time.
	Reactors []projections.Projector
	// Only names the projectors rebuilt from position 0; the others are
	// copied from the live version and caught up. Empty: all.
	Only []string
	// Batch is how many events share a read-model transaction. Default
	// DefaultBatch.
	Batch int
	// WriterCacheKiB is the new version's page cache while it is built.
	// Default DefaultWriterCacheKiB.
	WriterCacheKiB int
	// GCPercent is the Go garbage collector's target (debug.SetGCPercent)
	// while Run runs, when the process's own is lower; the process's is
	// restored when Run returns. A replay allocates a short-lived event,
	// decoded payload and statement arguments per event and lane, and
	// keeps little: collecting a fifth as often saves about a tenth of its
	// CPU time for some 70 MB more memory on the bench shop
	// (docs/performance.md). Default DefaultGCPercent; negative leaves the
	// process's setting alone.
	GCPercent int
	// Progress is told how far the replay is. Optional.
	Progress Progress
	// Poll is how often progress is measured. Default 250 ms.
	Poll time.Duration
	// Logger receives the replay's own lines (never an event's content).
	Logger zerolog.Logger
}

// Defaults of Config.
const (
	DefaultBatch          = 1024
	DefaultWriterCacheKiB = 1 << 20 // 1 GiB
	DefaultGCPercent      = 400
)

// Result is what a replay did.
type Result struct {
	Version    string   `json:"version"`
	Previous   string   `json:"previous"`
	Projectors []string `json:"projectors"`
	Resumed    bool     `json:"resumed"`
	// Position is where every projector of the new version reached (the
	// head of the log, or close behind it while the log grows).
	Position uint64 `json:"position"`
	// Events is how many positions this run folded (from where it
	// started or resumed to Position).
	Events          uint64  `json:"events"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	// Phases: the lanes folding the log, their merge into the version
	// (with the query indexes), and the last catch-up of every projector.
	LanesSeconds   float64 `json:"lanes_seconds"`
	MergeSeconds   float64 `json:"merge_seconds"`
	CatchUpSeconds float64 `json:"catch_up_seconds"`
}

// ErrBusy is matched by Run while another replay of the same data
// directory runs.
var ErrBusy = errors.New("another replay of this data directory is running")

// state is replay.json: what an unfinished replay was doing.
type state struct {
	Target     string   `json:"target"`
	Source     string   `json:"source"`
	Projectors []string `json:"projectors"`
	Copied     bool     `json:"copied"`
	// Merged: the lanes are in the version (only the catch-up is left).
	Merged bool `json:"merged"`
	// Deferred are the query indexes dropped while the version is built
	// (name → CREATE statement), created again at the end.
	Deferred map[string]string `json:"deferred,omitempty"`
}

func (c *Config) setDefaults() {
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.WriterCacheKiB == 0 {
		c.WriterCacheKiB = DefaultWriterCacheKiB
	}
	if c.Poll == 0 {
		c.Poll = 250 * time.Millisecond
	}
	if c.GCPercent == 0 {
		c.GCPercent = DefaultGCPercent
	}
}

// raiseGC sets the garbage collector's target to percent while the
// process's is lower (and not off), and returns what restores it.
func raiseGC(percent int) (restore func()) {
	if percent < 0 {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	if old < 0 || old >= percent {
		debug.SetGCPercent(old)
		return func() {}
	}
	return func() { debug.SetGCPercent(old) }
}

// rebuilt returns the sorted names of the projectors rebuilt from 0, or an
// error naming an unknown one.
func (c *Config) rebuilt() ([]string, error) {
	var all []string
	for _, p := range c.Projectors {
		all = append(all, p.Name)
	}
	if len(c.Only) == 0 {
		slices.Sort(all)
		return all, nil
	}
	out := slices.Clone(c.Only)
	slices.Sort(out)
	out = slices.Compact(out)
	for _, n := range out {
		if !slices.Contains(all, n) {
			slices.Sort(all)
			return nil, fmt.Errorf("unknown projector %q (known: %v)", n, all)
		}
	}
	return out, nil
}

// Run replays the log into a new version and switches to it; see the
// package documentation. When ctx ends first, the unfinished version is
// kept for the next Run to resume, and ctx's error is returned.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.setDefaults()
	if cfg.Dir == "" || cfg.Log == nil || len(cfg.Projectors) == 0 {
		return Result{}, errors.New("replay: Dir, Log and Projectors are required")
	}
	names, err := cfg.rebuilt()
	if err != nil {
		return Result{}, fmt.Errorf("replay: %w", err)
	}
	unlock, err := lock(cfg.Dir)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	defer raiseGC(cfg.GCPercent)()

	source, err := currentName(cfg.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("replay: %w", err)
	}
	st, resumed, err := prepare(cfg, source, names)
	if err != nil {
		return Result{}, fmt.Errorf("replay: %w", err)
	}
	target := filepath.Join(cfg.Dir, st.Target)
	partial := len(names) < len(cfg.Projectors) || len(cfg.Reactors) > 0
	if partial && !st.Copied {
		copied := cfg
		copied.Projectors = append(slices.Clip(cfg.Projectors), cfg.Reactors...)
		if err := copyOthers(ctx, copied, filepath.Join(cfg.Dir, source), target, names); err != nil {
			return Result{}, fmt.Errorf("replay: %w", err)
		}
		st.Copied = true
		if err := saveState(cfg.Dir, st); err != nil {
			return Result{}, fmt.Errorf("replay: %w", err)
		}
	}
	res := Result{Version: st.Target, Previous: source, Projectors: names, Resumed: resumed}
	start := time.Now()
	var from eventlog.Position
	final := cfg
	if !st.Merged {
		final.Progress = nil // the lanes reported; the catch-up is short
		var err error
		from, _, err = runLanes(ctx, cfg, &st, target, names)
		if err != nil {
			return res, fmt.Errorf("replay: %w", err)
		}
		res.LanesSeconds = time.Since(start).Seconds()
		if err := mergeLanes(ctx, target, names); err != nil {
			return res, fmt.Errorf("replay: %w", err)
		}
		res.MergeSeconds = time.Since(start).Seconds() - res.LanesSeconds
		st.Merged = true
		if err := saveState(cfg.Dir, st); err != nil {
			return res, fmt.Errorf("replay: %w", err)
		}
	}
	// Every projector together, over the merged version: the events
	// appended while the lanes were merged, and the copied projectors.
	store, err := rmsqlite.Open(rmsqlite.Config{Path: target, Build: true, WriterCacheKiB: cfg.WriterCacheKiB})
	if err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	catchUp := time.Now()
	_, head, err := follow(ctx, final, store)
	if err != nil {
		return res, errors.Join(fmt.Errorf("replay: %w", err), store.Close())
	}
	indexes := time.Now()
	if err := createDeferred(ctx, store, st.Deferred); err != nil {
		return res, errors.Join(fmt.Errorf("replay: %w", err), store.Close())
	}
	res.MergeSeconds += time.Since(indexes).Seconds()
	res.CatchUpSeconds = indexes.Sub(catchUp).Seconds()
	// Durable before it is pointed at: an ordinary WAL file, synced.
	if err := store.Finish(ctx); err != nil {
		return res, errors.Join(fmt.Errorf("replay: %w", err), store.Close())
	}
	if err := store.Close(); err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	if err := setCurrent(cfg.Dir, st.Target); err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	if err := os.Remove(filepath.Join(cfg.Dir, stateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("replay: %w", err)
	}
	if source != st.Target {
		if err := removeVersion(filepath.Join(cfg.Dir, source)); err != nil {
			return res, fmt.Errorf("replay: drop the old version: %w", err)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.Position = uint64(head)
	if head > from {
		res.Events = uint64(head - from)
	}
	if res.Seconds > 0 {
		res.EventsPerSecond = float64(res.Events) / res.Seconds
	}
	return res, nil
}

// deferIndexes drops the query indexes of the lanes' projectors (already
// migrated in their lanes), recording each one's CREATE statement in the
// state first, so that an interrupted replay still creates them at the end.
func deferIndexes(ctx context.Context, cfg Config, projs []projections.Projector, stores []*rmsqlite.Store, st *state) error {
	if st.Deferred == nil {
		deferred := map[string]string{}
		for i, p := range projs {
			for _, idx := range p.QueryIndexes {
				var create string
				err := stores[i].DB().QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`, idx).Scan(&create)
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("projector %s: query index %s does not exist", p.Name, idx)
				}
				if err != nil {
					return err
				}
				deferred[idx] = create
			}
		}
		st.Deferred = deferred
		if err := saveState(cfg.Dir, *st); err != nil {
			return err
		}
	}
	for i, p := range projs {
		err := stores[i].Maintain(ctx, func(tx *sql.Tx) error {
			for _, idx := range p.QueryIndexes {
				if _, err := tx.ExecContext(ctx, `DROP INDEX IF EXISTS `+quote(idx)); err != nil {
					return fmt.Errorf("drop %s: %w", idx, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// createDeferred creates the query indexes dropped while building, in one
// transaction.
func createDeferred(ctx context.Context, store *rmsqlite.Store, deferred map[string]string) error {
	names := slices.Sorted(maps.Keys(deferred))
	return store.Maintain(ctx, func(tx *sql.Tx) error {
		for _, idx := range names {
			var exists int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, idx).Scan(&exists); err != nil {
				return err
			}
			if exists > 0 {
				continue // created before an interruption
			}
			if _, err := tx.ExecContext(ctx, deferred[idx]); err != nil {
				return fmt.Errorf("create %s: %w", idx, err)
			}
		}
		return nil
	})
}

// prepare resumes the unfinished replay of the same projectors from the
// same source, or starts a new version (dropping an unfinished one of
// other projectors).
func prepare(cfg Config, source string, names []string) (state, bool, error) {
	old, err := loadState(cfg.Dir)
	if err != nil {
		return state{}, false, err
	}
	if old != nil {
		_, serr := os.Stat(filepath.Join(cfg.Dir, old.Target))
		// Before the merge the version's file may not exist yet: the
		// lanes hold the work.
		if (serr == nil || !old.Merged) && old.Source == source && slices.Equal(old.Projectors, names) {
			return *old, true, nil
		}
		cfg.Logger.Info().Str("version", old.Target).Msg("dropping an unfinished replay of other projectors")
		if old.Target != source {
			if err := removeVersion(filepath.Join(cfg.Dir, old.Target)); err != nil {
				return state{}, false, err
			}
			lanes, _ := filepath.Glob(filepath.Join(cfg.Dir, old.Target) + ".lane-*")
			for _, l := range lanes {
				if err := removeVersion(l); err != nil {
					return state{}, false, err
				}
			}
		}
	}
	st := state{Target: "readmodels-" + time.Now().UTC().Format("20060102T150405.000000000") + ".db", Source: source, Projectors: names}
	if err := saveState(cfg.Dir, st); err != nil {
		return state{}, false, err
	}
	return st, false, nil
}

func loadState(dir string) (*state, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil || validVersionName(st.Target) != nil || st.Target == DefaultVersion {
		// An unreadable state is an unfinished replay we cannot resume.
		return nil, nil
	}
	return &st, nil
}

func saveState(dir string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := writeSynced(tmp, b); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// lock takes the data directory's replay lock, or fails with ErrBusy.
func lock(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("replay lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, fmt.Errorf("replay lock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// follow runs every projector over store until all of them reach the head
// of the log, telling cfg.Progress on the way. It returns the lowest
// checkpoint it started from and the head reached.
func follow(ctx context.Context, cfg Config, store *rmsqlite.Store) (from, head eventlog.Position, err error) {
	rt, err := projections.New(projections.Config{Log: cfg.Log, Store: store, Logger: cfg.Logger,
		Registry: prometheus.NewRegistry(), Batch: cfg.Batch, Unbounded: true})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range cfg.Projectors {
		p.Upkeep = nil // clock-driven upkeep runs in the server, after the switch
		if err := rt.Register(p); err != nil {
			return 0, 0, err
		}
	}
	// Where the projectors start, read before they move.
	for i, p := range cfg.Projectors {
		cp, err := store.Checkpoint(ctx, p.Name)
		if err != nil {
			return 0, 0, err
		}
		if i == 0 || cp < from {
			from = cp
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- rt.Run(runCtx) }()
	stop := func() error {
		cerr := rt.Close()
		return errors.Join(cerr, <-runDone)
	}
	select {
	case <-rt.Running():
	case err := <-runDone:
		return 0, 0, err
	case <-ctx.Done():
		return 0, 0, errors.Join(ctx.Err(), stop())
	}
	t := time.NewTicker(cfg.Poll)
	defer t.Stop()
	// The log may grow while it is replayed (a server ingests): the replay
	// is done once every projector reached a head read before and the log
	// has grown by no more than a batch since; the server folds the rest
	// after the switch, from the new version's checkpoints.
	target, err := cfg.Log.HeadPosition(ctx)
	if err != nil {
		return from, 0, errors.Join(err, stop())
	}
	for {
		done := lowest(rt.Checkpoints(), len(cfg.Projectors))
		if done >= target {
			head, err := cfg.Log.HeadPosition(ctx)
			if err != nil {
				return from, 0, errors.Join(err, stop())
			}
			if head <= done+eventlog.Position(cfg.Batch) {
				if cfg.Progress != nil {
					cfg.Progress.Update(uint64(done-min(done, from)), uint64(done-min(done, from)))
					cfg.Progress.Done()
				}
				// Close flushes the checkpoints moved past events nobody
				// folds, so the store holds them all.
				return from, done, stop()
			}
			target = head
		}
		if cfg.Progress != nil {
			cfg.Progress.Update(uint64(done-min(done, from)), uint64(target-min(target, from)))
		}
		select {
		case <-t.C:
		case err := <-runDone:
			if err == nil {
				err = errors.New("projections stopped")
			}
			return from, done, err
		case <-ctx.Done():
			return from, done, errors.Join(ctx.Err(), stop())
		}
	}
}

// lowest is the lowest checkpoint of cps, 0 until all n are known.
func lowest(cps map[string]eventlog.Position, n int) eventlog.Position {
	if len(cps) < n {
		return 0
	}
	first := true
	var m eventlog.Position
	for _, cp := range cps {
		if first || cp < m {
			m, first = cp, false
		}
	}
	return m
}
