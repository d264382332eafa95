// Command pglog measures the PostgreSQL event log (eventlog/postgres) in a
// schema of its own, dropped at the end, and prints a table and a one-line
// summary:
//
//	(a) append throughput: many concurrent appenders, each appending one
//	    1 KB event per call (expected revision exact) to streams of its own;
//	(b) the baseline: the same rows inserted by one connection into a plain
//	    table with the same columns and indexes (no triggers, no lock, no
//	    reads, no notification), one multi-row INSERT and one COMMIT per
//	    batch of as many rows as one group commit of (a) carried on average
//	    (or -baseline-batch), every column sent per row, each batch sent in
//	    one round trip and waited for, as a plain client does (the log
//	    keeps up to two batches in flight); and the ratio (a)/(b). (a) and
//	    (b) take turns
//	    in -rounds rounds of a run, each timed on its own, so that a change
//	    of the machine's other load during a run weighs on both alike;
//	(c) catch-up: reading the whole log of (a) through Subscribe from 0 on
//	    a freshly opened Log.
//
// Each measurement is repeated -runs times; the table reports medians.
// The server, its fsync and the machine's other load are part of every
// figure: compare (a) with (b) of the same run, not across machines.
//
//	go run ./bench/pglog [-url postgres://…] [-n 100000] [-runs 3] [-appenders 64]
//
// It imports the eventlog port, its PostgreSQL adapter and pgx.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/postgres"
)

// Targets the figures are judged against (issue 23).
const (
	targetRatio    = 0.60 // (a)/(b)
	eventSize      = 1024
	eventsOfStream = 100 // an appender moves to a new stream of its own after this many
)

type config struct {
	url, cpuProfile                                          string
	n, runs, appenders, baselineBatch, baselineConns, rounds int
}

func (c config) streamName(a, i int) string {
	return fmt.Sprintf("bench-%03d-%08d", a, i/eventsOfStream)
}

func main() {
	var cfg config
	url := os.Getenv("CGP_BENCH_POSTGRES_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	flag.StringVar(&cfg.url, "url", url, "PostgreSQL connection string (default $CGP_BENCH_POSTGRES_URL or the local test database)")
	flag.IntVar(&cfg.n, "n", 100_000, "events appended per run")
	flag.IntVar(&cfg.runs, "runs", 3, "repetitions of each measurement (medians are reported)")
	flag.IntVar(&cfg.appenders, "appenders", 64, "concurrent appenders")
	flag.IntVar(&cfg.baselineConns, "baseline-conns", 1, "connections the baseline inserts on at once (each takes every n-th batch)")
	flag.IntVar(&cfg.rounds, "rounds", 10, "rounds per run in which (a) and (b) take turns")
	flag.IntVar(&cfg.baselineBatch, "baseline-batch", 0, "rows per baseline transaction (0: the mean group-commit size of the same run)")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pglog bench:", err)
		os.Exit(1)
	}
}

type runResult struct {
	appendRate, baselineRate, ratio, catchUpRate float64
	// perCommit is the mean number of events per group-commit transaction in (a).
	perCommit float64
}

func run(cfg config, out io.Writer) error {
	if cfg.appenders < 1 || cfg.runs < 1 || cfg.rounds < 1 || cfg.n < cfg.appenders*cfg.rounds || cfg.baselineConns < 1 {
		return errors.New("need -runs >= 1, -rounds >= 1, -baseline-conns >= 1 and -n >= -appenders * -rounds >= 1")
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var results []runResult
	for i := range cfg.runs {
		r, err := measure(cfg)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Fprintf(os.Stderr, "run %d/%d: append %.0f ev/s (%.1f per commit), baseline %.0f ev/s, ratio %.2f, catch-up %.0f ev/s\n",
			i+1, cfg.runs, r.appendRate, r.perCommit, r.baselineRate, r.ratio, r.catchUpRate)
		results = append(results, r)
	}
	report(cfg, results, out)
	return nil
}

// measure runs (a) and (b) in turns, then (c), once, in a schema of its
// own.
func measure(cfg config) (r runResult, err error) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, cfg.url)
	if err != nil {
		return r, fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bench_pglog_" + hex.EncodeToString(b)
	defer func() {
		if _, dropErr := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); dropErr != nil && err == nil {
			err = fmt.Errorf("drop schema: %w", dropErr)
		}
	}()
	l, err := postgres.Open(ctx, postgres.Config{URL: cfg.url, Schema: schema})
	if err != nil {
		return r, err
	}
	defer l.Close()
	plain := newBaseline(cfg, admin, schema)
	for range cfg.baselineConns - 1 {
		conn, err := pgx.Connect(ctx, cfg.url)
		if err != nil {
			return r, fmt.Errorf("connect: %w", err)
		}
		defer conn.Close(ctx)
		plain.more = append(plain.more, conn)
	}
	if err := plain.create(); err != nil {
		return r, fmt.Errorf("baseline: %w", err)
	}
	per := cfg.n / cfg.appenders / cfg.rounds // events per appender and round
	var appendTime, baselineTime time.Duration
	var commits uint64
	for round := range cfg.rounds {
		before := l.Stats()
		d, err := appendRound(cfg, l, round*per, per)
		if err != nil {
			return r, fmt.Errorf("append: %w", err)
		}
		appendTime += d
		st := l.Stats()
		commits += st.Commits - before.Commits
		size := cfg.baselineBatch
		if size <= 0 {
			size = max(1, int(float64(st.Events-before.Events)/float64(st.Commits-before.Commits)+0.5))
		}
		if d, err = plain.round(round*per, per, size); err != nil {
			return r, fmt.Errorf("baseline: %w", err)
		}
		baselineTime += d
	}
	events := float64(per * cfg.appenders * cfg.rounds)
	if st := l.Stats(); st.Events != uint64(events) {
		return r, fmt.Errorf("log wrote %d events, want %.0f", st.Events, events)
	}
	r.appendRate = events / appendTime.Seconds()
	r.perCommit = events / float64(commits)
	r.baselineRate = events / baselineTime.Seconds()
	r.ratio = r.appendRate / r.baselineRate
	if r.catchUpRate, err = measureCatchUp(cfg, schema, int(events)); err != nil {
		return r, fmt.Errorf("catch-up: %w", err)
	}
	return r, nil
}

