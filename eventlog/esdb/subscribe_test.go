package esdb

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cgp-platform/cgp/eventlog"
)

func TestBackoff(t *testing.T) {
	b := backoff{min: 10 * time.Millisecond, max: 80 * time.Millisecond}
	var got []time.Duration
	for range 6 {
		got = append(got, b.next())
	}
	want := []time.Duration{10, 20, 40, 80, 80, 80}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	b.reset()
	if d := b.next(); d != 10*time.Millisecond {
		t.Errorf("after reset %s, want the minimum", d)
	}
	// A maximum that is not a power-of-two multiple of the minimum is
	// reached exactly, and min == max stays put.
	b = backoff{min: 30 * time.Millisecond, max: 100 * time.Millisecond}
	for _, w := range []time.Duration{30, 60, 100, 100} {
		if d := b.next(); d != w*time.Millisecond {
			t.Errorf("delay %s, want %s", d, w*time.Millisecond)
		}
	}
	b = backoff{min: time.Second, max: time.Second}
	if b.next() != time.Second || b.next() != time.Second {
		t.Error("fixed backoff moved")
	}
}

// script is a fake subscription: it hands out its notifications, then
// blocks until closed or its context ends (the client's subscriptions live
// in the context they were made with) and reports a drop.
type script struct {
	notes  []*es.SubscriptionEvent
	closed chan struct{}
	once   sync.Once
	ctx    context.Context // set when handed out
}

func newScript(notes ...*es.SubscriptionEvent) *script {
	return &script{notes: notes, closed: make(chan struct{})}
}

func (s *script) Recv() *es.SubscriptionEvent {
	if len(s.notes) > 0 {
		n := s.notes[0]
		s.notes = s.notes[1:]
		return n
	}
	select {
	case <-s.closed:
	case <-s.ctx.Done():
	}
	return &es.SubscriptionEvent{SubscriptionDropped: &es.SubscriptionDropped{Error: errors.New("subscription has been dropped")}}
}

func (s *script) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// rec is a notification of one of our events at (pos, pos).
func rec(t *testing.T, stream string, rev, pos uint64) *es.SubscriptionEvent {
	t.Helper()
	e := chainEvent(stream, rev, nil, eventlog.EventData{ID: uuid.New(), Type: "Happened", OccurredAt: testNow})
	d, err := toEventData(&e)
	if err != nil {
		t.Fatal(err)
	}
	r := recorded(stream, rev, pos, d)
	return &es.SubscriptionEvent{EventAppeared: &es.ResolvedEvent{Event: r}}
}

// system is a notification of a server event at (pos, pos).
func system(stream, typ string, pos uint64) *es.SubscriptionEvent {
	return &es.SubscriptionEvent{EventAppeared: &es.ResolvedEvent{Event: &es.RecordedEvent{
		EventID: uuid.New(), EventType: typ, StreamID: stream,
		Position: es.Position{Commit: pos, Prepare: pos}, CreatedDate: testNow,
	}}}
}

func dropped(err error) *es.SubscriptionEvent {
	return &es.SubscriptionEvent{SubscriptionDropped: &es.SubscriptionDropped{Error: err}}
}

var caughtUp = &es.SubscriptionEvent{CaughtUp: &es.Subscription{}}

// harness runs a runner against scripted sources.
type harness struct {
	t       *testing.T
	r       *runner
	out     chan eventlog.Event
	mu      sync.Mutex
	sources []*script // handed out by subscribe, in order
	fails   []error   // returned by subscribe before the next source
	froms   []es.AllPosition
	delays  []time.Duration
}

func newHarness(t *testing.T, after eventlog.Position, sources ...*script) *harness {
	h := &harness{t: t, out: make(chan eventlog.Event, 100), sources: sources}
	h.r = &runner{
		subscribe: h.subscribe,
		codec:     testCodec(""),
		sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.delays = append(h.delays, d)
			h.mu.Unlock()
			return ctx.Err()
		},
		backoff: backoff{min: 10 * time.Millisecond, max: 40 * time.Millisecond},
		cursor:  newCursor(after),
		out:     h.out,
	}
	return h
}

