package eventbus

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/cgp-platform/cgp/eventlog"
)

// ErrPublisherClosed is returned by Publish after Close.
var ErrPublisherClosed = errors.New("eventbus: publisher closed")

// ErrSubscriberClosed is returned by Subscribe after Close.
var ErrSubscriberClosed = errors.New("eventbus: subscriber closed")

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Log receives the appended events. Required. The Publisher does not
	// close it.
	Log eventlog.Log
	// Now stamps OccurredAt on messages that carry none. Default time.Now.
	Now func() time.Time
	// Timeout bounds one Publish call (messages have no shared context).
	// Default 30 s.
	Timeout time.Duration
}

func (c *PublisherConfig) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
}

// Validate reports every problem of the configuration at once.
func (c PublisherConfig) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("publisher: Log is required"))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("publisher: Timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// Publisher appends watermill messages to the event log: Publish(topic,
// msgs...) appends every message to the stream named by topic, atomically
// and with expected revision Any. Publishing the same messages to the same
// stream again is an idempotent no-op (the log's repeat detection).
//
// A message whose metadata names a type (MetaType) is a domain event: its
// UUID is the event id (it must be a UUID, unique in the whole log), its
// payload the event's Data, and its metadata must hold envelope keys only
// (the log-assigned ones, stream, revision, position, recorded_at and the
// hashes, are ignored). A message without a type is recorded as a
// MessageEventType event that keeps its UUID, payload and all its metadata.
//
// A Publisher is safe for concurrent use.
type Publisher struct {
	cfg    PublisherConfig
	closed atomic.Bool
}

// NewPublisher returns a Publisher over cfg.Log.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new publisher: %w", err)
	}
	return &Publisher{cfg: cfg}, nil
}

// Publish appends msgs to the stream topic. The context of the first
// message bounds the append, with the configured Timeout.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	if p.closed.Load() {
		return ErrPublisherClosed
	}
	f, err := ParseTopic(topic)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if f.kind != topicStream {
		return fmt.Errorf("publish to %q: only a stream topic can be published to", topic)
	}
	if len(msgs) == 0 {
		return nil
	}
	now := p.cfg.Now()
	events := make([]eventlog.EventData, 0, len(msgs))
	for _, msg := range msgs {
		d, err := p.eventData(topic, msg, now)
		if err != nil {
			return fmt.Errorf("publish to %s: %w", topic, err)
		}
		events = append(events, d)
	}
	ctx, cancel := context.WithTimeout(msgs[0].Context(), p.cfg.Timeout)
	defer cancel()
	if _, err := p.cfg.Log.Append(ctx, topic, eventlog.Any(), events...); err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	return nil
}

func (p *Publisher) eventData(stream string, msg *message.Message, now time.Time) (eventlog.EventData, error) {
	if msg.Metadata.Get(MetaType) == "" {
		return wrapMessage(stream, msg, now)
	}
	for k := range msg.Metadata {
		if !envelopeKeys[k] {
			return eventlog.EventData{}, fmt.Errorf("message %s: metadata key %q has no place in the event envelope", msg.UUID, k)
		}
	}
	d, err := eventDataFromMessage(msg)
	if err != nil {
		return d, err
	}
	if d.OccurredAt.IsZero() {
		d.OccurredAt = now.UTC()
	}
	if d.SchemaVersion == 0 {
		d.SchemaVersion = 1
	}
	return d, nil
}

// Close makes later Publish calls fail. It does not close the log.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	return nil
}

var _ message.Publisher = (*Publisher)(nil)