func newPayload() []byte {
	p := make([]byte, eventSize)
	_, _ = rand.Read(p)
	return p
}

// appendRound is one round of (a): every appender appends per events,
// its from-th to its (from+per-1)-th, one per call. It returns how long
// the round took.
func appendRound(cfg config, l *postgres.Log, from, per int) (time.Duration, error) {
	payload := newPayload()
	var wg sync.WaitGroup
	errs := make(chan error, cfg.appenders)
	start := time.Now()
	for a := range cfg.appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from; i < from+per; i++ {
				exp := eventlog.Exact(uint64(i%eventsOfStream) - 1)
				if i%eventsOfStream == 0 {
					exp = eventlog.NoStream()
				}
				e := eventlog.EventData{
					ID: uuid.Must(uuid.NewV7()), Type: "BenchAppended", SchemaVersion: 1, ShopID: "shop_bench",
					OccurredAt: time.Now().UTC(), Data: payload,
					Metadata: eventlog.Metadata{CorrelationID: "req_bench", Actor: "system:bench", Source: "system"},
				}
				if _, err := l.Append(context.Background(), cfg.streamName(a, i), exp, e); err != nil {
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
		return 0, err
	}
	return elapsed, nil
}

// baselineTable has the columns and indexes of the log's events table,
// without triggers.
const baselineTable = `CREATE TABLE %s (
	position bigint PRIMARY KEY, event_id uuid NOT NULL UNIQUE, stream text NOT NULL,
	revision bigint NOT NULL, type text NOT NULL, schema_version integer NOT NULL, shop_id text NOT NULL,
	occurred_at bigint NOT NULL, recorded_at bigint NOT NULL, data bytea NOT NULL, metadata jsonb NOT NULL,
	prev_hash bytea, hash bytea NOT NULL, UNIQUE (stream, revision))`

// baseline is (b): the rows of (a) inserted by one connection into a
// plain table.
type baseline struct {
	cfg     config
	conn    *pgx.Conn
	more    []*pgx.Conn // further connections (-baseline-conns)
	table   string
	payload []byte
	last    int64             // the last position inserted
	hashes  map[string][]byte // the last hash of each stream
}

func newBaseline(cfg config, conn *pgx.Conn, schema string) *baseline {
	return &baseline{cfg: cfg, conn: conn, table: pgx.Identifier{schema, "plain_events"}.Sanitize(),
		payload: newPayload(), hashes: map[string][]byte{}}
}

func (p *baseline) create() error {
	_, err := p.conn.Exec(context.Background(), fmt.Sprintf(baselineTable, p.table))
	return err
}

// round inserts the rows of appendRound(from, per) in the order group
// commit sees them (appenders interleaved), batch rows per INSERT and
// COMMIT, and returns how long that took.
func (p *baseline) round(from, per, batch int) (time.Duration, error) {
	ctx := context.Background()
	// Every column from its own array, as a batched insert of such rows
	// would send them; the metadata as text cast to jsonb, as the log does.
	insert := `INSERT INTO ` + p.table + ` (position, event_id, stream, revision, type, schema_version, shop_id,
			occurred_at, recorded_at, data, metadata, prev_hash, hash)
		SELECT p, i, s, r, t, v, sh, o, $9, d, m::jsonb, ph, h
		FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::text[], $6::integer[], $7::text[],
			$8::bigint[], $10::bytea[], $11::text[], $12::bytea[], $13::bytea[]) AS u (p, i, s, r, t, v, sh, o, d, m, ph, h)`
	type row struct {
		stream   string
		revision int64
		prev     []byte
		hash     []byte
	}
	rows := make([]row, 0, per*p.cfg.appenders)
	for i := from; i < from+per; i++ {
		for a := range p.cfg.appenders {
			stream := p.cfg.streamName(a, i)
			hash := make([]byte, 32)
			_, _ = rand.Read(hash)
			rows = append(rows, row{stream: stream, revision: int64(i % eventsOfStream), prev: p.hashes[stream], hash: hash})
			p.hashes[stream] = hash
		}
	}
	const meta = `{"correlation_id":"req_bench","actor":"system:bench","source":"system"}`
	conns := append([]*pgx.Conn{p.conn}, p.more...)
	batches := make(chan *pgx.Batch, len(conns))
	errs := make(chan error, len(conns))
	var wg sync.WaitGroup
	start := time.Now()
	for _, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if err := conn.SendBatch(ctx, b).Close(); err != nil {
					errs <- err
					for range batches { // let the producer finish
					}
					return
				}
			}
		}()
	}
	for from := 0; from < len(rows); from += batch {
		chunk := rows[from:min(from+batch, len(rows))]
		n := len(chunk)
		pos, revs, occurred := make([]int64, n), make([]int64, n), make([]int64, n)
		ids := make([]pgtype.UUID, n)
		streams, types, shops, metas := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		versions := make([]int32, n)
		data, prevs, hashes := make([][]byte, n), make([][]byte, n), make([][]byte, n)
		now := time.Now().UnixNano()
		for i, r := range chunk {
			p.last++
			pos[i] = p.last
			ids[i] = pgtype.UUID{Bytes: uuid.Must(uuid.NewV7()), Valid: true}
			streams[i], revs[i], prevs[i], hashes[i] = r.stream, r.revision, r.prev, r.hash
			types[i], versions[i], shops[i], occurred[i], data[i], metas[i] = "BenchAppended", 1, "shop_bench", now, p.payload, meta
		}
		// A plain batched write: BEGIN, one INSERT, COMMIT, in one round trip.
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(insert, pos, ids, streams, revs, types, versions, shops, occurred, now, data, metas, prevs, hashes)
		b.Queue("COMMIT")
		batches <- b
	}
	close(batches)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// measureCatchUp is (c): a fresh Log on the schema of (a), reading it
