package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/lease"
	"github.com/cgp-platform/cgp/lease/leasetest"
	"github.com/cgp-platform/cgp/lease/postgres"
)

// envDSN names the test server; these tests always run (PostgreSQL is up
// on every development and CI machine) and fail when it is not.
const envDSN = "CGP_TEST_POSTGRES_URL"

func testDSN() string {
	if s := os.Getenv(envDSN); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// namespace is unique to the test, so that runs sharing the server do not
// share leases.
func namespace(t *testing.T) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return t.Name() + "/" + hex.EncodeToString(b)
}

// open returns leases of ns that poll and check quickly. Those of the
// suite, where no connection breaks, settle at once; the others settle as
// in production, Check + Timeout, with a Timeout of a second.
func open(t *testing.T, ns string, settle bool) *postgres.Leases {
	t.Helper()
	cfg := postgres.Config{DSN: testDSN(), Namespace: ns, Poll: 20 * time.Millisecond, Check: 50 * time.Millisecond,
		Timeout: time.Second}
	if !settle {
		cfg.Settle = time.Millisecond
	}
	l, err := postgres.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConformance(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) (lease.Lease, lease.Lease) {
		ns := namespace(t)
		return open(t, ns, false), open(t, ns, false)
	})
}

// holdersQuery selects the sessions holding the advisory lock of key ($1).
const holdersQuery = `FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
	AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid`

// holders counts the sessions holding the advisory lock of key.
func holders(t *testing.T, key int64) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leasetest.Wait)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		t.Fatalf("connect to PostgreSQL (%s): %v", envDSN, err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) `+holdersQuery, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// terminateHolder ends the server session holding the advisory lock of
// key, as a crash of the holder's connection would.
func terminateHolder(t *testing.T, key int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leasetest.Wait)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		t.Fatalf("connect to PostgreSQL (%s): %v", envDSN, err)
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) `+holdersQuery, key).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminate the holder: %d sessions, %v", n, err)
	}
}

func TestTheOtherTakesOverWhenTheHoldersConnectionDies(t *testing.T) {
	ns := namespace(t)
	a, b := open(t, ns, true), open(t, ns, true)
	var inside atomic.Int32 // the fs running at once
	alone := func() {
		if n := inside.Add(1); n != 1 {
			t.Errorf("%d holders run at once", n)
		}
	}
	aRunning, aStopped := make(chan struct{}), make(chan error, 1)
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.Run(context.Background(), "job", func(ctx context.Context) error {
			alone()
			close(aRunning)
			<-ctx.Done()
			inside.Add(-1)
			aStopped <- context.Cause(ctx)
			return ctx.Err()
		})
	}()
	wait(t, aRunning, "a holds the lease")
	bRunning := make(chan struct{})
	bDone := make(chan error, 1)
	go func() {
		bDone <- b.Run(context.Background(), "job", func(context.Context) error {
			alone()
			defer inside.Add(-1)
			close(bRunning)
			return nil
		})
	}()

	terminateHolder(t, postgres.Key(ns, "job"))
	if cause := waitFor(t, aStopped, "a's f stops"); !errors.Is(cause, lease.ErrLost) {
		t.Fatalf("a's context ended with %v, want lease.ErrLost", cause)
	}
	if err := waitFor(t, aDone, "a's Run returns"); !errors.Is(err, lease.ErrLost) || errors.Is(err, context.Canceled) {
		t.Fatalf("a's Run = %v, want lease.ErrLost alone", err)
	}
	wait(t, bRunning, "b takes the lease over")
	if err := waitFor(t, bDone, "b's Run returns"); err != nil {
		t.Fatal(err)
	}
	// a may wait for the lease again, and has it.
	if err := a.Run(context.Background(), "job", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a again: %v", err)
	}
}

func TestFsErrorIsKeptBesideTheLoss(t *testing.T) {
	ns := namespace(t)
	a := open(t, ns, true)
	boom := errors.New("boom")
	running := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- a.Run(context.Background(), "job", func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return boom
		})
	}()
	wait(t, running, "a holds the lease")
	terminateHolder(t, postgres.Key(ns, "job"))
	if err := waitFor(t, done, "Run returns"); !errors.Is(err, lease.ErrLost) || !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want lease.ErrLost and f's error", err)
	}
}

// envHold makes the test binary a holder process: it takes the lease
// "job" of the namespace in the variable, says "held" on stdout and waits
// to be killed.
const envHold = "CGP_LEASE_TEST_HOLD"

