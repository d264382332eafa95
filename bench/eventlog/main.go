// Command eventlog measures the embedded event log (eventlog/sqlite) in a
// temporary directory and prints a table and a one-line summary:
//
//	(a) append throughput: many concurrent appenders, each appending one
//	    1 KB event per call to streams of its own, fsync on;
//	(b) the baseline: a plain batched SQLite insert of the same rows into a
//	    plain table with the same columns and indexes, synchronous=FULL (one
//	    fsync per transaction), in batches of as many events as one fsync
//	    made durable in (a) (or -baseline-batch); and the ratio (a)/(b);
//	(c) catch-up: reading the whole log of (a) through Subscribe from 0.
//
// Each measurement is repeated -runs times; the table reports medians.
//
//	go run ./bench/eventlog [-n 200000] [-runs 5] [-appenders 64]
//
// It imports the eventlog port, its SQLite adapter and go-sqlite3.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/sqlite"
)

// Targets the figures are judged against.
const (
	targetAppend   = 50_000  // events/s
	targetRatio    = 0.60    // (a)/(b)
	targetCatchUp  = 200_000 // events/s
	eventSize      = 1024
	eventsOfStream = 100 // an appender moves to a new stream of its own after this many
)

type config struct {
	n, runs, appenders, baselineBatch int
	dir, cpuProfile, ids, streams     string
}

// streamName names the stream that appender a writes its i-th event to. By
// default the appenders' streams are scattered over the stream index, as
// customers' streams are; "clustered" names the streams written at the same
// time next to each other, as time-ordered new streams (orders) are.
func (c config) streamName(a, i int) string {
	if c.streams == "clustered" {
		return fmt.Sprintf("bench-%08d-%03d", i/eventsOfStream, a)
	}
	return fmt.Sprintf("bench-%03d-%08d", a, i/eventsOfStream)
}

// newID returns an event id of the configured kind.
func (c config) newID() uuid.UUID {
	if c.ids == "v4" {
		return uuid.New()
	}
	return uuid.Must(uuid.NewV7())
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 200_000, "events appended per run")
	flag.IntVar(&cfg.runs, "runs", 5, "repetitions of each measurement (medians are reported)")
	flag.IntVar(&cfg.appenders, "appenders", 64, "concurrent appenders")
	flag.IntVar(&cfg.baselineBatch, "baseline-batch", 0, "rows per baseline transaction (0: the mean group-commit size of the same run)")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the temporary databases (default: the system temp dir)")
	flag.StringVar(&cfg.ids, "ids", "v7", "event ids: v7 (time-ordered, as commands mint them) or v4 (random)")
	flag.StringVar(&cfg.streams, "streams", "scattered", "where concurrently written streams lie in the stream index: scattered or clustered")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the append measurements to this file")
	flag.Parse()
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "eventlog bench:", err)
		os.Exit(1)
	}
}

type runResult struct {
	appendRate, baselineRate, ratio, catchUpRate float64
	// perCommit and perSync are the mean number of events per group-commit
	// transaction and per fsync of the log's write-ahead log in (a).
	perCommit, perSync float64
}

func run(cfg config, out io.Writer) error {
	if cfg.n < cfg.appenders || cfg.appenders < 1 || cfg.runs < 1 {
		return errors.New("need -runs >= 1 and -n >= -appenders >= 1")
	}
	if cfg.ids != "v4" && cfg.ids != "v7" {
		return errors.New("-ids must be v4 or v7")
	}
	if cfg.streams != "scattered" && cfg.streams != "clustered" {
		return errors.New("-streams must be scattered or clustered")
	}
	dir, err := os.MkdirTemp(cfg.dir, "eventlog-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var profile io.Closer
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		profile = f
	}
	var results []runResult
	for i := range cfg.runs {
		r, err := measure(cfg, filepath.Join(dir, fmt.Sprintf("run%d", i)))
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Fprintf(os.Stderr, "run %d/%d: append %.0f ev/s (%.1f per commit, %.1f per fsync), baseline %.0f ev/s, ratio %.2f, catch-up %.0f ev/s\n",
			i+1, cfg.runs, r.appendRate, r.perCommit, r.perSync, r.baselineRate, r.ratio, r.catchUpRate)
		results = append(results, r)
	}
	if profile != nil {
		pprof.StopCPUProfile()
		_ = profile.Close()
	}
	report(cfg, results, out)
	return nil
}

