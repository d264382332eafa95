package esdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/esdb"
)

func newEvent(typ string) eventlog.EventData {
	return eventlog.EventData{
		ID: uuid.New(), Type: typ, SchemaVersion: 1, ShopID: "shop_1",
		OccurredAt: time.Now().UTC(), Data: []byte(`{"k":"v"}`),
		Metadata: eventlog.Metadata{CorrelationID: "req_1", Source: "api"},
	}
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustAppend(t *testing.T, l *esdb.Log, stream string, exp eventlog.ExpectedRevision, evs ...eventlog.EventData) eventlog.AppendResult {
	t.Helper()
	r, err := l.Append(ctxT(t), stream, exp, evs...)
	if err != nil {
		t.Fatalf("append to %s: %v", stream, err)
	}
	return r
}

func verifyChain(t *testing.T, evs []eventlog.Event) {
	t.Helper()
	v := eventlog.NewChainVerifier()
	for i := range evs {
		if err := v.Check(&evs[i]); err != nil {
			t.Fatalf("chain: %v", err)
		}
	}
}

// receiveN reads n events from sub within a deadline.
func receiveN(t *testing.T, sub eventlog.Subscription, n int) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	deadline := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case e, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription ended after %d of %d events: %v", len(out), n, sub.Err())
			}
			out = append(out, e)
		case <-deadline:
			t.Fatalf("received %d of %d events", len(out), n)
		}
	}
	return out
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: still failing: %v", what, err)
		}
	}
}

func TestOpenValidatesEveryProblemAtOnce(t *testing.T) {
	_, err := esdb.Open(context.Background(), esdb.Config{
		ResubscribeMin: -time.Second, IdempotencyWindow: -1, StreamPrefix: "$sys",
	})
	if err == nil {
		t.Fatal("invalid configuration accepted")
	}
	for _, want := range []string{"URL is required", "ResubscribeMin must be positive", "IdempotencyWindow", "StreamPrefix"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
	if _, err := esdb.Open(context.Background(), esdb.Config{URL: "http://127.0.0.1:2113"}); err == nil || !strings.Contains(err.Error(), "esdb://") {
		t.Errorf("wrong scheme: %v", err)
	}
}

func TestOpenNeverLeaksTheURLPassword(t *testing.T) {
	_, err := esdb.Open(context.Background(), esdb.Config{URL: "esdb://admin:s3cr3t-pw@127.0.0.1:notaport?tls=false"})
	if err == nil {
		t.Fatal("bad URL accepted")
	}
	if strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	_, err = esdb.Open(ctxT(t), esdb.Config{URL: "esdb://" + addr + "?tls=false&maxDiscoverAttempts=1&discoveryInterval=1"})
	if !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("open of an unreachable server = %v, want ErrUnavailable", err)
	}
}

func TestAppendRejectsInvalidInput(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "")
	bad := []struct {
		stream string
		edit   func(*eventlog.EventData)
	}{
		{"s-1", func(e *eventlog.EventData) { e.ID = uuid.Nil }},
		{"s-1", func(e *eventlog.EventData) { e.Type = "" }},
		{"s-1", func(e *eventlog.EventData) { e.Type = "$metadata" }},
		{"$system", func(*eventlog.EventData) {}},
		{"", func(*eventlog.EventData) {}},
	}
	for _, b := range bad {
		ok, e := newEvent("Good"), newEvent("Bad")
		b.edit(&e)
		if _, err := l.Append(ctxT(t), b.stream, eventlog.Any(), ok, e); err == nil {
			t.Errorf("append of %+v to %q accepted", e, b.stream)
		}
	}
	if got := srv.Stream("s-1"); len(got) != 0 {
		t.Errorf("rejected appends wrote %d events", len(got))
	}
}

