package eventbus_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventbus"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/sqlite"
)

const waitLimit = 10 * time.Second

func newSubscriber(t *testing.T, cfg eventbus.SubscriberConfig) *eventbus.Subscriber {
	t.Helper()
	if cfg.NackBackoff == 0 {
		cfg.NackBackoff = time.Millisecond
	}
	s, err := eventbus.NewSubscriber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func appendEvents(t *testing.T, l eventlog.Log, stream string, types ...string) []eventlog.Position {
	t.Helper()
	var out []eventlog.Position
	for _, typ := range types {
		res, err := l.Append(t.Context(), stream, eventlog.Any(), eventlog.EventData{
			ID: uuid.New(), Type: typ, SchemaVersion: 1, ShopID: "shop_1",
			OccurredAt: time.Now().UTC(), Data: []byte(typ),
		})
		if err != nil {
			t.Fatalf("append to %s: %v", stream, err)
		}
		out = append(out, res.Position)
	}
	return out
}

// receive waits for the next message, or fails the test at the deadline.
func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatal("messages channel closed")
		}
		return msg
	case <-time.After(waitLimit):
		t.Fatal("no message within the deadline")
		return nil
	}
}

// waitClosed waits for ch to be closed, acking anything still delivered.
func waitClosed(t *testing.T, ch <-chan *message.Message) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case msg, ok := <-ch:
			if !ok {
				return
			}
			msg.Ack()
		case <-deadline:
			t.Fatal("messages channel not closed within the deadline")
		}
	}
}

func positionOf(t *testing.T, msg *message.Message) eventlog.Position {
	t.Helper()
	pos, err := eventbus.PositionOf(msg)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

func TestSubscriberStartsAfterCheckpoint(t *testing.T) {
	l := openLog(t)
	pos := appendEvents(t, l, "thing-1", "A", "B", "C", "D", "E")
	var asked string
	sub := newSubscriber(t, eventbus.SubscriberConfig{
		Log:      l,
		Consumer: "things",
		StartAfter: func(_ context.Context, consumer string) (eventlog.Position, error) {
			asked = consumer
			return pos[2], nil
		},
	})
	ch, err := sub.Subscribe(t.Context(), eventbus.TopicAll)
	if err != nil {
		t.Fatal(err)
	}
	if asked != "things" {
		t.Fatalf("StartAfter asked for %q, want the configured consumer", asked)
	}
	for _, want := range pos[3:] {
		msg := receive(t, ch)
		if got := positionOf(t, msg); got != want {
			t.Fatalf("delivered position %d, want %d", got, want)
		}
		msg.Ack()
	}
}

func TestSubscriberStartAfterFailure(t *testing.T) {
	boom := errors.New("store down")
	sub := newSubscriber(t, eventbus.SubscriberConfig{
		Log:        openLog(t),
		StartAfter: func(context.Context, string) (eventlog.Position, error) { return 0, boom },
	})
	if _, err := sub.Subscribe(t.Context(), eventbus.TopicAll); !errors.Is(err, boom) {
		t.Fatalf("Subscribe error = %v, want the StartAfter failure", err)
	}
}

func TestSubscriberTopics(t *testing.T) {
	l := openLog(t)
	appendEvents(t, l, "customer-a", "A1")
	appendEvents(t, l, "order-x", "X1")
	appendEvents(t, l, "customer-b", "B1")
	appendEvents(t, l, "customers-c", "C1") // another category sharing the prefix
	appendEvents(t, l, "customer-a", "A2")
	sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l})
	for topic, want := range map[string][]string{
		eventbus.TopicAll:                  {"A1", "X1", "B1", "C1", "A2"},
		eventbus.CategoryTopic("customer"): {"A1", "B1", "A2"},
		"customer-a":                       {"A1", "A2"},
		"order-x":                          {"X1"},
	} {
		ch, err := sub.Subscribe(t.Context(), topic)
		if err != nil {
			t.Fatalf("Subscribe(%s): %v", topic, err)
		}
		for _, typ := range want {
			msg := receive(t, ch)
			if got := msg.Metadata.Get(eventbus.MetaType); got != typ {
				t.Fatalf("topic %s delivered %s, want %s", topic, got, typ)
			}
			msg.Ack()
		}
	}
	for _, bad := range []string{"", "$ce-", "$ce-a-b", "$streams"} {
		if _, err := sub.Subscribe(t.Context(), bad); err == nil {
			t.Errorf("Subscribe(%q) succeeded", bad)
		}
	}
}

