package idempotencytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/idempotency"
)

// Config is what the suite asks of an adapter for one backend.
type Config struct {
	// Lease is the lease of a claim in progress.
	Lease time.Duration
	// Window is how long a record lives from its first claim.
	Window time.Duration
	// Now is the suite's clock. Adapters that keep time themselves (Redis
	// expiries) ignore it and set Backend.RealTime.
	Now func() time.Time
}

// Backend is one fresh, empty backing store for one test.
type Backend struct {
	// Open opens one more store instance over the backend, as another
	// server would (a new connection pool on the same file, a new client of
	// the same Redis with the same key prefix). The adapter closes every
	// instance and cleans the backend up in the test's Cleanup.
	Open func() idempotency.Store
	// RealTime reports that the adapter ignores Config.Now: the suite then
	// waits, with a deadline, for leases and windows to pass instead of
	// advancing its clock, and uses short durations for those tests.
	RealTime bool
}

// Opener makes a fresh backend configured by cfg.
type Opener func(tb testing.TB, cfg Config) Backend

// Durations the suite uses: long ones where nothing must expire during a
// test, short ones where an adapter on real time must see a lease or a
// window pass.
const (
	longLease     = time.Minute
	longWindow    = time.Hour
	realTimeLease = 250 * time.Millisecond
	realWindow    = time.Second
	waitDeadline  = 10 * time.Second
	racers        = 32
)

// Run runs the contract suite against the adapter that open makes. It
// opens one backend first only to learn Backend.RealTime.
func Run(t *testing.T, open Opener) {
	s := suite{open: open, realTime: open(t, Config{Lease: longLease, Window: longWindow, Now: time.Now}).RealTime}
	t.Run("ClaimCompleteReplay", s.testClaimCompleteReplay)
	t.Run("EmptyResponse", s.testEmptyResponse)
	t.Run("Mismatch", s.testMismatch)
	t.Run("ScopesAndKeysAreIndependent", s.testIndependent)
	t.Run("Release", s.testRelease)
	t.Run("ForeignClaims", s.testForeignClaims)
	t.Run("InvalidArguments", s.testInvalid)
	t.Run("CancelledContext", s.testCancelled)
	t.Run("LeaseTakeover", s.testLeaseTakeover)
	t.Run("ExpiryAfterWindow", s.testExpiry)
	t.Run("TwoServersRaceOneKey", s.testRaceOneKey)
	t.Run("TwoServersRaceTakeover", s.testRaceTakeover)
	t.Run("ManyKeysConcurrently", s.testManyKeys)
	t.Run("ForgetErasedSubject", s.testForget)
}

type suite struct {
	open     Opener
	realTime bool
}

// lease and window are the durations of the tests that wait for them to
// pass: short on real time, long (and advanced by the clock) otherwise.
func (s suite) lease() time.Duration {
	if s.realTime {
		return realTimeLease
	}
	return longLease
}

func (s suite) window() time.Duration {
	if s.realTime {
		return realWindow
	}
	return longWindow
}

// env is one test's backend, clock and first store instance.
type env struct {
	backend Backend
	clock   *Clock
	store   idempotency.Store
}

func newEnv(tb testing.TB, open Opener, lease, window time.Duration) *env {
	tb.Helper()
	clock := NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	b := open(tb, Config{Lease: lease, Window: window, Now: clock.Now})
	return &env{backend: b, clock: clock, store: b.Open()}
}

// fp makes a distinct, well-formed fingerprint.
func fp(name string) string { return idempotency.Fingerprint(http.MethodPost, "/api/v1/"+name, nil) }

func begin(t testing.TB, s idempotency.Store, scope, key, fingerprint string, want idempotency.Outcome) idempotency.Claim {
	t.Helper()
	c, err := s.Begin(context.Background(), scope, key, fingerprint)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if c.Outcome != want {
		t.Fatalf("Begin = %v, want %v", c.Outcome, want)
	}
	if c.Scope != scope || c.Key != key || c.Fingerprint != fingerprint {
		t.Fatalf("Begin echoed scope/key/fingerprint %q/%q/%q, want the arguments", c.Scope, c.Key, c.Fingerprint)
	}
	if (want == idempotency.Started) != (c.Token != "") {
		t.Fatalf("Begin %v with token %q: a token comes with Started only", c.Outcome, c.Token)
	}
	return c
}

