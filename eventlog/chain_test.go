package eventlog_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

func sample() eventlog.Event {
	return eventlog.Event{
		EventData: eventlog.EventData{
			ID: uuid.MustParse("0b6f7a84-6d0f-4a51-9b8f-7f5d8d3c2a10"), Type: "CustomerCreated", SchemaVersion: 1,
			ShopID: "shop_1", OccurredAt: time.Date(2026, 11, 1, 10, 0, 0, 123, time.UTC), Data: []byte("sealed"),
			Metadata: eventlog.Metadata{CorrelationID: "req_1", Actor: "tok_1", Source: "api", KeyIDs: []string{"shop_1"}},
		},
		StreamID: "customer-cus_1", Revision: 3, Position: 99, RecordedAt: time.Now(),
	}
}

// Every field the producer chose is covered by the hash; the fields the
// store assigns are not.
func TestChainHashCoversEveryProducedField(t *testing.T) {
	base := sample()
	prev := []byte("previous")
	want := eventlog.ChainHash(prev, &base)
	changes := map[string]func(e *eventlog.Event){
		"id":             func(e *eventlog.Event) { e.ID = uuid.New() },
		"type":           func(e *eventlog.Event) { e.Type = "CustomerUpdated" },
		"schema version": func(e *eventlog.Event) { e.SchemaVersion = 2 },
		"shop":           func(e *eventlog.Event) { e.ShopID = "shop_2" },
		"occurred at":    func(e *eventlog.Event) { e.OccurredAt = e.OccurredAt.Add(time.Nanosecond) },
		"data":           func(e *eventlog.Event) { e.Data = []byte("sealeD") },
		"metadata":       func(e *eventlog.Event) { e.Metadata.Actor = "tok_2" },
		"key ids":        func(e *eventlog.Event) { e.Metadata.KeyIDs = nil },
		"stream":         func(e *eventlog.Event) { e.StreamID = "customer-cus_2" },
		"revision":       func(e *eventlog.Event) { e.Revision = 4 },
	}
	for name, change := range changes {
		e := sample()
		change(&e)
		if bytes.Equal(eventlog.ChainHash(prev, &e), want) {
			t.Errorf("changing the %s does not change the hash", name)
		}
	}
	if bytes.Equal(eventlog.ChainHash([]byte("other"), &base), want) {
		t.Error("the previous hash is not covered")
	}
	e := sample()
	e.Position, e.RecordedAt = 1, time.Time{}
	if !bytes.Equal(eventlog.ChainHash(prev, &e), want) {
		t.Error("store-assigned fields changed the hash")
	}
}

func TestChainVerifier(t *testing.T) {
	var stream []eventlog.Event
	var prev []byte
	for i := 0; i < 3; i++ {
		e := sample()
		e.ID, e.Revision, e.PrevHash = uuid.New(), uint64(i), prev
		e.Hash = eventlog.ChainHash(prev, &e)
		prev = e.Hash
		stream = append(stream, e)
	}
	v := eventlog.NewChainVerifier()
	for i := range stream {
		if err := v.Check(&stream[i]); err != nil {
			t.Fatalf("intact chain: %v", err)
		}
	}
	cases := map[string]func(s []eventlog.Event){
		"content": func(s []eventlog.Event) { s[1].Data = []byte("x") },
		"link":    func(s []eventlog.Event) { s[2].PrevHash = []byte("x") },
		"gap":     func(s []eventlog.Event) { s[2].Revision = 5 },
		"rehashed": func(s []eventlog.Event) {
			s[1].Data = []byte("x")
			s[1].Hash = eventlog.ChainHash(s[1].PrevHash, &s[1])
		},
	}
	for name, mod := range cases {
		s := append([]eventlog.Event(nil), stream...)
		mod(s)
		v := eventlog.NewChainVerifier()
		var err error
		for i := range s {
			if err = v.Check(&s[i]); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "event ") {
			t.Errorf("%s: tampering not detected (%v)", name, err)
		}
	}
}
