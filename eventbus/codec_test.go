package eventbus_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventbus"
	"github.com/cgp-platform/cgp/eventlog"
)

func fullEvent() eventlog.Event {
	e := eventlog.Event{
		EventData: eventlog.EventData{
			ID:            uuid.MustParse("0b8a4c1e-3f7d-4e2a-9c51-6d0e8f2b7a19"),
			Type:          "CustomerCreated",
			SchemaVersion: 2,
			ShopID:        "shop_1",
			OccurredAt:    time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC),
			Data:          []byte(`{"sealed":"…"}`),
			Metadata: eventlog.Metadata{
				CorrelationID: "req_1", CausationID: "evt_0", Actor: "tok_1", Source: "api",
				KeyIDs: []string{"shop_1", "cus_1"},
			},
		},
		StreamID:   "customer-cus_1",
		Revision:   3,
		Position:   42,
		RecordedAt: time.Date(2025, 3, 4, 5, 6, 8, 1, time.UTC),
		PrevHash:   []byte{1, 2, 3},
	}
	e.Hash = eventlog.ChainHash(e.PrevHash, &e)
	return e
}

// sameEvent reports the first difference between two events, or "".
func sameEvent(a, b eventlog.Event) string {
	switch {
	case a.ID != b.ID:
		return "id"
	case a.Type != b.Type || a.SchemaVersion != b.SchemaVersion:
		return "type"
	case a.ShopID != b.ShopID:
		return "shop"
	case !a.OccurredAt.Equal(b.OccurredAt):
		return "occurred_at"
	case !bytes.Equal(a.Data, b.Data):
		return "data"
	case a.Metadata.CorrelationID != b.Metadata.CorrelationID || a.Metadata.CausationID != b.Metadata.CausationID ||
		a.Metadata.Actor != b.Metadata.Actor || a.Metadata.Source != b.Metadata.Source || !slices.Equal(a.Metadata.KeyIDs, b.Metadata.KeyIDs):
		return "metadata"
	case a.StreamID != b.StreamID || a.Revision != b.Revision || a.Position != b.Position:
		return "stream, revision or position"
	case !a.RecordedAt.Equal(b.RecordedAt):
		return "recorded_at"
	case !bytes.Equal(a.PrevHash, b.PrevHash) || !bytes.Equal(a.Hash, b.Hash):
		return "hashes"
	}
	return ""
}

func TestEventRoundTrip(t *testing.T) {
	for name, e := range map[string]eventlog.Event{
		"full": fullEvent(),
		"minimal": {
			EventData: eventlog.EventData{ID: uuid.New(), Type: "ThingHappened"},
			StreamID:  "thing-1", Position: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			msg := eventbus.MessageFromEvent(e)
			if msg.UUID != e.ID.String() || !bytes.Equal(msg.Payload, e.Data) {
				t.Fatalf("message %s with payload %q; want the event id and data", msg.UUID, msg.Payload)
			}
			got, err := eventbus.EventFromMessage(msg)
			if err != nil {
				t.Fatalf("EventFromMessage: %v", err)
			}
			if diff := sameEvent(got, e); diff != "" {
				t.Fatalf("round trip changed the %s: got %+v, want %+v", diff, got, e)
			}
			if pos, err := eventbus.PositionOf(msg); err != nil || pos != e.Position {
				t.Fatalf("PositionOf = %d, %v; want %d", pos, err, e.Position)
			}
		})
	}
}

func TestMessageFromEventOmitsEmptyFields(t *testing.T) {
	msg := eventbus.MessageFromEvent(eventlog.Event{EventData: eventlog.EventData{ID: uuid.New(), Type: "T"}, StreamID: "s-1", Position: 1})
	for _, key := range []string{eventbus.MetaShopID, eventbus.MetaOccurredAt, eventbus.MetaRecordedAt, eventbus.MetaPrevHash,
		eventbus.MetaHash, eventbus.MetaCorrelationID, eventbus.MetaCausationID, eventbus.MetaActor, eventbus.MetaSource, eventbus.MetaKeyIDs} {
		if _, ok := msg.Metadata[key]; ok {
			t.Errorf("metadata has %s for an empty field", key)
		}
	}
}

func TestEventFromMessageRejectsMalformed(t *testing.T) {
	for name, change := range map[string]func(m *message.Message){
		"id not a uuid":       func(m *message.Message) { m.UUID = "not-a-uuid" },
		"no stream":           func(m *message.Message) { delete(m.Metadata, eventbus.MetaStream) },
		"no revision":         func(m *message.Message) { delete(m.Metadata, eventbus.MetaRevision) },
		"no position":         func(m *message.Message) { delete(m.Metadata, eventbus.MetaPosition) },
		"no type":             func(m *message.Message) { delete(m.Metadata, eventbus.MetaType) },
		"bad revision":        func(m *message.Message) { m.Metadata.Set(eventbus.MetaRevision, "-1") },
		"bad position":        func(m *message.Message) { m.Metadata.Set(eventbus.MetaPosition, "x") },
		"bad schema version":  func(m *message.Message) { m.Metadata.Set(eventbus.MetaSchemaVersion, "v1") },
		"bad occurred_at":     func(m *message.Message) { m.Metadata.Set(eventbus.MetaOccurredAt, "yesterday") },
		"bad recorded_at":     func(m *message.Message) { m.Metadata.Set(eventbus.MetaRecordedAt, "2025-13-01T00:00:00Z") },
		"bad hash":            func(m *message.Message) { m.Metadata.Set(eventbus.MetaHash, "zz") },
		"bad prev_hash":       func(m *message.Message) { m.Metadata.Set(eventbus.MetaPrevHash, "abc") },
		"bad key ids":         func(m *message.Message) { m.Metadata.Set(eventbus.MetaKeyIDs, "shop_1,cus_1") },
		"position over range": func(m *message.Message) { m.Metadata.Set(eventbus.MetaPosition, "18446744073709551616") },
	} {
		t.Run(name, func(t *testing.T) {
			msg := eventbus.MessageFromEvent(fullEvent())
			change(msg)
			if _, err := eventbus.EventFromMessage(msg); err == nil {
				t.Fatal("EventFromMessage accepted it")
			}
		})
	}
}

// A projector or reactor reads the recorded event back from the message a
// Subscriber delivers.
func ExampleEventFromMessage() {
	e := eventlog.Event{
		EventData: eventlog.EventData{
			ID:            uuid.MustParse("0b8a4c1e-3f7d-4e2a-9c51-6d0e8f2b7a19"),
			Type:          "CustomerCreated",
			SchemaVersion: 1,
			ShopID:        "shop_1",
			Data:          []byte(`{}`),
			Metadata:      eventlog.Metadata{CorrelationID: "req_1", KeyIDs: []string{"shop_1"}},
		},
		StreamID: "customer-cus_1",
		Position: 7,
	}
	msg := eventbus.MessageFromEvent(e)
	fmt.Println(msg.UUID, msg.Metadata.Get(eventbus.MetaStream), msg.Metadata.Get(eventbus.MetaPosition), msg.Metadata.Get(eventbus.MetaKeyIDs))

	back, err := eventbus.EventFromMessage(msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.Type, back.SchemaVersion, back.ShopID, back.Position, back.Metadata.CorrelationID)
	// Output:
	// 0b8a4c1e-3f7d-4e2a-9c51-6d0e8f2b7a19 customer-cus_1 7 ["shop_1"]
	// CustomerCreated 1 shop_1 7 req_1
}
