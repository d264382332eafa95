package esdb

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// envelopeVersion identifies the layout of the metadata document below.
// Bump it (and keep decoding the old one) if the layout ever changes.
const envelopeVersion = 1

// envelope is the JSON metadata document stored with every event. The
// payload itself (eventlog.EventData.Data) is stored as the event's data,
// opaque and binary; everything else the port carries that the server does
// not model lives here. $correlationId and $causationId repeat the
// metadata's ids under the names EventStoreDB's own projections
// ($by_correlation_id) understand.
type envelope struct {
	Envelope      int               `json:"cgp_envelope"`
	SchemaVersion int               `json:"schema_version"`
	ShopID        string            `json:"shop_id,omitempty"`
	OccurredAt    string            `json:"occurred_at"`
	Metadata      eventlog.Metadata `json:"metadata"`
	PrevHash      []byte            `json:"prev_hash,omitempty"`
	Hash          []byte            `json:"hash"`
	CorrelationID string            `json:"$correlationId,omitempty"`
	CausationID   string            `json:"$causationId,omitempty"`
}

// hashLen is the length of eventlog.ChainHash's SHA-256 output.
const hashLen = 32

// validateEventData checks what the adapter needs of a proposed event: an id
// (the client would silently replace a nil id with a random one, defeating
// idempotency and the hash chain) and a type (the server requires one; a
// leading '$' would make it a system event that subscribers never see).
func validateEventData(i int, ed *eventlog.EventData) error {
	if ed.ID == uuid.Nil {
		return fmt.Errorf("event %d: id is required", i)
	}
	if ed.Type == "" {
		return fmt.Errorf("event %d (%s): type is required", i, ed.ID)
	}
	if strings.HasPrefix(ed.Type, "$") {
		return fmt.Errorf("event %d (%s): type %q: a leading '$' is reserved for system events", i, ed.ID, ed.Type)
	}
	return nil
}

// validateStream rejects names the adapter cannot serve: the empty name and
// system stream names (leading '$'), whose events subscriptions skip.
func validateStream(stream string) error {
	if stream == "" {
		return errors.New("stream id is required")
	}
	if strings.HasPrefix(stream, "$") {
		return fmt.Errorf("stream %q: a leading '$' is reserved for system streams", stream)
	}
	return nil
}

// chainEvent builds the recorded form of ed as the revision-th event of
// stream, linked to prev (the hash of the previous event of the stream, nil
// for revision 0): PrevHash and Hash are set, OccurredAt is normalised to UTC.
// Position and RecordedAt stay zero: the server assigns them.
func chainEvent(stream string, revision uint64, prev []byte, ed eventlog.EventData) eventlog.Event {
	ed.OccurredAt = ed.OccurredAt.UTC()
	e := eventlog.Event{
		EventData: ed,
		StreamID:  stream,
		Revision:  revision,
	}
	if len(prev) > 0 {
		e.PrevHash = append([]byte(nil), prev...)
	}
	e.Hash = eventlog.ChainHash(e.PrevHash, &e)
	return e
}

// toEventData maps a chained event to what the client appends: our id and
// type become the server's, the payload is stored as binary data, and the
// rest of the envelope goes into the JSON metadata document.
func toEventData(e *eventlog.Event) (es.EventData, error) {
	meta, err := json.Marshal(envelope{
		Envelope:      envelopeVersion,
		SchemaVersion: e.SchemaVersion,
		ShopID:        e.ShopID,
		OccurredAt:    e.OccurredAt.UTC().Format(time.RFC3339Nano),
		Metadata:      e.Metadata,
		PrevHash:      e.PrevHash,
		Hash:          e.Hash,
		CorrelationID: e.Metadata.CorrelationID,
		CausationID:   e.Metadata.CausationID,
	})
	if err != nil {
		return es.EventData{}, fmt.Errorf("encode envelope of event %s: %w", e.ID, err)
	}
	data := e.Data
	if data == nil {
		data = []byte{}
	}
	return es.EventData{
		EventID:     e.ID,
		EventType:   e.Type,
		ContentType: es.ContentTypeBinary,
		Data:        data,
		Metadata:    meta,
	}, nil
}

