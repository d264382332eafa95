package eventbus

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// Metadata keys of a message that carries a recorded event. The message's
// UUID is the event id and its payload the event's Data; these keys carry the
// rest of the envelope. Values are decimal numbers, RFC 3339 UTC times with
// nanoseconds, lowercase hex hashes and a JSON array of key ids.
const (
	MetaStream        = "stream"
	MetaRevision      = "revision"
	MetaPosition      = "position"
	MetaType          = "type"
	MetaSchemaVersion = "schema_version"
	MetaShopID        = "shop_id"
	MetaOccurredAt    = "occurred_at"
	MetaRecordedAt    = "recorded_at"
	MetaPrevHash      = "prev_hash"
	MetaHash          = "hash"
	MetaCorrelationID = "correlation_id"
	MetaCausationID   = "causation_id"
	MetaActor         = "actor"
	MetaSource        = "source"
	MetaKeyIDs        = "key_ids"
)

// envelopeKeys are the metadata keys that map onto the event envelope.
var envelopeKeys = map[string]bool{
	MetaStream: true, MetaRevision: true, MetaPosition: true, MetaType: true,
	MetaSchemaVersion: true, MetaShopID: true, MetaOccurredAt: true,
	MetaRecordedAt: true, MetaPrevHash: true, MetaHash: true,
	MetaCorrelationID: true, MetaCausationID: true, MetaActor: true,
	MetaSource: true, MetaKeyIDs: true,
}

// MessageFromEvent returns a new message carrying e: UUID = event id,
// payload = e.Data (not copied), the envelope in metadata. Empty optional
// fields (shop, times, hashes, metadata strings, key ids) are left out.
// EventFromMessage is its inverse.
func MessageFromEvent(e eventlog.Event) *message.Message {
	msg := message.NewMessage(e.ID.String(), e.Data)
	md := msg.Metadata
	md.Set(MetaStream, e.StreamID)
	md.Set(MetaRevision, strconv.FormatUint(e.Revision, 10))
	md.Set(MetaPosition, strconv.FormatUint(e.Position, 10))
	md.Set(MetaType, e.Type)
	md.Set(MetaSchemaVersion, strconv.Itoa(e.SchemaVersion))
	setIf(md, MetaShopID, e.ShopID)
	if !e.OccurredAt.IsZero() {
		md.Set(MetaOccurredAt, formatTime(e.OccurredAt))
	}
	if !e.RecordedAt.IsZero() {
		md.Set(MetaRecordedAt, formatTime(e.RecordedAt))
	}
	if len(e.PrevHash) > 0 {
		md.Set(MetaPrevHash, hex.EncodeToString(e.PrevHash))
	}
	if len(e.Hash) > 0 {
		md.Set(MetaHash, hex.EncodeToString(e.Hash))
	}
	setMetadata(md, e.Metadata)
	return msg
}

// EventFromMessage rebuilds the recorded event carried by msg (see
// MessageFromEvent). It fails when the UUID is not a UUID, when the stream,
// revision, position or type is missing, or when any envelope value is
// malformed. Metadata keys outside the envelope are ignored. The returned
// Data shares msg.Payload.
func EventFromMessage(msg *message.Message) (eventlog.Event, error) {
	var e eventlog.Event
	for _, key := range []string{MetaStream, MetaRevision, MetaPosition, MetaType} {
		if msg.Metadata.Get(key) == "" {
			return e, fmt.Errorf("message %s: no %s in metadata", msg.UUID, key)
		}
	}
	data, err := eventDataFromMessage(msg)
	if err != nil {
		return e, err
	}
	e.EventData = data
	md := msg.Metadata
	e.StreamID = md.Get(MetaStream)
	if e.Revision, err = strconv.ParseUint(md.Get(MetaRevision), 10, 64); err != nil {
		return e, fmt.Errorf("message %s: %s: %w", msg.UUID, MetaRevision, err)
	}
	if e.Position, err = strconv.ParseUint(md.Get(MetaPosition), 10, 64); err != nil {
		return e, fmt.Errorf("message %s: %s: %w", msg.UUID, MetaPosition, err)
	}
	if e.RecordedAt, err = parseTime(md.Get(MetaRecordedAt)); err != nil {
		return e, fmt.Errorf("message %s: %s: %w", msg.UUID, MetaRecordedAt, err)
	}
	if e.PrevHash, err = parseHex(md.Get(MetaPrevHash)); err != nil {
		return e, fmt.Errorf("message %s: %s: %w", msg.UUID, MetaPrevHash, err)
	}
	if e.Hash, err = parseHex(md.Get(MetaHash)); err != nil {
		return e, fmt.Errorf("message %s: %s: %w", msg.UUID, MetaHash, err)
	}
	return e, nil
}

// PositionOf returns the log position carried by msg's metadata.
func PositionOf(msg *message.Message) (eventlog.Position, error) {
	pos, err := strconv.ParseUint(msg.Metadata.Get(MetaPosition), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("message %s: %s: %w", msg.UUID, MetaPosition, err)
	}
	return pos, nil
}

