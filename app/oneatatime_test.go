package app_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/lease"
	leasepostgres "github.com/cgp-platform/cgp/lease/postgres"
)

// postgresDSN is the test server of the PostgreSQL leases: up on every
// development and CI machine, so these tests never skip.
func postgresDSN() string {
	if s := os.Getenv("CGP_TEST_POSTGRES_URL"); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// leaseWait bounds every wait: generous, nothing asserts on timing.
const leaseWait = 30 * time.Second

// server is one server's supervisor with a job of its own and the
// side-effect job "deliver", which runs on one server at a time.
type server struct {
	name string
	jobs *app.Supervisor
}

// deliverJob is the shared job: running receives the server's name when
// it starts, stopped when it stops, and inside counts the servers running
// it at once.
type deliverJob struct {
	running, stopped chan string
	inside           atomic.Int32
	t                *testing.T
}

func (d *deliverJob) run(name string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if n := d.inside.Add(1); n != 1 {
			d.t.Errorf("%d servers run the job at once", n)
		}
		d.running <- name
		<-ctx.Done()
		d.inside.Add(-1)
		d.stopped <- name
		return nil
	}
}

func startServerJobs(t *testing.T, name string, l lease.Lease, d *deliverJob, own chan<- string) *server {
	s := &server{name: name, jobs: app.NewSupervisor(zerolog.Nop())}
	s.jobs.Add("own", func(ctx context.Context) error {
		own <- name
		<-ctx.Done()
		return nil
	})
	s.jobs.Add("deliver", app.OneAtATime(l, app.JobLease("deliver"), zerolog.Nop(), d.run(name)))
	s.jobs.Start(context.Background())
	return s
}

func (s *server) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leaseWait)
	defer cancel()
	if err := s.jobs.Stop(ctx); err != nil {
		t.Errorf("server %s stopped with %v", s.name, err)
	}
}

func next(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(leaseWait):
		t.Fatalf("%s: not within %s", what, leaseWait)
		return ""
	}
}

// Two servers share the PostgreSQL leases: each runs its own jobs, the
// side-effect job runs on one of them; when the holder's lease connection
// dies the job stops there and runs again on one server; when that server
// stops, the other takes the job over.
func TestOneServerRunsASideEffectJobAndTheOtherTakesItOver(t *testing.T) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	ns := t.Name() + "/" + hex.EncodeToString(b)
	open := func() lease.Lease {
		// Quick polls and checks; a new holder settles as in production,
		// Check + Timeout, before it runs the job.
		l, err := leasepostgres.New(leasepostgres.Config{DSN: postgresDSN(), Namespace: ns, Poll: 20 * time.Millisecond,
			Check: 50 * time.Millisecond, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	d := &deliverJob{running: make(chan string, 4), stopped: make(chan string, 4), t: t}
	own := make(chan string, 2)
	servers := map[string]*server{}
	for _, name := range []string{"a", "b"} {
		servers[name] = startServerJobs(t, name, open(), d, own)
	}
	defer func() {
		for _, s := range servers {
			s.stop(t)
		}
	}()
	mine := []string{next(t, own, "a server's own job runs"), next(t, own, "the other server's own job runs")}
	if slices.Sort(mine); !slices.Equal(mine, []string{"a", "b"}) {
		t.Fatalf("own jobs ran on %v, want both servers", mine)
	}
	first := next(t, d.running, "the side-effect job runs on a server")

	// The holder's lease connection dies: its job stops, and the job runs
	// again on one server (either may win the lock).
	terminateLeaseHolder(t, leasepostgres.Key(ns, app.JobLease("deliver")))
	if got := next(t, d.stopped, "the job stops where the lease was lost"); got != first {
		t.Fatalf("the job stopped on %s, want %s", got, first)
	}
	holder := next(t, d.running, "the job runs again after the loss")

	// The holder stops (its context ends, as at shutdown): the other
	// server takes the job over.
	servers[holder].stop(t)
	delete(servers, holder)
	if got := next(t, d.stopped, "the job stops with its server"); got != holder {
		t.Fatalf("the job stopped on %s, want %s", got, holder)
	}
	other := map[string]string{"a": "b", "b": "a"}[holder]
	if got := next(t, d.running, "the other server takes the job over"); got != other {
		t.Fatalf("the job runs on %s, want %s", got, other)
	}
}

// terminateLeaseHolder ends the PostgreSQL session holding the advisory
// lock of key, as a broken connection would.
func terminateLeaseHolder(t *testing.T, key int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leaseWait)
	defer cancel()
	conn, err := pgx.Connect(ctx, postgresDSN())
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		  AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid`, key).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminate the lease holder: %d sessions, %v", n, err)
	}
}

// A job's lease is waited for, not failed, while another holds it, and a
// job that is off stays off.
func TestOneAtATimeWaitsAndStopsWithItsContext(t *testing.T) {
	l := lease.NewLocal()
	if app.OneAtATime(l, "off", zerolog.Nop(), nil) != nil {
		t.Fatal("a job that is off is on under a lease")
	}
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = l.Run(context.Background(), app.JobLease("deliver"), func(context.Context) error {
			close(held)
			<-release
			return nil
		})
	}()
	select {
	case <-held:
	case <-time.After(leaseWait):
		t.Fatal("the lease is not held")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.OneAtATime(l, app.JobLease("deliver"), zerolog.Nop(), func(context.Context) error {
			t.Error("the job ran while the lease was held elsewhere")
			return nil
		})(ctx)
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a job stopped while waiting for its lease = %v, want nil", err)
		}
	case <-time.After(leaseWait):
		t.Fatal("the job did not stop with its context")
	}
	close(release)
}

// The jobs that perform side effects outside the log run on one server at
// a time; those whose work is each server's own run on every server.
func TestSideEffectJobsRunOnOneServer(t *testing.T) {
	var one, every []string
	for _, m := range app.Modules() {
		for _, j := range m.Jobs {
			if j.Runs == app.OnOneServer {
				one = append(one, j.Name)
			} else {
				every = append(every, j.Name)
			}
		}
	}
	slices.Sort(one)
	slices.Sort(every)
	wantOne := []string{"concierge_answers", "data_exports", "di_schedule", "image_operations", "message_sending", "notifications",
		"platform_reconsent", "platform_webhooks", "webhook_delivery"}
	wantEvery := []string{"brute_force_alerts", "erasure_followups", "image_retention", "projections", "read_model_versions", "retention",
		"token_last_use", "warehouse", "webhook_fanout"}
	if !slices.Equal(one, wantOne) || !slices.Equal(every, wantEvery) {
		t.Fatalf("on one server %v, on every server %v; want %v and %v", one, every, wantOne, wantEvery)
	}
}

// A job's own failure ends it, as without a lease: it is not run again.
func TestOneAtATimeReturnsTheJobsFailure(t *testing.T) {
	boom := errors.New("store gone")
	runs := 0
	err := app.OneAtATime(lease.NewLocal(), app.JobLease("deliver"), zerolog.Nop(), func(context.Context) error {
		runs++
		return boom
	})(context.Background())
	if !errors.Is(err, boom) || runs != 1 {
		t.Fatalf("OneAtATime = %v after %d runs, want the job's failure after one", err, runs)
	}
}
