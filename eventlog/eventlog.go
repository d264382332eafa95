package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Position is the global position of an event in the whole log. Positions
// increase strictly in commit order. Zero means "before the first event":
// reading or subscribing from 0 starts at the beginning.
type Position = uint64

// Metadata travels with every event. It never carries personal data.
type Metadata struct {
	// CorrelationID is the request id (req_…) that caused the event, or the
	// delivery id of a webhook.
	CorrelationID string `json:"correlation_id,omitempty"`
	// CausationID is the id of the event or command that caused this one.
	CausationID string `json:"causation_id,omitempty"`
	// Actor is who acted: a token id (tok_…), a webhook delivery
	// ("webhook:<id>"), or a system job ("system:<job>"), or "cli".
	Actor string `json:"actor,omitempty"`
	// Source is one of api, webhook, system, cli.
	Source string `json:"source,omitempty"`
	// KeyIDs names the data keys used to seal the payload (shop and
	// customer subject ids), so erasure can be audited.
	KeyIDs []string `json:"key_ids,omitempty"`
}

// EventData is an event proposed for appending.
type EventData struct {
	// ID identifies the event. Appending an event whose id is already in the
	// same stream is a no-op that succeeds (idempotent append); use a
	// deterministic id (DeterministicID) to de-duplicate deliveries.
	ID uuid.UUID
	// Type is the stable, explicit type name from the catalogue, e.g.
	// "CustomerCreated". Never derived from Go type names.
	Type string
	// SchemaVersion of Data; old versions are upcast when read.
	SchemaVersion int
	// ShopID is the tenant the event belongs to ("" for account-level events).
	ShopID string
	// OccurredAt is when the fact happened (the caller's clock, UTC).
	OccurredAt time.Time
	// Data is the opaque, usually sealed, payload.
	Data []byte
	// Metadata is correlation, causation, actor and source.
	Metadata Metadata
}

// Event is a recorded event: the proposed data plus what the log assigned.
type Event struct {
	EventData
	// StreamID is "<category>-<id>", e.g. "customer-cus_…".
	StreamID string
	// Revision is the 0-based index of the event within its stream.
	Revision uint64
	// Position is the global position in the whole log.
	Position Position
	// RecordedAt is when the log committed the event (UTC).
	RecordedAt time.Time
	// PrevHash is the Hash of the previous event of the stream (nil for the
	// first), and Hash is ChainHash(PrevHash, this event).
	PrevHash []byte
	Hash     []byte
}

// AppendResult reports where an append landed.
type AppendResult struct {
	// NextExpectedRevision is the revision of the last event now in the
	// stream: pass Exact(NextExpectedRevision) to append after it.
	NextExpectedRevision uint64
	// Position is the global position of the last appended event. A client
	// may wait for read models to reach it.
	Position Position
}

// Log is the append-only event log.
//
// Every method is safe for concurrent use. Methods honour ctx cancellation;
// an Append whose ctx ends before it is durable returns ctx.Err() and may or
// may not have been applied (re-append with the same event ids to find out:
// that is idempotent). Append returns only after the events are durable.
type Log interface {
	// Append adds events to the end of stream, atomically, if the stream's
	// state matches expected; otherwise it returns a *WrongRevisionError (so
	// errors.Is(err, ErrWrongExpectedRevision) holds). Appending no events
	// checks the expectation only. If the first event's id is already in
	// the stream, the append is treated as a repeat of an earlier one and
	// returns that earlier result without writing.
	Append(ctx context.Context, stream string, expected ExpectedRevision, events ...EventData) (AppendResult, error)

	// ReadStream returns up to limit events of stream in revision order,
	// starting at revision from (inclusive). A stream that does not exist
	// yields no events and no error.
	ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]Event, error)

	// ReadAll returns up to limit events with Position > after, in position
	// order.
	ReadAll(ctx context.Context, after Position, limit int) ([]Event, error)

	// Subscribe starts a catch-up subscription delivering every event with
	// Position > after: history first, then live events, in position order,
	// with no gap and no duplicate, including events appended by other
	// processes sharing the log. The subscription ends when ctx ends or
	// Close is called.
	Subscribe(ctx context.Context, after Position) (Subscription, error)

	// HeadPosition returns the position of the last event in the log (0
	// for an empty log).
	HeadPosition(ctx context.Context) (Position, error)

	// StreamMetadata returns the stream's metadata (nil map when none).
	StreamMetadata(ctx context.Context, stream string) (map[string]string, error)

	// SetStreamMetadata replaces the stream's metadata.
	SetStreamMetadata(ctx context.Context, stream string, meta map[string]string) error

	// Close flushes pending appends and releases resources.
	Close() error
}

// WriteHealthChecker is implemented by logs that can tell whether they
// take writes (readiness): WriteHealth returns nil while they do, and the
// failure while appends fail for a reason of the store (a full disk),
// probing (bounded by ctx) whether that has passed.
type WriteHealthChecker interface {
	WriteHealth(ctx context.Context) error
}