// codec maps between the port's streams and events and the server's,
// within the namespace of Config.StreamPrefix.
type codec struct {
	prefix string
	now    func() time.Time // RecordedAt when the server reports no creation time
}

// server is the server's name of the port's stream.
func (c codec) server(stream string) string { return c.prefix + stream }

// belongs reports whether a server event is part of our log: not a system
// event (stream or type starting with '$': statistics, metadata streams,
// projections, links) and within the namespace.
func (c codec) belongs(stream, eventType string) bool {
	return !strings.HasPrefix(stream, "$") && !strings.HasPrefix(eventType, "$") &&
		strings.HasPrefix(stream, c.prefix)
}

// filter is the server-side filter of every subscription: the namespace's
// streams when there is one, otherwise every event whose type does not
// start with '$'. belongs drops what it lets through that is not ours.
func (c codec) filter() *es.SubscriptionFilter {
	if c.prefix != "" {
		return &es.SubscriptionFilter{Type: es.StreamFilterType, Prefixes: []string{c.prefix}}
	}
	return &es.SubscriptionFilter{Type: es.EventFilterType, Regex: `^[^\$]`}
}

// decode maps an event read from the server back to the port's form. It
// fails on events the adapter did not write (outside the namespace, no
// envelope), on an unknown position and on a malformed envelope: such an
// event cannot be verified and must not be delivered as if it could.
func (c codec) decode(r *es.RecordedEvent) (eventlog.Event, error) {
	if r == nil {
		return eventlog.Event{}, errors.New("decode event: no event")
	}
	where := fmt.Sprintf("%s@%d (%s)", r.StreamID, r.EventNumber, r.EventID)
	if !c.belongs(r.StreamID, r.EventType) {
		return eventlog.Event{}, fmt.Errorf("decode event %s: not an event of this log", where)
	}
	pos, err := toPosition(r.Position)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("decode event %s: %w", where, err)
	}
	var env envelope
	if err := json.Unmarshal(r.UserMetadata, &env); err != nil {
		return eventlog.Event{}, fmt.Errorf("decode event %s: metadata is not a cgp envelope: %w", where, err)
	}
	if env.Envelope != envelopeVersion {
		return eventlog.Event{}, fmt.Errorf("decode event %s: unknown envelope version %d", where, env.Envelope)
	}
	if len(env.Hash) != hashLen {
		return eventlog.Event{}, fmt.Errorf("decode event %s: hash has %d bytes, want %d", where, len(env.Hash), hashLen)
	}
	if len(env.PrevHash) != 0 && len(env.PrevHash) != hashLen {
		return eventlog.Event{}, fmt.Errorf("decode event %s: previous hash has %d bytes, want %d", where, len(env.PrevHash), hashLen)
	}
	occurred, err := time.Parse(time.RFC3339Nano, env.OccurredAt)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("decode event %s: occurred_at: %w", where, err)
	}
	recorded := r.CreatedDate
	if recorded.IsZero() {
		recorded = c.now()
	}
	return eventlog.Event{
		EventData: eventlog.EventData{
			ID:            r.EventID,
			Type:          r.EventType,
			SchemaVersion: env.SchemaVersion,
			ShopID:        env.ShopID,
			OccurredAt:    occurred.UTC(),
			Data:          r.Data,
			Metadata:      env.Metadata,
		},
		StreamID:   strings.TrimPrefix(r.StreamID, c.prefix),
		Revision:   r.EventNumber,
		Position:   pos,
		RecordedAt: recorded.UTC(),
		PrevHash:   env.PrevHash,
		Hash:       env.Hash,
	}, nil
}