// whole through Subscribe from 0.
func measureCatchUp(cfg config, schema string, want int) (float64, error) {
	l, err := postgres.Open(context.Background(), postgres.Config{URL: cfg.url, Schema: schema})
	if err != nil {
		return 0, err
	}
	defer l.Close()
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
		if e.Position != last+1 {
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
	batchNote := "rows per commit of (a) in each round"
	if cfg.baselineBatch > 0 {
		batchNote = fmt.Sprintf("%d rows", cfg.baselineBatch)
	}
	fmt.Fprintf(out, "PostgreSQL event log benchmark: %d events of %d B per run, %d appenders, %d runs of %d rounds (medians)\n\n",
		cfg.n/cfg.appenders/cfg.rounds*cfg.appenders*cfg.rounds, eventSize, cfg.appenders, cfg.runs, cfg.rounds)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tmedian\tmin\tmax\tunit\ttarget\t")
	fmt.Fprintf(tw, "(a) append, %d appenders, 1 KB events\t%.0f\t%.0f\t%.0f\tevents/s\t\t\n", cfg.appenders, aMed, aLo, aHi)
	fmt.Fprintf(tw, "    group-commit size\t%.1f\t%.1f\t%.1f\tevents/commit\t\t\n", gMed, gLo, gHi)
	fmt.Fprintf(tw, "(b) baseline batched INSERT (%s)\t%.0f\t%.0f\t%.0f\tevents/s\t\t\n", batchNote, bMed, bLo, bHi)
	fmt.Fprintf(tw, "(a)/(b)\t%.2f\t%.2f\t%.2f\tratio\t>= %.2f %s\t\n", rMed, rLo, rHi, targetRatio, mark(rMed >= targetRatio))
	fmt.Fprintf(tw, "(c) catch-up, Subscribe from 0\t%.0f\t%.0f\t%.0f\tevents/s\t\t\n", cMed, cLo, cHi)
	_ = tw.Flush()
	fmt.Fprintf(out, "\nsummary: append %.0f events/s (%.0f%% of the %.0f events/s baseline, %.1f events per commit), catch-up %.0f events/s; ratio target %s\n",
		aMed, rMed*100, bMed, gMed, cMed, mark(rMed >= targetRatio))
}