func TestSubscriberLiveAndNackRedelivery(t *testing.T) {
	l := openLog(t)
	sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l})
	ch, err := sub.Subscribe(t.Context(), "thing-1")
	if err != nil {
		t.Fatal(err)
	}
	pos := appendEvents(t, l, "thing-1", "A", "B") // live: after Subscribe

	first := receive(t, ch)
	if positionOf(t, first) != pos[0] {
		t.Fatalf("first delivery at %d, want %d", positionOf(t, first), pos[0])
	}
	first.Nack()
	select {
	case <-first.Context().Done():
	case <-time.After(waitLimit):
		t.Fatal("message context not ended by Nack")
	}
	again := receive(t, ch)
	if again.UUID != first.UUID || positionOf(t, again) != pos[0] {
		t.Fatalf("after Nack got %s at %d, want %s again", again.UUID, positionOf(t, again), first.UUID)
	}
	again.Ack()
	second := receive(t, ch)
	if positionOf(t, second) != pos[1] {
		t.Fatalf("after Ack got position %d, want %d", positionOf(t, second), pos[1])
	}
	second.Ack()
}

func TestSubscriberDeliversRecordedEnvelope(t *testing.T) {
	l := openLog(t)
	pub, err := eventbus.NewPublisher(eventbus.PublisherConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	e := fullEvent()
	msg := eventbus.MessageFromEvent(e)
	if err := pub.Publish("customer-cus_9", msg); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	recorded, err := l.ReadAll(t.Context(), 0, 10)
	if err != nil || len(recorded) != 1 {
		t.Fatalf("ReadAll = %d events, %v", len(recorded), err)
	}
	// The publisher kept the producer's fields; the log assigned the rest.
	want := recorded[0]
	if want.ID != e.ID || want.Type != e.Type || want.SchemaVersion != e.SchemaVersion || want.StreamID != "customer-cus_9" || want.Revision != 0 ||
		want.Metadata.CorrelationID != e.Metadata.CorrelationID || len(want.Metadata.KeyIDs) != 2 || !want.OccurredAt.Equal(e.OccurredAt) {
		t.Fatalf("recorded %+v from %+v", want, e)
	}

	sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l})
	ch, err := sub.Subscribe(t.Context(), eventbus.CategoryTopic("customer"))
	if err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch)
	ev, err := eventbus.EventFromMessage(got)
	if err != nil {
		t.Fatalf("EventFromMessage: %v", err)
	}
	if diff := sameEvent(ev, want); diff != "" {
		t.Fatalf("delivered event differs from the recorded one in its %s", diff)
	}
	got.Ack()
}

func TestPublisherRejects(t *testing.T) {
	l := openLog(t)
	pub, err := eventbus.NewPublisher(eventbus.PublisherConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	typed := func() *message.Message {
		m := message.NewMessage(uuid.NewString(), []byte("x"))
		m.Metadata.Set(eventbus.MetaType, "ThingHappened")
		return m
	}
	extra := typed()
	extra.Metadata.Set("email", "someone@example.com")
	notUUID := typed()
	notUUID.UUID = "msg-1"
	for name, tc := range map[string]struct {
		topic string
		msg   *message.Message
	}{
		"metadata outside the envelope": {"thing-1", extra},
		"typed id not a uuid":           {"thing-1", notUUID},
		"all topic":                     {eventbus.TopicAll, typed()},
		"category topic":                {eventbus.CategoryTopic("thing"), typed()},
	} {
		if err := pub.Publish(tc.topic, tc.msg); err == nil {
			t.Errorf("%s: Publish succeeded", name)
		}
	}
	if head, _ := l.HeadPosition(t.Context()); head != 0 {
		t.Fatalf("rejected publishes wrote %d events", head)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("thing-1", typed()); !errors.Is(err, eventbus.ErrPublisherClosed) {
		t.Fatalf("Publish after Close = %v, want ErrPublisherClosed", err)
	}
}

func TestPlainMessagesRoundTripAndRawMode(t *testing.T) {
	l := openLog(t)
	pub, err := eventbus.NewPublisher(eventbus.PublisherConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	plain := message.NewMessage("any id, not a uuid", []byte("payload"))
	plain.Metadata.Set("trace", "t-1")
	plain.Metadata.Set(eventbus.MetaCorrelationID, "req_7")
	// The same message to two streams, and again to the first (a no-op).
	for _, stream := range []string{"note-1", "note-2", "note-1"} {
		if err := pub.Publish(stream, plain); err != nil {
			t.Fatalf("Publish to %s: %v", stream, err)
		}
	}
	if head, _ := l.HeadPosition(t.Context()); head != 2 {
		t.Fatalf("log head = %d, want 2 events", head)
	}

	sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l})
	ch, err := sub.Subscribe(t.Context(), "note-1")
	if err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch)
	if got.UUID != plain.UUID || string(got.Payload) != "payload" || got.Metadata.Get("trace") != "t-1" ||
		got.Metadata.Get(eventbus.MetaCorrelationID) != "req_7" || got.Metadata.Get(eventbus.MetaType) != eventbus.MessageEventType {
		t.Fatalf("delivered %s %q %v; want the published message", got.UUID, got.Payload, got.Metadata)
	}
	got.Ack()

	raw := newSubscriber(t, eventbus.SubscriberConfig{Log: l, Raw: true})
	rch, err := raw.Subscribe(t.Context(), eventbus.TopicAll)
	if err != nil {
		t.Fatal(err)
	}
	rmsg := receive(t, rch)
	ev, err := eventbus.EventFromMessage(rmsg)
	if err != nil {
		t.Fatalf("raw message is not an event: %v", err)
	}
	if ev.Type != eventbus.MessageEventType || ev.ID != eventlog.DeterministicID(eventbus.MessageEventType, "note-1", plain.UUID) {
		t.Fatalf("raw event %s of type %s", ev.ID, ev.Type)
	}
	rmsg.Ack()
}