func sampleResponse(tag string) idempotency.Response {
	body := append([]byte(`{"data":{"id":"cmp_`+tag+`"}}`), 0, 0xff, '\n')
	return idempotency.Response{
		Status: http.StatusCreated,
		Header: http.Header{
			"Content-Type":     {"application/json"},
			"Location":         {"/api/v1/campaigns/cmp_" + tag},
			"X-Event-Position": {"42"},
			"Vary":             {"Accept", "Accept-Encoding"},
		},
		Body: body,
	}
}

func equalResponse(t testing.TB, got, want idempotency.Response) {
	t.Helper()
	if got.Status != want.Status {
		t.Errorf("status = %d, want %d", got.Status, want.Status)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("body = %q, want %q", got.Body, want.Body)
	}
	if len(got.Header) != len(want.Header) {
		t.Errorf("header = %v, want %v", got.Header, want.Header)
	}
	for k, vs := range want.Header {
		if fmt.Sprint(got.Header[k]) != fmt.Sprint(vs) {
			t.Errorf("header %s = %q, want %q", k, got.Header[k], vs)
		}
	}
}

func (s suite) testClaimCompleteReplay(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	ctx := context.Background()
	c := begin(t, e.store, "tok_a", "key-1", fp("a"), idempotency.Started)
	if c.TakenOver {
		t.Fatal("a fresh claim reports TakenOver")
	}
	begin(t, e.store, "tok_a", "key-1", fp("a"), idempotency.InProgress)

	resp := sampleResponse("1")
	if err := e.store.Complete(ctx, c, resp); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	// The stored response is a copy: changing the caller's afterwards
	// changes nothing.
	resp.Body[0] = 'X'
	resp.Header.Set("Location", "/elsewhere")
	want := sampleResponse("1")

	r := begin(t, e.store, "tok_a", "key-1", fp("a"), idempotency.Replay)
	equalResponse(t, r.Response, want)
	other := e.backend.Open()
	r = begin(t, other, "tok_a", "key-1", fp("a"), idempotency.Replay)
	equalResponse(t, r.Response, want)

	if err := e.store.Complete(ctx, c, sampleResponse("2")); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("second Complete = %v, want ErrClaimLost", err)
	}
	if err := e.store.Release(ctx, c); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("Release after Complete = %v, want ErrClaimLost", err)
	}
	r = begin(t, other, "tok_a", "key-1", fp("a"), idempotency.Replay)
	equalResponse(t, r.Response, want)
}

func (s suite) testEmptyResponse(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	c := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Started)
	if err := e.store.Complete(context.Background(), c, idempotency.Response{Status: http.StatusNoContent}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Replay)
	if r.Response.Status != http.StatusNoContent || len(r.Response.Body) != 0 || len(r.Response.Header) != 0 {
		t.Fatalf("replay = %+v, want a bare 204", r.Response)
	}
}

func (s suite) testMismatch(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	c := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Started)
	// While the first request runs, another request with the key is a
	// misuse of the key, not a wait.
	begin(t, e.store, "tok_a", "k", fp("b"), idempotency.Mismatch)
	if err := e.store.Complete(context.Background(), c, sampleResponse("a")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	begin(t, e.store, "tok_a", "k", fp("b"), idempotency.Mismatch)
	begin(t, e.backend.Open(), "tok_a", "k", fp("b"), idempotency.Mismatch)
	r := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Replay)
	equalResponse(t, r.Response, sampleResponse("a"))
}

func (s suite) testIndependent(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	ctx := context.Background()
	a := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Started)
	b := begin(t, e.store, "tok_b", "k", fp("b"), idempotency.Started)
	k2 := begin(t, e.store, "tok_a", "k2", fp("b"), idempotency.Started)
	// Keys that a naive concatenation of scope and key would confuse.
	x := begin(t, e.store, "tok_a:", "x", fp("x"), idempotency.Started)
	y := begin(t, e.store, "tok_a", ":x", fp("y"), idempotency.Started)
	for i, c := range []idempotency.Claim{a, b, k2, x, y} {
		if err := e.store.Complete(ctx, c, sampleResponse(fmt.Sprint(i))); err != nil {
			t.Fatalf("Complete %d: %v", i, err)
		}
	}
	for i, c := range []idempotency.Claim{a, b, k2, x, y} {
		r := begin(t, e.store, c.Scope, c.Key, c.Fingerprint, idempotency.Replay)
		equalResponse(t, r.Response, sampleResponse(fmt.Sprint(i)))
	}
	// Keys are exact: no case folding, no trimming.
	begin(t, e.store, "tok_a", "K", fp("a"), idempotency.Started)
	begin(t, e.store, "TOK_A", "k", fp("a"), idempotency.Started)
}