func TestAppendRetriesAfterLosingARace(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "")
	rival := openAt(t, srv.URL(), "")
	ctx := ctxT(t)
	mustAppend(t, l, "race-1", eventlog.NoStream(), newEvent("First"))

	// Between the adapter's read of the head and its append, a rival
	// appends: the server refuses the stale expectation.
	var once sync.Once
	rivalErr := make(chan error, 1)
	srv.BeforeAppend(func(stream string) {
		once.Do(func() {
			srv.BeforeAppend(nil)
			_, err := rival.Append(ctx, stream, eventlog.Any(), newEvent("Rival"))
			rivalErr <- err
		})
	})
	r, err := l.Append(ctx, "race-1", eventlog.Any(), newEvent("Mine"))
	if err != nil {
		t.Fatalf("Any append after a lost race: %v", err)
	}
	if err := <-rivalErr; err != nil {
		t.Fatalf("rival: %v", err)
	}
	if r.NextExpectedRevision != 2 {
		t.Errorf("next expected revision %d, want 2 (after the rival's event)", r.NextExpectedRevision)
	}
	evs, err := l.ReadStream(ctx, "race-1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[1].Type != "Rival" || evs[2].Type != "Mine" || evs[2].Position != r.Position {
		t.Fatalf("stream holds %v", evs)
	}
	verifyChain(t, evs)

	// An Exact expectation that held when read but lost the race reports
	// the stream's new state.
	once = sync.Once{}
	srv.BeforeAppend(func(stream string) {
		once.Do(func() {
			srv.BeforeAppend(nil)
			_, err := rival.Append(ctx, stream, eventlog.Any(), newEvent("Rival"))
			rivalErr <- err
		})
	})
	_, err = l.Append(ctx, "race-1", eventlog.Exact(2), newEvent("Mine"))
	var wrong *eventlog.WrongRevisionError
	if !errors.As(err, &wrong) || wrong.Actual != 3 || !wrong.ActualExists {
		t.Errorf("Exact append after a lost race = %v, want WrongRevisionError at revision 3", err)
	}
	if err := <-rivalErr; err != nil {
		t.Fatalf("rival: %v", err)
	}
}

func TestAppendRaceWithItsOwnRepeat(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "")
	other := openAt(t, srv.URL(), "")
	ctx := ctxT(t)
	delivery := newEvent("Delivered")
	// Another server accepts the same delivery between this one's head
	// read and its append: the server reports the append idempotent, and
	// both get the same result.
	var once sync.Once
	var otherRes eventlog.AppendResult
	otherErr := make(chan error, 1)
	srv.BeforeAppend(func(stream string) {
		once.Do(func() {
			srv.BeforeAppend(nil)
			var err error
			otherRes, err = other.Append(ctx, stream, eventlog.NoStream(), delivery)
			otherErr <- err
		})
	})
	r, err := l.Append(ctx, "delivery-1", eventlog.NoStream(), delivery)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-otherErr; err != nil {
		t.Fatal(err)
	}
	if r != otherRes || r.NextExpectedRevision != 0 || r.Position == 0 {
		t.Errorf("results %+v and %+v, want the same first write", r, otherRes)
	}
	if got := srv.Stream("delivery-1"); len(got) != 1 {
		t.Errorf("stream holds %d events, want 1", len(got))
	}
}

func TestIdempotencyWindow(t *testing.T) {
	srv := startFake(t)
	ctx := ctxT(t)
	l, err := esdb.Open(ctx, esdb.Config{URL: srv.URL(), IdempotencyWindow: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first := newEvent("A")
	r0 := mustAppend(t, l, "win-1", eventlog.NoStream(), first)
	for range 5 {
		mustAppend(t, l, "win-1", eventlog.Any(), newEvent("B"))
	}
	// Older than the window: a NoStream repeat is still found exactly.
	again, err := l.Append(ctx, "win-1", eventlog.NoStream(), first)
	if err != nil || again != r0 {
		t.Errorf("NoStream repeat beyond the window = %+v, %v; want %+v", again, err, r0)
	}
	// So is an Exact repeat whose expectation no longer holds.
	second := newEvent("C")
	r6 := mustAppend(t, l, "win-1", eventlog.Exact(5), second)
	for range 4 {
		mustAppend(t, l, "win-1", eventlog.Any(), newEvent("B"))
	}
	if again, err := l.Append(ctx, "win-1", eventlog.Exact(5), second); err != nil || again != r6 {
		t.Errorf("Exact repeat beyond the window = %+v, %v; want %+v", again, err, r6)
	}
	// Within the window, any expectation finds it.
	last := newEvent("D")
	rl := mustAppend(t, l, "win-1", eventlog.Any(), last)
	mustAppend(t, l, "win-1", eventlog.Any(), newEvent("B"))
	if again, err := l.Append(ctx, "win-1", eventlog.StreamExists(), last); err != nil || again != rl {
		t.Errorf("repeat within the window = %+v, %v; want %+v", again, err, rl)
	}
	// The documented limit: an Any repeat older than the window is written.
	if again, err := l.Append(ctx, "win-1", eventlog.Any(), first); err != nil || again == r0 {
		t.Errorf("Any repeat beyond the window = %+v, %v; expected a new write", again, err)
	}
}

func TestAppendUnavailable(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "")
	ctx := ctxT(t)
	e := newEvent("A")
	srv.FailAppends(1)
	if _, err := l.Append(ctx, "u-1", eventlog.NoStream(), e); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("append while the node fails = %v, want ErrUnavailable", err)
	}
	// The caller retries with the same event: written once.
	var r eventlog.AppendResult
	eventually(t, "append after the failure", func() error {
		var err error
		r, err = l.Append(ctx, "u-1", eventlog.NoStream(), e)
		return err
	})
	if got := srv.Stream("u-1"); len(got) != 1 || r.NextExpectedRevision != 0 {
		t.Errorf("stream holds %d events, result %+v", len(got), r)
	}
}