func TestSubscriberEnds(t *testing.T) {
	t.Run("on ctx end", func(t *testing.T) {
		l := openLog(t)
		appendEvents(t, l, "thing-1", "A")
		sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l})
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := sub.Subscribe(ctx, eventbus.TopicAll)
		if err != nil {
			t.Fatal(err)
		}
		msg := receive(t, ch) // held, never acked
		cancel()
		waitClosed(t, ch)
		select {
		case <-msg.Context().Done():
		case <-time.After(waitLimit):
			t.Fatal("the pending message's context did not end")
		}
	})
	t.Run("on Close", func(t *testing.T) {
		l := openLog(t)
		sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l})
		ch1, err1 := sub.Subscribe(t.Context(), eventbus.TopicAll)
		ch2, err2 := sub.Subscribe(t.Context(), "thing-1")
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
		// Close waited: both channels are closed already.
		for _, ch := range []<-chan *message.Message{ch1, ch2} {
			select {
			case _, open := <-ch:
				if open {
					t.Fatal("message delivered after Close")
				}
			default:
				t.Fatal("channel still open after Close returned")
			}
		}
		if _, err := sub.Subscribe(t.Context(), eventbus.TopicAll); !errors.Is(err, eventbus.ErrSubscriberClosed) {
			t.Fatalf("Subscribe after Close = %v, want ErrSubscriberClosed", err)
		}
		if err := sub.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
	t.Run("when the log closes", func(t *testing.T) {
		l, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "events.db")})
		if err != nil {
			t.Fatal(err)
		}
		sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l})
		ch, err := sub.Subscribe(t.Context(), eventbus.TopicAll)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, ch)
	})
}

func TestConfigValidate(t *testing.T) {
	if _, err := eventbus.NewSubscriber(eventbus.SubscriberConfig{NackBackoff: -1}); err == nil {
		t.Error("NewSubscriber accepted a config without a log")
	}
	if _, err := eventbus.NewPublisher(eventbus.PublisherConfig{}); err == nil {
		t.Error("NewPublisher accepted a config without a log")
	}
}

// TestSubscriberWants: event types Wants refuses make no message, and
// Passed is told each of them, in log order.
func TestSubscriberWants(t *testing.T) {
	l := openLog(t)
	pos := appendEvents(t, l, "thing-1", "Keep1", "Drop1", "Drop2", "Keep2")
	var passed []eventlog.Position
	sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l,
		Wants:  func(typ string) bool { return !strings.HasPrefix(typ, "Drop") },
		Passed: func(p eventlog.Position) { passed = append(passed, p) }})
	ch, err := sub.Subscribe(t.Context(), eventbus.TopicAll)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Keep1", "Keep2"} {
		msg := receive(t, ch)
		if got := msg.Metadata.Get(eventbus.MetaType); got != want {
			t.Fatalf("delivered %s, want %s", got, want)
		}
		msg.Ack()
	}
	if len(passed) != 2 || passed[0] != pos[1] || passed[1] != pos[2] {
		t.Fatalf("passed %v, want positions %d and %d", passed, pos[1], pos[2])
	}
}

// TestSubscriberBatches: with Batch, events already waiting travel in one
// message, up to Batch, never across an event that is passed over.
func TestSubscriberBatches(t *testing.T) {
	l := openLog(t)
	appendEvents(t, l, "thing-1", "A1", "A2", "A3", "Drop", "A4", "A5", "A6", "A7")
	sub := newSubscriber(t, eventbus.SubscriberConfig{Log: l, Raw: true, Batch: 3,
		Wants: func(typ string) bool { return typ != "Drop" }})
	ch, err := sub.Subscribe(t.Context(), eventbus.TopicAll)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 7 {
		msg := receive(t, ch)
		evs, err := eventbus.EventsFromMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 3 {
			t.Fatalf("a batch of %d events, Batch is 3", len(evs))
		}
		var types []string
		for _, e := range evs {
			types = append(types, e.Type)
		}
		got = append(got, strings.Join(types, "+"))
		msg.Ack()
		if strings.Contains(got[len(got)-1], "A7") {
			break
		}
	}
	joined := strings.Join(got, ",")
	if strings.Contains(joined, "A3+A4") || strings.Contains(joined, "Drop") {
		t.Fatalf("batches %v cross the passed-over event", got)
	}
	if strings.ReplaceAll(strings.ReplaceAll(joined, "+", ","), ",,", ",") != "A1,A2,A3,A4,A5,A6,A7" {
		t.Fatalf("batches %v lose or reorder events", got)
	}
}