func (s suite) testRelease(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	ctx := context.Background()
	first := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Started)
	if err := e.store.Release(ctx, first); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Released means forgotten: even another request may use the key now.
	second := begin(t, e.backend.Open(), "tok_a", "k", fp("b"), idempotency.Started)
	if second.Token == first.Token {
		t.Fatal("a new claim reused the released claim's token")
	}
	if err := e.store.Release(ctx, first); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("Release of a released claim = %v, want ErrClaimLost", err)
	}
	if err := e.store.Complete(ctx, first, sampleResponse("a")); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("Complete of a released claim = %v, want ErrClaimLost", err)
	}
	begin(t, e.store, "tok_a", "k", fp("b"), idempotency.InProgress)
	if err := e.store.Complete(ctx, second, sampleResponse("b")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	begin(t, e.store, "tok_a", "k", fp("b"), idempotency.Replay)
}

func (s suite) testForeignClaims(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	ctx := context.Background()
	c := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Started)

	forged := c
	forged.Token = c.Token + "x"
	notStarted := c
	notStarted.Outcome = idempotency.InProgress
	otherScope := c
	otherScope.Scope = "tok_b"
	for name, bad := range map[string]idempotency.Claim{
		"forged token": forged, "not started": notStarted, "other scope": otherScope,
		"zero": {},
	} {
		if err := e.store.Complete(ctx, bad, sampleResponse("bad")); !errors.Is(err, idempotency.ErrClaimLost) {
			t.Errorf("Complete(%s) = %v, want ErrClaimLost", name, err)
		}
		if err := e.store.Release(ctx, bad); !errors.Is(err, idempotency.ErrClaimLost) {
			t.Errorf("Release(%s) = %v, want ErrClaimLost", name, err)
		}
	}
	begin(t, e.store, "tok_a", "k", fp("a"), idempotency.InProgress)
	if err := e.store.Complete(ctx, c, sampleResponse("good")); err != nil {
		t.Fatalf("Complete by the owner: %v", err)
	}
	r := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Replay)
	equalResponse(t, r.Response, sampleResponse("good"))
}

func (s suite) testInvalid(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	ctx := context.Background()
	for name, args := range map[string][3]string{
		"empty scope":       {"", "k", fp("a")},
		"empty key":         {"tok_a", "", fp("a")},
		"long key":          {"tok_a", strings.Repeat("k", idempotency.MaxKeyLength+1), fp("a")},
		"control character": {"tok_a", "k\n", fp("a")},
		"empty fingerprint": {"tok_a", "k", ""},
	} {
		if _, err := e.store.Begin(ctx, args[0], args[1], args[2]); !errors.Is(err, idempotency.ErrInvalid) {
			t.Errorf("Begin(%s) = %v, want ErrInvalid", name, err)
		}
	}
	longest := strings.Repeat("é", idempotency.MaxKeyLength)
	c := begin(t, e.store, "tok_a", longest, fp("a"), idempotency.Started)
	if err := e.store.Complete(ctx, c, idempotency.Response{Status: 99}); !errors.Is(err, idempotency.ErrInvalid) {
		t.Fatalf("Complete with status 99 = %v, want ErrInvalid", err)
	}
	// A refused Complete leaves the claim with its owner.
	begin(t, e.store, "tok_a", longest, fp("a"), idempotency.InProgress)
	if err := e.store.Complete(ctx, c, sampleResponse("a")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	begin(t, e.store, "tok_a", longest, fp("a"), idempotency.Replay)
}

func (s suite) testCancelled(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.store.Begin(ctx, "tok_a", "k", fp("a")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin with a cancelled context = %v, want context.Canceled", err)
	}
	// Nothing was claimed.
	c := begin(t, e.store, "tok_a", "k", fp("b"), idempotency.Started)
	if err := e.store.Complete(ctx, c, sampleResponse("a")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete with a cancelled context = %v, want context.Canceled", err)
	}
	if err := e.store.Release(ctx, c); !errors.Is(err, context.Canceled) {
		t.Fatalf("Release with a cancelled context = %v, want context.Canceled", err)
	}
	begin(t, e.store, "tok_a", "k", fp("b"), idempotency.InProgress)
}

// eventuallyBegin calls Begin until it answers want or the deadline passes.
func eventuallyBegin(t testing.TB, s idempotency.Store, scope, key, fingerprint string, want idempotency.Outcome) idempotency.Claim {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := s.Begin(context.Background(), scope, key, fingerprint)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if c.Outcome == want {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("Begin still answers %v after %v, want %v", c.Outcome, waitDeadline, want)
		}
		<-tick.C
	}
}