func TestMain(m *testing.M) {
	if ns := os.Getenv(envHold); ns != "" {
		l, err := postgres.New(postgres.Config{DSN: testDSN(), Namespace: ns, Settle: time.Millisecond})
		if err == nil {
			err = l.Run(context.Background(), "job", func(ctx context.Context) error {
				fmt.Println("held")
				<-ctx.Done()
				return nil
			})
		}
		fmt.Fprintln(os.Stderr, "holder:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// A holder process killed with SIGKILL gives nothing back itself: its
// socket closes, the server ends its session and frees the lock, and the
// other holder takes the lease over.
func TestTheOtherTakesOverWhenTheHolderIsKilled(t *testing.T) {
	ns := namespace(t)
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), envHold+"="+ns)
	holder.Stderr = os.Stderr
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- line
	}()
	if line := waitFor(t, said, "the holder process takes the lease"); line != "held\n" {
		t.Fatalf("the holder process said %q", line)
	}
	if n := holders(t, postgres.Key(ns, "job")); n != 1 {
		t.Fatalf("%d sessions hold the lock, want the holder process's", n)
	}
	ran := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- open(t, ns, true).Run(context.Background(), "job", func(context.Context) error {
			close(ran)
			return nil
		})
	}()
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	wait(t, ran, "the other holder takes the lease over")
	if err := waitFor(t, done, "Run returns"); err != nil {
		t.Fatal(err)
	}
}

// signal is a log writer that tells when a line holding want was written.
type signal struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (s *signal) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if strings.Contains(s.buf.String(), s.want) {
		s.once.Do(func() { close(s.seen) })
	}
	return len(p), nil
}

func TestAnUnreachableServerIsWaitedFor(t *testing.T) {
	logs := &signal{want: "unreachable", seen: make(chan struct{})}
	secret := "s3cr3t-password"
	l, err := postgres.New(postgres.Config{DSN: "postgres://cgp:" + secret + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=1",
		Poll: 20 * time.Millisecond, Timeout: time.Second, Logger: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- l.Run(ctx, "job", func(context.Context) error {
			t.Error("f ran without the lease")
			return nil
		})
	}()
	wait(t, logs.seen, "the failure is logged")
	cancel()
	if err := waitFor(t, done, "Run returns with its ctx"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if strings.Contains(logs.buf.String(), secret) {
		t.Fatalf("the log shows the DSN's password: %s", logs.buf.String())
	}
}

// keyWebhookDelivery is FNV-1a 64 of "cgp\x00job/webhook_delivery",
// computed apart from the package.
const keyWebhookDelivery = 2321899617505209529

func TestKeyIsStable(t *testing.T) {
	// Processes of different releases must agree: the key never changes.
	if got, want := postgres.Key("cgp", "job/webhook_delivery"), postgres.Key("cgp", "job/webhook_delivery"); got != want {
		t.Fatalf("Key is not deterministic: %d, %d", got, want)
	}
	if got := postgres.Key("cgp", "job/webhook_delivery"); got != keyWebhookDelivery {
		t.Fatalf("Key(cgp, job/webhook_delivery) = %d, want %d as ever", got, keyWebhookDelivery)
	}
	if postgres.Key("a", "bc") == postgres.Key("ab", "c") {
		t.Fatal("namespace and name run together")
	}
}

func TestConfigReportsEveryProblem(t *testing.T) {
	err := postgres.Config{Poll: -1, Check: -1, Timeout: -1, Settle: -1}.Validate()
	for _, want := range []string{"DSN", "Poll", "Check", "Timeout", "Settle"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to name %s", err, want)
		}
	}
	if _, err := postgres.New(postgres.Config{DSN: "postgres://u:pw@host:notaport/db"}); err == nil || strings.Contains(err.Error(), "pw") {
		t.Fatalf("New with a bad DSN = %v, want an error that does not quote it", err)
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	waitFor(t, ch, what)
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(leasetest.Wait):
		t.Fatalf("%s: not within %s", what, leasetest.Wait)
		var zero T
		return zero
	}
}

// A connection that fails while its Run settles gives the lock up: f does
// not run on it, and Run takes the lease again on a new connection.
func TestAConnectionLostWhileSettlingIsNotRunOn(t *testing.T) {
	ns := namespace(t)
	logs := &signal{want: "the connection failed as the lease was taken", seen: make(chan struct{})}
	l, err := postgres.New(postgres.Config{DSN: testDSN(), Namespace: ns, Poll: 20 * time.Millisecond, Check: 50 * time.Millisecond,
		Settle: 3 * time.Second, Logger: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- l.Run(context.Background(), "job", func(context.Context) error {
			select {
			case <-logs.seen:
			default:
				t.Error("f ran on the connection that failed while settling")
			}
			close(ran)
			return nil
		})
	}()
	key := postgres.Key(ns, "job")
	deadline := time.Now().Add(leasetest.Wait)
	for holders(t, key) == 0 { // settling: it holds the lock, f has not run
		if time.Now().After(deadline) {
			t.Fatal("the lock was not taken")
		}
		select {
		case <-ran:
			t.Fatal("f ran before its Run settled")
		case <-time.After(10 * time.Millisecond):
		}
	}
	terminateHolder(t, key)
	wait(t, logs.seen, "the failure while settling is logged")
	wait(t, ran, "f runs once the lease is taken again")
	if err := waitFor(t, done, "Run returns"); err != nil {
		t.Fatal(err)
	}
}