// CommittedHeader is implemented by logs whose HeadPosition may stop
// below what is already committed (SQLite shows this process's own batches
// to readers only once they are durable): CommittedHead is the newest
// committed position, which readers see within the adapter's durability
// delay. A caller that must not miss an event committed an instant ago
// (an admin token created by another process) waits for it.
type CommittedHeader interface {
	CommittedHead(ctx context.Context) (Position, error)
}

// TypeSubscriber is implemented by logs that can leave out, when
// following the log, the payloads of events a consumer does not fold.
// SubscribeTypes behaves as Subscribe, except that an event whose type is
// not in types arrives as a skeleton: Position, ID, StreamID, Revision,
// Type, SchemaVersion, ShopID, OccurredAt and RecordedAt set; Data,
// Metadata and the hashes empty. The consumer passes skeletons over (its
// progress still moves past them) and never folds them. Catching up with
// a long log, most of a consumer's reading is of events it passes over.
type TypeSubscriber interface {
	SubscribeTypes(ctx context.Context, after Position, types []string) (Subscription, error)
}

// Subscription is a running catch-up subscription.
type Subscription interface {
	// Events delivers events in position order. It is closed when the
	// subscription ends.
	Events() <-chan Event
	// Err reports why the subscription ended once Events is closed: nil
	// after Close or ctx cancellation, the failure otherwise.
	Err() error
	// Close ends the subscription and waits for its goroutine to exit.
	Close() error
}

type expectKind uint8

const (
	expectAny expectKind = iota
	expectNoStream
	expectStreamExists
	expectExact
)

// ExpectedRevision is the state a stream must be in for an append to apply.
type ExpectedRevision struct {
	kind     expectKind
	revision uint64
}

// Any appends whatever the stream's state.
func Any() ExpectedRevision { return ExpectedRevision{kind: expectAny} }

// NoStream appends only if the stream has no events.
func NoStream() ExpectedRevision { return ExpectedRevision{kind: expectNoStream} }

// StreamExists appends only if the stream has at least one event.
func StreamExists() ExpectedRevision { return ExpectedRevision{kind: expectStreamExists} }

// Exact appends only if the stream's last event has revision rev.
func Exact(rev uint64) ExpectedRevision { return ExpectedRevision{kind: expectExact, revision: rev} }

// IsAny, IsNoStream, IsStreamExists report the kind; Revision reports the
// exact revision and whether the expectation is exact.
func (e ExpectedRevision) IsAny() bool          { return e.kind == expectAny }
func (e ExpectedRevision) IsNoStream() bool     { return e.kind == expectNoStream }
func (e ExpectedRevision) IsStreamExists() bool { return e.kind == expectStreamExists }
func (e ExpectedRevision) Revision() (uint64, bool) {
	return e.revision, e.kind == expectExact
}

// Check reports whether a stream whose last revision is current (exists
// false for a stream with no events) satisfies the expectation.
func (e ExpectedRevision) Check(current uint64, exists bool) bool {
	switch e.kind {
	case expectNoStream:
		return !exists
	case expectStreamExists:
		return exists
	case expectExact:
		return exists && current == e.revision
	default:
		return true
	}
}

func (e ExpectedRevision) String() string {
	switch e.kind {
	case expectNoStream:
		return "no stream"
	case expectStreamExists:
		return "stream exists"
	case expectExact:
		return fmt.Sprintf("revision %d", e.revision)
	default:
		return "any"
	}
}

// ErrWrongExpectedRevision is matched by every *WrongRevisionError.
var ErrWrongExpectedRevision = errors.New("wrong expected revision")

// ErrClosed is returned by a Log used after Close.
var ErrClosed = errors.New("event log closed")

// ErrUnavailable wraps failures of the underlying store that a caller may
// retry later (the HTTP edge answers 503 with Retry-After).
var ErrUnavailable = errors.New("event log unavailable")

// WrongRevisionError reports an append whose expectation did not hold.
type WrongRevisionError struct {
	Stream   string
	Expected ExpectedRevision
	// Actual is the stream's last revision; ActualExists is false when
	// the stream has no events.
	Actual       uint64
	ActualExists bool
}

func (e *WrongRevisionError) Error() string {
	actual := "no stream"
	if e.ActualExists {
		actual = fmt.Sprintf("revision %d", e.Actual)
	}
	return fmt.Sprintf("append to %s: expected %s, stream at %s", e.Stream, e.Expected, actual)
}

// Is makes errors.Is(err, ErrWrongExpectedRevision) hold.
func (e *WrongRevisionError) Is(target error) bool { return target == ErrWrongExpectedRevision }

// namespace for deterministic event ids (a fixed random UUID; never change it).
var namespace = uuid.MustParse("6f1d3c2e-9a4b-4c1e-8f27-5b0d9e4a7c31")

// DeterministicID derives a stable event id from parts, e.g. the source and
// delivery id of a webhook, so that two servers receiving the same delivery
// append the same event id and only one append takes effect.
func DeterministicID(parts ...string) uuid.UUID {
	n := 0
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p...)
		b = append(b, 0)
	}
	return uuid.NewSHA1(namespace, b)
}