// measure runs (a), (b) and (c) once in its own files.
func measure(cfg config, prefix string) (runResult, error) {
	var r runResult
	logPath := prefix + "-log.db"
	var err error
	if r.appendRate, r.perCommit, r.perSync, err = measureAppend(cfg, logPath); err != nil {
		return r, fmt.Errorf("append: %w", err)
	}
	// The baseline fsyncs once per transaction: give it as many events per
	// fsync as the log had.
	size := cfg.baselineBatch
	if size <= 0 {
		size = max(1, int(r.perSync+0.5))
	}
	if r.baselineRate, err = measureBaseline(cfg, prefix+"-plain.db", size); err != nil {
		return r, fmt.Errorf("baseline: %w", err)
	}
	r.ratio = r.appendRate / r.baselineRate
	if r.catchUpRate, err = measureCatchUp(cfg, logPath); err != nil {
		return r, fmt.Errorf("catch-up: %w", err)
	}
	for _, suffix := range []string{"-log.db", "-log.db-wal", "-log.db-shm", "-plain.db", "-plain.db-wal", "-plain.db-shm"} {
		_ = os.Remove(prefix + suffix)
	}
	return r, nil
}

func newPayload() []byte {
	p := make([]byte, eventSize)
	_, _ = rand.Read(p)
	return p
}

// measureAppend is (a): events/s and the mean number of events per commit
// and per fsync.
func measureAppend(cfg config, path string) (rate, perCommit, perSync float64, err error) {
	l, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		return 0, 0, 0, err
	}
	defer l.Close()
	payload := newPayload()
	per := cfg.n / cfg.appenders
	var wg sync.WaitGroup
	errs := make(chan error, cfg.appenders)
	start := time.Now()
	for a := range cfg.appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var next eventlog.AppendResult
			for i := range per {
				exp := eventlog.Exact(next.NextExpectedRevision)
				if i%eventsOfStream == 0 {
					exp = eventlog.NoStream()
				}
				e := eventlog.EventData{
					ID: cfg.newID(), Type: "BenchAppended", SchemaVersion: 1, ShopID: "shop_bench",
					OccurredAt: time.Now().UTC(), Data: payload,
					Metadata: eventlog.Metadata{CorrelationID: "req_bench", Actor: "system:bench", Source: "system"},
				}
				stream := cfg.streamName(a, i)
				if next, err = l.Append(context.Background(), stream, exp, e); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, 0, err
	}
	st := l.Stats()
	if st.Events != uint64(per*cfg.appenders) {
		return 0, 0, 0, fmt.Errorf("log wrote %d events, want %d", st.Events, per*cfg.appenders)
	}
	events := float64(st.Events)
	return events / elapsed.Seconds(), events / float64(st.Commits), events / float64(max(st.Syncs, 1)), nil
}

// baselineSchema has the columns and indexes of the log's events table,
// without triggers.
const baselineSchema = `CREATE TABLE events (
	position INTEGER PRIMARY KEY AUTOINCREMENT, event_id BLOB NOT NULL UNIQUE, stream TEXT NOT NULL,
	revision INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, shop_id TEXT NOT NULL,
	occurred_at INTEGER NOT NULL, recorded_at INTEGER NOT NULL, data BLOB NOT NULL, metadata TEXT NOT NULL,
	prev_hash BLOB, hash BLOB NOT NULL, UNIQUE (stream, revision)) STRICT`

type row struct {
	id       []byte
	stream   string
	revision int64
	prev     []byte
	hash     []byte
}

