package replay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// A lane is one rebuilt projector folding the log into a file of its own,
// beside the others: SQLite has one writer per file, so lanes use every
// core where one file would fold the projectors one after the other. When
// every lane has reached the head, the lanes are merged into the version.

// lanePath is the file of projector's lane for the version at target.
func lanePath(target, projector string) string { return target + ".lane-" + projector }

// runLanes folds each rebuilt projector from its lane's checkpoint to the
// head of the log, all at once, and returns the lowest position they
// started from and the lowest they reached.
func runLanes(ctx context.Context, cfg Config, st *state, target string, rebuilt []string) (from, reached eventlog.Position, err error) {
	var projs []projections.Projector
	for _, p := range cfg.Projectors {
		if slices.Contains(rebuilt, p.Name) {
			projs = append(projs, p)
		}
	}
	cache := cfg.WriterCacheKiB / max(1, min(len(projs), 4))
	stores := make([]*rmsqlite.Store, len(projs))
	closeAll := func() error {
		var errs []error
		for _, s := range stores {
			if s != nil {
				errs = append(errs, s.Close())
			}
		}
		return errors.Join(errs...)
	}
	for i, p := range projs {
		s, err := rmsqlite.Open(rmsqlite.Config{Path: lanePath(target, p.Name), Build: true, WriterCacheKiB: cache})
		if err != nil {
			return 0, 0, errors.Join(err, closeAll())
		}
		stores[i] = s
		if err := s.Migrate(ctx, p.Name, p.Migrations); err != nil {
			return 0, 0, errors.Join(fmt.Errorf("migrate %s: %w", p.Name, err), closeAll())
		}
	}
	if err := deferIndexes(ctx, cfg, projs, stores, st); err != nil {
		return 0, 0, errors.Join(err, closeAll())
	}

	agg := &laneProgress{out: cfg.Progress, done: make([]uint64, len(projs)), total: make([]uint64, len(projs))}
	type result struct {
		from, reached eventlog.Position
		err           error
	}
	results := make([]result, len(projs))
	// The lanes read the log once, together; when one fails the others
	// stop, since the reading waits for each of them.
	fan := newFanout(cfg.Log, len(projs))
	lanesCtx, stopLanes := context.WithCancel(ctx)
	defer stopLanes()
	var wg sync.WaitGroup
	for i, p := range projs {
		lane := cfg
		lane.Log = fan
		lane.Projectors = []projections.Projector{p}
		lane.Progress = agg.lane(i)
		wg.Go(func() {
			f, r, err := follow(lanesCtx, lane, stores[i])
			results[i] = result{f, r, err}
			if err != nil {
				stopLanes()
			}
		})
	}
	wg.Wait()
	_ = fan.Close()
	var errs []error
	first := true
	for i, r := range results {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", projs[i].Name, r.err))
			continue
		}
		if first || r.from < from {
			from = r.from
		}
		if first || r.reached < reached {
			reached = r.reached
		}
		first = false
	}
	return from, reached, errors.Join(errors.Join(errs...), closeAll())
}

// laneProgress reports the lanes together: the slowest lane's events
// against the log's.
type laneProgress struct {
	mu          sync.Mutex
	out         Progress
	done, total []uint64
	finished    int
}

func (l *laneProgress) lane(i int) Progress { return laneReporter{l, i} }

type laneReporter struct {
	l *laneProgress
	i int
}

func (r laneReporter) Update(done, total uint64) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done[r.i], l.total[r.i] = done, total
	if l.out != nil {
		l.out.Update(slices.Min(l.done), slices.Max(l.total))
	}
}

func (r laneReporter) Done() {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished++; l.finished == len(l.done) && l.out != nil {
		l.out.Update(slices.Min(l.done), slices.Max(l.total))
		l.out.Done()
	}
}

// mergeLanes copies every lane into the version at target (its tables,
// indexes, triggers, and its projector's checkpoint, migrations and parked
// events), one lane per transaction; a lane already merged is skipped, so
// an interrupted merge resumes. The lane files are deleted afterwards.
func mergeLanes(ctx context.Context, target string, rebuilt []string) error {
	conn, done, err := openVersion(ctx, target)
	if err != nil {
		return err
	}
	defer done()
	for _, name := range rebuilt {
		if err := mergeLane(ctx, conn, lanePath(target, name), name); err != nil {
			return fmt.Errorf("merge %s: %w", name, err)
		}
	}
	for _, name := range rebuilt {
		if err := removeVersion(lanePath(target, name)); err != nil {
			return err
		}
	}
	return nil
}

func mergeLane(ctx context.Context, conn *sql.Conn, path, projector string) error {
	var merged int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM _projector_migrations WHERE projector = ?`, projector).Scan(&merged); err != nil {
		return err
	}
	if merged > 0 {
		return nil
	}
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS lane`, "file:"+path+"?mode=ro"); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE lane`) }()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tables, err := names(ctx, tx, `SELECT name FROM lane.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\_projector\_%' ESCAPE '\'`)
	if err == nil {
		err = copyObjects(ctx, tx, "lane", tables)
	}
	if err == nil {
		err = copyStoreRows(ctx, tx, "lane", []string{projector})
	}
	if err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}