func (s suite) testLeaseTakeover(t *testing.T) {
	lease := s.lease()
	e := newEnv(t, s.open, lease, longWindow)
	ctx := context.Background()
	slow := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Started)
	other := e.backend.Open()
	if !e.backend.RealTime {
		e.clock.Advance(lease - time.Millisecond)
		begin(t, other, "tok_a", "k", fp("a"), idempotency.InProgress)
		e.clock.Advance(time.Millisecond)
	}
	// Even after the lease, the key stays bound to its fingerprint.
	if c, err := other.Begin(ctx, "tok_a", "k", fp("b")); err != nil || c.Outcome != idempotency.Mismatch {
		t.Fatalf("Begin with another fingerprint = %v, %v; want Mismatch", c.Outcome, err)
	}
	taker := eventuallyBegin(t, other, "tok_a", "k", fp("a"), idempotency.Started)
	if !taker.TakenOver {
		t.Fatal("a takeover does not report TakenOver")
	}
	if taker.Token == slow.Token {
		t.Fatal("the takeover kept the expired claim's token")
	}
	// The slow first request comes back: it must not overwrite or free the
	// newer claim.
	if err := e.store.Complete(ctx, slow, sampleResponse("slow")); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("Complete of the expired claim = %v, want ErrClaimLost", err)
	}
	if err := e.store.Release(ctx, slow); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("Release of the expired claim = %v, want ErrClaimLost", err)
	}
	if err := other.Complete(ctx, taker, sampleResponse("taker")); err != nil {
		t.Fatalf("Complete by the new owner: %v", err)
	}
	r := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Replay)
	equalResponse(t, r.Response, sampleResponse("taker"))
	// A stored response has no lease: it is replayed however late.
	if !e.backend.RealTime {
		e.clock.Advance(10 * lease)
		begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Replay)
	}
}