func TestSubscriptionSurvivesDrops(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "")
	ctx := ctxT(t)
	for i := range 12 {
		mustAppend(t, l, fmt.Sprintf("drop-%d", i%3), eventlog.Any(), newEvent("Before"))
	}
	srv.DropSubscriptionsAfter(5)
	sub, err := l.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got := receiveN(t, sub, 12)
	for range 8 {
		mustAppend(t, l, "drop-live", eventlog.Any(), newEvent("Live"))
	}
	got = append(got, receiveN(t, sub, 8)...)
	all, err := l.ReadAll(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 20 {
		t.Fatalf("log holds %d events", len(all))
	}
	for i := range all {
		if got[i].ID != all[i].ID || got[i].Position != all[i].Position {
			t.Fatalf("event %d: delivered %s@%d, log has %s@%d", i, got[i].ID, got[i].Position, all[i].ID, all[i].Position)
		}
	}
	// The server dropped the subscription every 5 events: the sequence
	// above is only complete and duplicate-free because each resubscription
	// resumed from a real position after the events delivered.
	starts := srv.SubscriptionStarts()
	if len(starts) < 4 {
		t.Fatalf("subscription started %d times, want a resubscription per drop: %v", len(starts), starts)
	}
	if starts[0] != "start" {
		t.Errorf("first subscription from %s, want start", starts[0])
	}
	for _, s := range starts[1:] {
		if s == "start" || s == "end" {
			t.Errorf("resubscribed from %s, want the position of the last event handled", s)
		}
	}
}

func TestSubscriptionSurvivesAnOutage(t *testing.T) {
	srv := startFake(t)
	url := srv.URL() + "&maxDiscoverAttempts=2&discoveryInterval=10&gossipTimeout=1"
	l := openAt(t, url, "")
	ctx := ctxT(t)
	mustAppend(t, l, "out-1", eventlog.NoStream(), newEvent("Before"))
	sub, err := l.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	receiveN(t, sub, 1)

	srv.Stop()
	if _, err := l.Append(ctx, "out-1", eventlog.Any(), newEvent("During")); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("append during the outage = %v, want ErrUnavailable", err)
	}
	if _, err := l.HeadPosition(ctx); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("head during the outage = %v, want ErrUnavailable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The client gave up discovering while the node was down; the adapter
	// replaces it, so appends work again.
	after := newEvent("After")
	eventually(t, "append after the restart", func() error {
		_, err := l.Append(ctx, "out-1", eventlog.Any(), after)
		return err
	})
	got := receiveN(t, sub, 1)
	if got[0].ID != after.ID {
		t.Errorf("after the outage the subscription delivered %s (%s), want %s", got[0].ID, got[0].Type, after.ID)
	}
	select {
	case e, ok := <-sub.Events():
		if ok {
			t.Errorf("extra event %s (%s)", e.ID, e.Type)
		}
	default:
	}
}

func TestSubscribeFromAGapPosition(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "")
	ctx := ctxT(t)
	mustAppend(t, l, "gap-1", eventlog.NoStream(), newEvent("A"), newEvent("B"), newEvent("C"))
	all, err := l.ReadAll(ctx, 0, 10)
	if err != nil || len(all) != 3 {
		t.Fatalf("read all: %d, %v", len(all), err)
	}
	// Inside the first event's record: the server refuses to start there.
	sub, err := l.Subscribe(ctx, all[0].Position+1)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got := receiveN(t, sub, 2)
	if got[0].ID != all[1].ID || got[1].ID != all[2].ID {
		t.Errorf("delivered %s, %s; want the second and third events", got[0].Type, got[1].Type)
	}
}