func (h *harness) subscribe(ctx context.Context, from es.AllPosition) (source, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.froms = append(h.froms, from)
	if len(h.fails) > 0 {
		err := h.fails[0]
		h.fails = h.fails[1:]
		return nil, err
	}
	if len(h.sources) == 0 {
		return nil, status.Error(codes.Unavailable, "no more scripted sources")
	}
	s := h.sources[0]
	h.sources = h.sources[1:]
	s.ctx = ctx
	return s, nil
}

// run starts the runner from its first source and returns a function that
// waits for its result.
func (h *harness) run(ctx context.Context) func() error {
	h.mu.Lock()
	h.froms = append(h.froms, h.r.cursor.from())
	first := h.sources[0]
	h.sources = h.sources[1:]
	first.ctx = ctx
	h.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- h.r.run(ctx, first) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			h.t.Fatal("runner did not return")
			return nil
		}
	}
}

// receive takes n events from the runner, with a deadline.
func (h *harness) receive(n int) []eventlog.Position {
	h.t.Helper()
	var got []eventlog.Position
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case e := <-h.out:
			got = append(got, e.Position)
		case <-deadline:
			h.t.Fatalf("received %v, want %d events", got, n)
		}
	}
	return got
}

func TestRunnerResubscribesWithoutGapOrDuplicate(t *testing.T) {
	transient := status.Error(codes.Unavailable, "node restarting")
	h := newHarness(t, 0,
		newScript(rec(t, "a-1", 0, 100), system("$stats-x", "$statsCollected", 150), rec(t, "a-1", 1, 200), dropped(transient)),
		// The server re-sends the last event handled and a system event
		// before new ones; then drops again.
		newScript(rec(t, "a-1", 1, 200), caughtUp, rec(t, "b-1", 0, 300), system("$projections-x", "Updated", 350), dropped(transient)),
		newScript(rec(t, "b-1", 1, 400)),
	)
	ctx, cancel := context.WithCancel(context.Background())
	wait := h.run(ctx)
	got := h.receive(4)
	if want := []eventlog.Position{100, 200, 300, 400}; !reflect.DeepEqual(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("run after cancel = %v, want nil", err)
	}
	select {
	case e := <-h.out:
		t.Errorf("extra event at %d", e.Position)
	default:
	}
	wantFroms := []es.AllPosition{es.Start{}, es.Position{Commit: 200, Prepare: 200}, es.Position{Commit: 350, Prepare: 350}}
	if !reflect.DeepEqual(h.froms, wantFroms) {
		t.Errorf("subscribed from %v, want %v", h.froms, wantFroms)
	}
	// Each source delivered before dropping, so each wait is the minimum.
	if want := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}; !reflect.DeepEqual(h.delays, want) {
		t.Errorf("waited %v, want %v", h.delays, want)
	}
}

func TestRunnerBacksOffWhileTheServerIsDown(t *testing.T) {
	down := status.Error(codes.Unavailable, "connection refused")
	h := newHarness(t, 250,
		newScript(dropped(down)),
		newScript(rec(t, "a-1", 3, 300), dropped(down)),
		newScript(rec(t, "a-1", 4, 400)),
	)
	h.fails = []error{down, down, down, down}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := h.run(ctx)
	if got := h.receive(1); got[0] != 300 {
		t.Fatalf("delivered %v, want 300", got)
	}
	if got := h.receive(1); got[0] != 400 {
		t.Fatalf("delivered %v, want 400", got)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("run = %v", err)
	}
	ms := time.Millisecond
	// Five failures in a row double up to the cap; after an event the
	// next drop starts from the minimum again.
	if want := []time.Duration{10 * ms, 20 * ms, 40 * ms, 40 * ms, 40 * ms, 10 * ms}; !reflect.DeepEqual(h.delays, want) {
		t.Errorf("waited %v, want %v", h.delays, want)
	}
	last := es.Position{Commit: 250, Prepare: 250}
	for i, f := range h.froms[:6] {
		if f != last {
			t.Errorf("attempt %d subscribed from %v, want the caller's %v", i, f, last)
		}
	}
	if h.froms[6] != (es.Position{Commit: 300, Prepare: 300}) {
		t.Errorf("after delivering 300 resubscribed from %v", h.froms[6])
	}
}