func (s suite) testExpiry(t *testing.T) {
	window := s.window()
	e := newEnv(t, s.open, longLease, window)
	ctx := context.Background()
	done := begin(t, e.store, "tok_a", "done", fp("a"), idempotency.Started)
	if err := e.store.Complete(ctx, done, sampleResponse("a")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	// A claim in progress whose server died also goes when the window does.
	begin(t, e.store, "tok_a", "running", fp("a"), idempotency.Started)
	start := time.Now()
	r, err := e.store.Begin(ctx, "tok_a", "done", fp("a"))
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if r.Outcome != idempotency.Replay && time.Since(start) < window/2 {
		t.Fatalf("Begin within the window = %v, want Replay", r.Outcome)
	}
	if !e.backend.RealTime {
		e.clock.Advance(window - time.Millisecond)
		begin(t, e.store, "tok_a", "done", fp("a"), idempotency.Replay)
		begin(t, e.store, "tok_a", "done", fp("b"), idempotency.Mismatch)
		e.clock.Advance(time.Millisecond)
	}
	// Past the window the key is free again, for any request.
	fresh := eventuallyBegin(t, e.backend.Open(), "tok_a", "done", fp("b"), idempotency.Started)
	if fresh.TakenOver {
		t.Fatal("a claim on an expired record reports TakenOver")
	}
	running := eventuallyBegin(t, e.store, "tok_a", "running", fp("b"), idempotency.Started)
	if err := e.store.Complete(ctx, fresh, sampleResponse("b")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := e.store.Complete(ctx, running, sampleResponse("c")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r = begin(t, e.store, "tok_a", "done", fp("b"), idempotency.Replay)
	equalResponse(t, r.Response, sampleResponse("b"))
}

// race runs n goroutines calling Begin on alternating store instances and
// counts the outcomes.
func race(t *testing.T, stores []idempotency.Store, n int, fn func(st idempotency.Store) (idempotency.Claim, error)) (map[idempotency.Outcome]int, []idempotency.Claim) {
	t.Helper()
	var (
		mu     sync.Mutex
		counts = map[idempotency.Outcome]int{}
		won    []idempotency.Claim
		errs   []error
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, err := fn(stores[i%len(stores)])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			counts[c.Outcome]++
			if c.Outcome == idempotency.Started {
				won = append(won, c)
			}
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("racing Begin: %v", err)
	}
	return counts, won
}

func (s suite) testRaceOneKey(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	stores := []idempotency.Store{e.store, e.backend.Open()}
	beginOne := func(st idempotency.Store) (idempotency.Claim, error) {
		return st.Begin(context.Background(), "tok_a", "k", fp("a"))
	}
	counts, won := race(t, stores, racers, beginOne)
	if counts[idempotency.Started] != 1 || counts[idempotency.InProgress] != racers-1 {
		t.Fatalf("outcomes of %d racers = %v, want 1 started and the rest in progress", racers, counts)
	}
	if err := e.store.Complete(context.Background(), won[0], sampleResponse("a")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	counts, _ = race(t, stores, racers, beginOne)
	if counts[idempotency.Replay] != racers {
		t.Fatalf("outcomes after Complete = %v, want %d replays", counts, racers)
	}
}

func (s suite) testRaceTakeover(t *testing.T) {
	lease := s.lease()
	e := newEnv(t, s.open, lease, longWindow)
	stores := []idempotency.Store{e.store, e.backend.Open()}
	dead := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Started)
	e.clock.Advance(lease)
	// Every racer tries until the key is answered for: the one that takes
	// it over completes it at once, and the others then replay.
	counts, _ := race(t, stores, racers, func(st idempotency.Store) (idempotency.Claim, error) {
		deadline := time.Now().Add(waitDeadline)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			c, err := st.Begin(context.Background(), "tok_a", "k", fp("a"))
			if err != nil || c.Outcome != idempotency.InProgress || time.Now().After(deadline) {
				if err == nil && c.Outcome == idempotency.Started {
					err = st.Complete(context.Background(), c, sampleResponse("taker"))
				}
				return c, err
			}
			<-tick.C
		}
	})
	if counts[idempotency.Started] != 1 || counts[idempotency.Replay] != racers-1 {
		t.Fatalf("outcomes of %d racers after the lease = %v, want 1 started and the rest replays", racers, counts)
	}
	if err := e.store.Complete(context.Background(), dead, sampleResponse("dead")); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("Complete of the expired claim = %v, want ErrClaimLost", err)
	}
	r := begin(t, e.store, "tok_a", "k", fp("a"), idempotency.Replay)
	equalResponse(t, r.Response, sampleResponse("taker"))
}

func (s suite) testManyKeys(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	stores := []idempotency.Store{e.store, e.backend.Open()}
	var next int
	var mu sync.Mutex
	counts, won := race(t, stores, racers, func(st idempotency.Store) (idempotency.Claim, error) {
		mu.Lock()
		next++
		key := fmt.Sprintf("key-%d", next)
		mu.Unlock()
		c, err := st.Begin(context.Background(), "tok_a", key, fp("a"))
		if err == nil && c.Outcome == idempotency.Started {
			err = st.Complete(context.Background(), c, sampleResponse(key))
		}
		return c, err
	})
	if counts[idempotency.Started] != racers {
		t.Fatalf("outcomes of %d distinct keys = %v, want all started", racers, counts)
	}
	for _, c := range won {
		r := begin(t, stores[1], c.Scope, c.Key, c.Fingerprint, idempotency.Replay)
		equalResponse(t, r.Response, sampleResponse(c.Key))
	}
}

// testForget: every store forgets (idempotency.Forgetter): it deletes the
// stored answers naming an erased subject, only those; a request with
// their key then runs again.
func (s suite) testForget(t *testing.T) {
	e := newEnv(t, s.open, longLease, longWindow)
	f, ok := e.store.(idempotency.Forgetter)
	if !ok {
		t.Fatal("the store cannot forget answers: every store must, for GDPR erasure (idempotency.Forgetter)")
	}
	ctx := context.Background()
	for _, tag := range []string{"cus_gone1", "cus_kept1"} {
		c := begin(t, e.store, "tok_a", "key-"+tag, fp(tag), idempotency.Started)
		if err := e.store.Complete(ctx, c, sampleResponse(tag)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := f.Forget(ctx, "cus_gone1", "")
	if err != nil || n != 1 {
		t.Fatalf("Forget = %d, %v; want 1 answer forgotten", n, err)
	}
	begin(t, e.store, "tok_a", "key-cus_gone1", fp("cus_gone1"), idempotency.Started)
	r := begin(t, e.store, "tok_a", "key-cus_kept1", fp("cus_kept1"), idempotency.Replay)
	equalResponse(t, r.Response, sampleResponse("cus_kept1"))
	if n, err := f.Forget(ctx, "cus_nobody"); err != nil || n != 0 {
		t.Fatalf("Forget of an unknown subject = %d, %v", n, err)
	}
}