func TestForeignEventsInTheLog(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "")
	ctx := ctxT(t)
	mustAppend(t, l, "f-1", eventlog.NoStream(), newEvent("Ours"))
	sub, err := l.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	receiveN(t, sub, 1)
	// Another writer stores an event without our envelope: it cannot be
	// verified, so reading it fails loudly instead of skipping it.
	srv.AppendRaw("f-2", uuid.New(), "Foreign", []byte("{}"), []byte("not an envelope"))
	if _, err := l.ReadAll(ctx, 0, 10); err == nil || !strings.Contains(err.Error(), "envelope") {
		t.Errorf("ReadAll over a foreign event = %v, want an envelope error", err)
	}
	select {
	case _, ok := <-sub.Events():
		if ok {
			t.Fatal("foreign event delivered")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("subscription did not end")
	}
	if err := sub.Err(); err == nil || !strings.Contains(err.Error(), "envelope") {
		t.Errorf("subscription ended with %v, want an envelope error", err)
	}
	_ = sub.Close()
}

func TestNamespacesAreIsolated(t *testing.T) {
	srv := startFake(t)
	a := openAt(t, srv.URL(), "tenant-a.")
	b := openAt(t, srv.URL(), "tenant-b.")
	ctx := ctxT(t)
	ra := mustAppend(t, a, "customer-1", eventlog.NoStream(), newEvent("A"))
	// The same port stream id in another namespace is another stream.
	mustAppend(t, b, "customer-1", eventlog.NoStream(), newEvent("B"))
	// Many foreign events after ours: HeadPosition must page past them.
	for range 300 {
		mustAppend(t, b, "customer-2", eventlog.Any(), newEvent("B"))
	}
	if h, err := a.HeadPosition(ctx); err != nil || h != ra.Position {
		t.Errorf("head of a = %d, %v; want %d", h, err, ra.Position)
	}
	evs, err := a.ReadAll(ctx, 0, 100)
	if err != nil || len(evs) != 1 || evs[0].StreamID != "customer-1" || evs[0].Type != "A" {
		t.Fatalf("a reads %v, %v", evs, err)
	}
	// Hashes are over the port's stream id: a verifier sees a plain chain.
	verifyChain(t, evs)
	if got := srv.Stream("tenant-a.customer-1"); len(got) != 1 {
		t.Errorf("server stream tenant-a.customer-1 holds %d events", len(got))
	}
	sub, err := a.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := receiveN(t, sub, 1); got[0].Type != "A" {
		t.Errorf("a's subscription delivered %s", got[0].Type)
	}
	rb := mustAppend(t, b, "customer-1", eventlog.Any(), newEvent("B"))
	ra2 := mustAppend(t, a, "customer-1", eventlog.Any(), newEvent("A"))
	if got := receiveN(t, sub, 1); got[0].Position != ra2.Position || rb.Position > ra2.Position {
		t.Errorf("a's subscription delivered position %d, want %d", got[0].Position, ra2.Position)
	}
}

func TestStreamMetadataKeepsServerSettings(t *testing.T) {
	srv := startFake(t)
	l := openAt(t, srv.URL(), "ns.")
	ctx := ctxT(t)
	// An operator set a max age and someone stored a non-string property.
	srv.AppendRaw("$$ns.meta-1", uuid.New(), "$metadata", []byte(`{"$maxAge":3600,"owner":"ops","limit":5}`), nil)
	got, err := l.StreamMetadata(ctx, "meta-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"owner": "ops", "limit": "5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("metadata %v, want %v", got, want)
	}
	if err := l.SetStreamMetadata(ctx, "meta-1", map[string]string{"erased": "true"}); err != nil {
		t.Fatal(err)
	}
	recs := srv.Stream("$$ns.meta-1")
	var doc map[string]any
	if err := json.Unmarshal(recs[len(recs)-1].Data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["$maxAge"] != float64(3600) || doc["erased"] != "true" || doc["owner"] != nil {
		t.Errorf("stored metadata %v, want $maxAge kept and custom properties replaced", doc)
	}
	if err := l.SetStreamMetadata(ctx, "meta-1", map[string]string{"$maxCount": "1"}); err == nil {
		t.Error("a '$' key was accepted")
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	srv := startFake(t)
	ctx := ctxT(t)
	l, err := esdb.Open(ctx, esdb.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, "c-1", eventlog.NoStream(), newEvent("A"))
	sub, err := l.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	receiveN(t, sub, 1)
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case _, ok := <-sub.Events():
		if ok {
			t.Fatal("event after close")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("subscription still open after the log closed")
	}
	if err := sub.Err(); err != nil {
		t.Errorf("subscription ended with %v, want nil", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}