// eventDataFromMessage reads the producer's part of the envelope. The UUID
// must be a UUID; a missing schema version reads as 0 and missing times as
// the zero time.
func eventDataFromMessage(msg *message.Message) (eventlog.EventData, error) {
	id, err := uuid.Parse(msg.UUID)
	if err != nil {
		return eventlog.EventData{}, fmt.Errorf("message id %q is not a uuid: %w", msg.UUID, err)
	}
	d, err := envelopeFromMetadata(msg.UUID, msg.Metadata)
	d.ID = id
	d.Data = msg.Payload
	return d, err
}

// envelopeFromMetadata reads type, schema version, shop, occurred-at and the
// event metadata; name labels errors.
func envelopeFromMetadata(name string, md message.Metadata) (eventlog.EventData, error) {
	var (
		d   eventlog.EventData
		err error
	)
	d.Type = md.Get(MetaType)
	if v := md.Get(MetaSchemaVersion); v != "" {
		if d.SchemaVersion, err = strconv.Atoi(v); err != nil {
			return d, fmt.Errorf("message %s: %s: %w", name, MetaSchemaVersion, err)
		}
	}
	d.ShopID = md.Get(MetaShopID)
	if d.OccurredAt, err = parseTime(md.Get(MetaOccurredAt)); err != nil {
		return d, fmt.Errorf("message %s: %s: %w", name, MetaOccurredAt, err)
	}
	d.Metadata = eventlog.Metadata{
		CorrelationID: md.Get(MetaCorrelationID),
		CausationID:   md.Get(MetaCausationID),
		Actor:         md.Get(MetaActor),
		Source:        md.Get(MetaSource),
	}
	if v := md.Get(MetaKeyIDs); v != "" {
		if err := json.Unmarshal([]byte(v), &d.Metadata.KeyIDs); err != nil {
			return d, fmt.Errorf("message %s: %s: %w", name, MetaKeyIDs, err)
		}
	}
	return d, nil
}

func setMetadata(md message.Metadata, m eventlog.Metadata) {
	setIf(md, MetaCorrelationID, m.CorrelationID)
	setIf(md, MetaCausationID, m.CausationID)
	setIf(md, MetaActor, m.Actor)
	setIf(md, MetaSource, m.Source)
	if len(m.KeyIDs) > 0 {
		b, _ := json.Marshal(m.KeyIDs) // a slice of strings: never fails
		md.Set(MetaKeyIDs, string(b))
	}
}

func setIf(md message.Metadata, key, value string) {
	if value != "" {
		md.Set(key, value)
	}
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

func parseHex(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	return hex.DecodeString(s)
}

// MessageEventType is the event type under which the Publisher records a
// plain watermill message, one that names no event type in its metadata.
// Its Data is a versioned JSON document holding the message's UUID (any
// string), payload and metadata, which the event envelope has no room for;
// its event id is derived from the stream and the message UUID
// (eventlog.DeterministicID), so republishing is idempotent and the same
// message may go to several streams. The Subscriber unwraps it, so that a
// subscriber sees the message that was published.
const MessageEventType = "eventbus.Message"

// messageDoc is the Data of a MessageEventType event, schema version 1.
type messageDoc struct {
	UUID     string            `json:"uuid"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Payload  []byte            `json:"payload"`
}

var errNotWrapped = errors.New("not a wrapped message")

// wrapMessage turns a plain watermill message bound for stream into event
// data.
func wrapMessage(stream string, msg *message.Message, now time.Time) (eventlog.EventData, error) {
	d, err := envelopeFromMetadata(msg.UUID, msg.Metadata)
	if err != nil {
		return d, err
	}
	doc := messageDoc{UUID: msg.UUID, Payload: msg.Payload}
	for k, v := range msg.Metadata {
		if !envelopeKeys[k] {
			if doc.Metadata == nil {
				doc.Metadata = make(map[string]string)
			}
			doc.Metadata[k] = v
		}
	}
	if d.Data, err = json.Marshal(doc); err != nil {
		return d, fmt.Errorf("message %s: encode: %w", msg.UUID, err)
	}
	d.ID = eventlog.DeterministicID(MessageEventType, stream, msg.UUID)
	d.Type = MessageEventType
	d.SchemaVersion = 1
	if d.OccurredAt.IsZero() {
		d.OccurredAt = now.UTC()
	}
	return d, nil
}

// unwrapMessage turns a MessageEventType event back into the published
// message: its UUID, payload and metadata, plus the envelope keys.
func unwrapMessage(e eventlog.Event) (*message.Message, error) {
	if e.Type != MessageEventType || e.SchemaVersion != 1 {
		return nil, errNotWrapped
	}
	var doc messageDoc
	if err := json.Unmarshal(e.Data, &doc); err != nil {
		return nil, fmt.Errorf("event %s: decode wrapped message: %w", e.ID, err)
	}
	msg := MessageFromEvent(e)
	msg.UUID = doc.UUID
	msg.Payload = doc.Payload
	for k, v := range doc.Metadata {
		if !envelopeKeys[k] {
			msg.Metadata.Set(k, v)
		}
	}
	return msg, nil
}