func TestRunnerEndsOnPermanentFailures(t *testing.T) {
	cases := []struct {
		name   string
		source *script
		fails  []error
		want   string
	}{
		{"access denied drop", newScript(dropped(status.Error(codes.PermissionDenied, "Access Denied"))), nil, "Access Denied"},
		{"access denied on resubscribe", newScript(dropped(status.Error(codes.Unavailable, "x"))), []error{status.Error(codes.PermissionDenied, "Access Denied")}, "Access Denied"},
		{"undecodable event", newScript(&es.SubscriptionEvent{EventAppeared: &es.ResolvedEvent{Event: &es.RecordedEvent{
			EventID: uuid.New(), EventType: "Foreign", StreamID: "a-1", Position: es.Position{Commit: 10, Prepare: 10},
			UserMetadata: []byte("not json"),
		}}}), nil, "not a cgp envelope"},
		{"unknown position", newScript(&es.SubscriptionEvent{EventAppeared: &es.ResolvedEvent{Event: &es.RecordedEvent{
			EventID: uuid.New(), EventType: "Happened", StreamID: "a-1", Position: es.Position{Commit: ^uint64(0), Prepare: ^uint64(0)},
		}}}), nil, "no $all position"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0, tc.source)
			h.fails = tc.fails
			err := h.run(context.Background())()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestRunnerRetreatsFromAnInvalidStart(t *testing.T) {
	invalid := status.Error(codes.InvalidArgument, "Trying to read from an invalid position.")
	// The caller asks for events after 1001, inside the record at 1000: the
	// server confirms, then refuses; the runner starts again from the log
	// start at once and skips up to 1001.
	h := newHarness(t, 1001,
		newScript(dropped(invalid)),
		newScript(rec(t, "a-1", 0, 1000), rec(t, "a-1", 1, 1200), rec(t, "a-1", 2, 1400)),
	)
	ctx, cancel := context.WithCancel(context.Background())
	wait := h.run(ctx)
	if got := h.receive(2); !reflect.DeepEqual(got, []eventlog.Position{1200, 1400}) {
		t.Errorf("delivered %v, want [1200 1400]", got)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("run = %v", err)
	}
	if want := []es.AllPosition{es.Position{Commit: 1001, Prepare: 1001}, es.Start{}}; !reflect.DeepEqual(h.froms, want) {
		t.Errorf("subscribed from %v, want %v", h.froms, want)
	}
	if len(h.delays) != 0 {
		t.Errorf("waited %v before retreating", h.delays)
	}

	// An invalid-position refusal of a start the server itself reported is
	// not retried.
	h = newHarness(t, 0, newScript(rec(t, "a-1", 0, 1000), dropped(invalid)))
	if err := h.run(context.Background())(); err == nil {
		t.Error("run went on after the server refused a position it reported")
	}
}

func TestRunnerStopsWhileBlockedOnDelivery(t *testing.T) {
	var notes []*es.SubscriptionEvent
	for i := range 5 {
		notes = append(notes, rec(t, "a-1", uint64(i), uint64(100*(i+1))))
	}
	h := newHarness(t, 0, newScript(notes...))
	h.out = make(chan eventlog.Event) // nobody reads
	h.r.out = h.out
	ctx, cancel := context.WithCancel(context.Background())
	wait := h.run(ctx)
	cancel()
	if err := wait(); err != nil {
		t.Errorf("run = %v, want nil", err)
	}
}

func TestRunnerClosesEverySource(t *testing.T) {
	a := newScript(rec(t, "a-1", 0, 100), dropped(status.Error(codes.Unavailable, "x")))
	b := newScript(rec(t, "a-1", 1, 200))
	h := newHarness(t, 0, a, b)
	ctx, cancel := context.WithCancel(context.Background())
	wait := h.run(ctx)
	h.receive(2)
	cancel()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*script{a, b} {
		select {
		case <-s.closed:
		default:
			t.Errorf("source %d not closed", i)
		}
	}
}