// measureBaseline is (b): the same rows inserted by one goroutine in
// transactions of batch rows, WAL and synchronous=FULL.
func measureBaseline(cfg config, path string, batch int) (float64, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(baselineSchema); err != nil {
		return 0, err
	}
	per := cfg.n / cfg.appenders
	rows := make([]row, 0, per*cfg.appenders)
	// The order group commit sees: appenders interleaved.
	for i := range per {
		for a := range cfg.appenders {
			id := cfg.newID()
			hash := make([]byte, 32)
			_, _ = rand.Read(hash)
			rows = append(rows, row{id: id[:], stream: cfg.streamName(a, i),
				revision: int64(i % eventsOfStream), hash: hash})
		}
	}
	for i := range rows {
		if rows[i].revision > 0 {
			rows[i].prev = rows[i-cfg.appenders].hash
		}
	}
	payload := newPayload()
	const meta = `{"correlation_id":"req_bench","actor":"system:bench","source":"system"}`
	start := time.Now()
	for from := 0; from < len(rows); from += batch {
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		stmt, err := tx.Prepare(`INSERT INTO events (event_id, stream, revision, type, schema_version, shop_id,
			occurred_at, recorded_at, data, metadata, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			_ = tx.Rollback()
			return 0, err
		}
		now := time.Now().UnixNano()
		for _, r := range rows[from:min(from+batch, len(rows))] {
			if _, err := stmt.Exec(r.id, r.stream, r.revision, "BenchAppended", 1, "shop_bench",
				now, now, payload, meta, r.prev, r.hash); err != nil {
				_ = tx.Rollback()
				return 0, err
			}
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return float64(len(rows)) / time.Since(start).Seconds(), nil
}

// measureCatchUp is (c): a fresh Log on the file of (a), reading it whole
// through Subscribe from 0.
func measureCatchUp(cfg config, path string) (float64, error) {
	l, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	want := cfg.n / cfg.appenders * cfg.appenders
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	sub, err := l.Subscribe(ctx, 0)
	if err != nil {
		return 0, err
	}
	defer sub.Close()
	var last eventlog.Position
	for got := 0; got < want; got++ {
		e, ok := <-sub.Events()
		if !ok {
			return 0, fmt.Errorf("subscription ended after %d of %d events: %v", got, want, sub.Err())
		}
		if e.Position <= last {
			return 0, fmt.Errorf("position %d after %d", e.Position, last)
		}
		last = e.Position
	}
	return float64(want) / time.Since(start).Seconds(), nil
}

func median(vals []float64) float64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func pick(rs []runResult, f func(runResult) float64) (med, lo, hi float64) {
	vals := make([]float64, len(rs))
	for i, r := range rs {
		vals[i] = f(r)
	}
	return median(vals), slices.Min(vals), slices.Max(vals)
}

func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func report(cfg config, rs []runResult, out io.Writer) {
	aMed, aLo, aHi := pick(rs, func(r runResult) float64 { return r.appendRate })
	bMed, bLo, bHi := pick(rs, func(r runResult) float64 { return r.baselineRate })
	rMed, rLo, rHi := pick(rs, func(r runResult) float64 { return r.ratio })
	cMed, cLo, cHi := pick(rs, func(r runResult) float64 { return r.catchUpRate })
	gMed, gLo, gHi := pick(rs, func(r runResult) float64 { return r.perCommit })
	sMed, sLo, sHi := pick(rs, func(r runResult) float64 { return r.perSync })
	batchNote := "events per fsync of (a) in each run"
	if cfg.baselineBatch > 0 {
		batchNote = fmt.Sprintf("%d rows", cfg.baselineBatch)
	}
	fmt.Fprintf(out, "event log benchmark: %d events of %d B per run, %d appenders, UUID%s event ids, %s streams, %d runs, fsync on (medians)\n\n",
		cfg.n/cfg.appenders*cfg.appenders, eventSize, cfg.appenders, cfg.ids, cfg.streams, cfg.runs)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tmedian\tmin\tmax\tunit\ttarget\t")
	fmt.Fprintf(tw, "(a) append, %d appenders, 1 KB events\t%.0f\t%.0f\t%.0f\tevents/s\t>= %d %s\t\n", cfg.appenders, aMed, aLo, aHi, targetAppend, mark(aMed >= targetAppend))
	fmt.Fprintf(tw, "    group-commit size\t%.1f\t%.1f\t%.1f\tevents/commit\t\t\n", gMed, gLo, gHi)
	fmt.Fprintf(tw, "    events made durable per fsync\t%.1f\t%.1f\t%.1f\tevents/fsync\t\t\n", sMed, sLo, sHi)
	fmt.Fprintf(tw, "(b) baseline batched insert (%s)\t%.0f\t%.0f\t%.0f\tevents/s\t\t\n", batchNote, bMed, bLo, bHi)
	fmt.Fprintf(tw, "(a)/(b)\t%.2f\t%.2f\t%.2f\tratio\t>= %.2f %s\t\n", rMed, rLo, rHi, targetRatio, mark(rMed >= targetRatio))
	fmt.Fprintf(tw, "(c) catch-up, Subscribe from 0\t%.0f\t%.0f\t%.0f\tevents/s\t>= %d %s\t\n", cMed, cLo, cHi, targetCatchUp, mark(cMed >= targetCatchUp))
	_ = tw.Flush()
	fmt.Fprintf(out, "\nsummary: append %.0f events/s (%.0f%% of the %.0f events/s baseline, %.1f events per commit, %.1f per fsync), catch-up %.0f events/s; targets %s/%s/%s\n",
		aMed, rMed*100, bMed, gMed, sMed, cMed, mark(aMed >= targetAppend), mark(rMed >= targetRatio), mark(cMed >= targetCatchUp))
}
