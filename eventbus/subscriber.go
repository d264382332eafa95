package eventbus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/eventlog"
)

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Log is followed. Required. The Subscriber does not close it.
	Log eventlog.Log
	// Consumer names the reader to StartAfter (a projector's name).
	// Default: the subscribed topic.
	Consumer string
	// StartAfter returns the position after which a new subscription
	// starts: the consumer's checkpoint. Nil starts at the beginning of
	// the log. It is called once per Subscribe, with Subscribe's ctx.
	StartAfter func(ctx context.Context, consumer string) (eventlog.Position, error)
	// NackBackoff is the pause before a Nacked message is delivered
	// again. Default 100 ms.
	NackBackoff time.Duration
	// ResubscribeBackoff is the pause before following the log again
	// after the log's subscription failed. Default 1 s.
	ResubscribeBackoff time.Duration
	// Raw delivers MessageEventType events as recorded (UUID = event id,
	// payload = the wrapper document) instead of unwrapping them, so that
	// every message is exactly one log event (EventFromMessage always
	// succeeds). Projectors use it.
	Raw bool
	// Wants, when set, says which event types become messages; the others
	// are passed over, and Passed (when set) is told each one's position,
	// in log order and only once every message before it was
	// acknowledged, so the consumer's progress still moves. Projectors
	// pass over the event types they do not fold.
	Wants  func(eventType string) bool
	Passed func(pos eventlog.Position)
	// Types, when set, lists the only event types Wants accepts: a log
	// that can (eventlog.TypeSubscriber) then leaves the payloads of the
	// others unread, which is most of a catch-up's reading for a consumer
	// that folds a few types of a long log.
	Types []string
	// Batch, above 1 with Raw, lets one message carry up to Batch
	// consecutive events that were already waiting (never waiting for
	// more): the message is the first event's, and EventsFromMessage
	// returns them all. A consumer applying them in one transaction pays
	// its per-transaction cost once per batch.
	Batch int
	// Logger receives subscription failures (never payloads). The zero
	// value discards.
	Logger zerolog.Logger
}

func (c *SubscriberConfig) setDefaults() {
	if c.NackBackoff == 0 {
		c.NackBackoff = 100 * time.Millisecond
	}
	if c.ResubscribeBackoff == 0 {
		c.ResubscribeBackoff = time.Second
	}
}

// Validate reports every problem of the configuration at once.
func (c SubscriberConfig) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("subscriber: Log is required"))
	}
	if c.NackBackoff < 0 {
		errs = append(errs, errors.New("subscriber: NackBackoff must not be negative"))
	}
	if c.ResubscribeBackoff < 0 {
		errs = append(errs, errors.New("subscriber: ResubscribeBackoff must not be negative"))
	}
	return errors.Join(errs...)
}

// Subscriber follows the event log for watermill. Each Subscribe starts a
// catch-up subscription after the position StartAfter returns and delivers
// the events that match the topic (see ParseTopic) in log order, one at a
// time: the next message is sent only after the previous one is Acked. A
// Nacked message is sent again, as a new message with the same UUID, after
// NackBackoff. Delivery is at least once: a new subscription starts again
// after the checkpoint, so a consumer must be idempotent.
//
// Each message's context derives from Subscribe's ctx and ends when the
// message is Acked or Nacked, or the subscription ends. The output channel
// is closed when ctx ends, on Close, or when the log is closed; a failed log
// subscription is resumed after ResubscribeBackoff from the last handled
// event. Close waits for every subscription's goroutine to exit.
type Subscriber struct {
	cfg SubscriberConfig

	mu      sync.Mutex
	closed  bool
	cancels map[int]context.CancelFunc
	nextID  int
	wg      sync.WaitGroup
}

// NewSubscriber returns a Subscriber over cfg.Log.
func NewSubscriber(cfg SubscriberConfig) (*Subscriber, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new subscriber: %w", err)
	}
	return &Subscriber{cfg: cfg, cancels: make(map[int]context.CancelFunc)}, nil
}

// Subscribe starts following topic. It fails when the topic is invalid,
// StartAfter fails, the log refuses the subscription, or after Close.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	filter, err := ParseTopic(topic)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	consumer := s.cfg.Consumer
	if consumer == "" {
		consumer = topic
	}
	var after eventlog.Position
	if s.cfg.StartAfter != nil {
		if after, err = s.cfg.StartAfter(ctx, consumer); err != nil {
			return nil, fmt.Errorf("subscribe %s: start position of %s: %w", topic, consumer, err)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSubscriberClosed
	}
	subCtx, cancel := context.WithCancel(ctx)
	logSub, err := subscribeLog(subCtx, s.cfg, after)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("subscribe %s after %d: %w", topic, after, err)
	}
	id := s.nextID
	s.nextID++
	s.cancels[id] = cancel
	out := make(chan *message.Message)
	f := &follower{
		cfg:    &s.cfg,
		filter: filter,
		out:    out,
		after:  after,
		log:    s.cfg.Logger.With().Str("topic", topic).Str("consumer", consumer).Logger(),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.cancels, id)
			s.mu.Unlock()
			cancel()
		}()
		f.run(subCtx, logSub)
	}()
	return out, nil
}

// Close ends every subscription, closing their output channels, and waits
// for their goroutines. It is idempotent.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, cancel := range s.cancels {
		cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

var _ message.Subscriber = (*Subscriber)(nil)

// follower is one subscription's goroutine state.
type follower struct {
	cfg    *SubscriberConfig
	filter Topic
	out    chan *message.Message
	after  eventlog.Position // last event handled (delivered and Acked, or filtered out)
	log    zerolog.Logger
}

// run delivers until ctx ends or the log is closed; it closes out on exit.
func (f *follower) run(ctx context.Context, logSub eventlog.Subscription) {
	defer close(f.out)
	for {
		ok := f.follow(ctx, logSub)
		err := logSub.Err()
		_ = logSub.Close()
		if !ok || ctx.Err() != nil {
			return
		}
		if err == nil || errors.Is(err, eventlog.ErrClosed) {
			return // the log ended the subscription on purpose
		}
		f.log.Warn().Err(err).Uint64("position", f.after).Msg("log subscription failed; resubscribing")
		for {
			if !sleep(ctx, f.cfg.ResubscribeBackoff) {
				return
			}
			if logSub, err = subscribeLog(ctx, *f.cfg, f.after); err == nil {
				break
			}
			if errors.Is(err, eventlog.ErrClosed) {
				return
			}
			f.log.Warn().Err(err).Uint64("position", f.after).Msg("resubscribe failed")
		}
	}
}

// subscribeLog follows the log after after, skimming the types cfg does
// not want when cfg names them and the log can.
func subscribeLog(ctx context.Context, cfg SubscriberConfig, after eventlog.Position) (eventlog.Subscription, error) {
	if ts, ok := cfg.Log.(eventlog.TypeSubscriber); ok && cfg.Types != nil {
		return ts.SubscribeTypes(ctx, after, cfg.Types)
	}
	return cfg.Log.Subscribe(ctx, after)
}

// follow delivers the events of logSub until its channel closes (true) or
// ctx ends (false).
func (f *follower) follow(ctx context.Context, logSub eventlog.Subscription) bool {
	events := logSub.Events()
	for {
		select {
		case <-ctx.Done():
			return false
		case e, open := <-events:
			if !open {
				return true
			}
			for {
				if e.Position <= f.after {
					break // already handled before a resubscription
				}
				if !f.filter.Match(&e) {
					f.after = e.Position
					break
				}
				if !f.wants(&e) {
					if f.cfg.Passed != nil {
						f.cfg.Passed(e.Position)
					}
					f.after = e.Position
					break
				}
				batch, next, more, closed := f.collect(events, e)
				if !f.deliver(ctx, batch) {
					return false
				}
				f.after = batch[len(batch)-1].Position
				if closed {
					return true
				}
				if !more {
					break
				}
				e = next // the event that ended the batch, not handled yet
			}
		}
	}
}

// collect gathers, after first, the events already waiting on events that
// are delivered too, up to Batch. It stops at the first event that is not
// (filtered out or not wanted: it must not be passed over before the batch
// is acknowledged) and returns it as next with more = true; closed reports
// that the channel closed meanwhile.
func (f *follower) collect(events <-chan eventlog.Event, first eventlog.Event) (batch []eventlog.Event, next eventlog.Event, more, closed bool) {
	batch = []eventlog.Event{first}
	if !f.cfg.Raw || f.cfg.Batch <= 1 {
		return batch, next, false, false
	}
	for len(batch) < f.cfg.Batch {
		select {
		case e, open := <-events:
			if !open {
				return batch, next, false, true
			}
			if e.Position <= batch[len(batch)-1].Position {
				continue
			}
			if !f.filter.Match(&e) || !f.wants(&e) {
				return batch, e, true, false
			}
			batch = append(batch, e)
		default:
			return batch, next, false, false
		}
	}
	return batch, next, false, false
}

// wants reports whether e becomes a message (see Wants).
func (f *follower) wants(e *eventlog.Event) bool {
	return f.cfg.Wants == nil || f.cfg.Wants(e.Type)
}

// deliver sends the message of batch (one event, or several with Batch)
// until it is Acked (true) or ctx ends (false).
func (f *follower) deliver(ctx context.Context, batch []eventlog.Event) bool {
	for {
		msg := f.message(batch[0])
		msgCtx, cancel := context.WithCancel(ctx)
		if len(batch) > 1 {
			msg.SetContext(context.WithValue(msgCtx, batchKey{}, batch))
		} else {
			msg.SetContext(msgCtx)
		}
		select {
		case f.out <- msg:
		case <-ctx.Done():
			cancel()
			return false
		}
		select {
		case <-msg.Acked():
			cancel()
			return true
		case <-msg.Nacked():
			cancel()
			if !sleep(ctx, f.cfg.NackBackoff) {
				return false
			}
		case <-ctx.Done():
			cancel()
			return false
		}
	}
}

// message turns e into the message to deliver.
func (f *follower) message(e eventlog.Event) *message.Message {
	if f.cfg.Raw {
		return MessageFromEvent(e)
	}
	msg, err := unwrapMessage(e)
	if err != nil {
		if !errors.Is(err, errNotWrapped) {
			f.log.Warn().Err(err).Uint64("position", e.Position).Str("event_type", e.Type).Msg("delivering wrapped message as recorded")
		}
		return MessageFromEvent(e)
	}
	return msg
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// batchKey carries a message's batch of events in its context: messages
// stay in process, so the events need no second encoding.
type batchKey struct{}

// EventsFromMessage returns the events a message of a Raw subscription
// carries: the batch (see SubscriberConfig.Batch), or its one event.
func EventsFromMessage(msg *message.Message) ([]eventlog.Event, error) {
	if batch, ok := msg.Context().Value(batchKey{}).([]eventlog.Event); ok {
		return batch, nil
	}
	e, err := EventFromMessage(msg)
	if err != nil {
		return nil, err
	}
	return []eventlog.Event{e}, nil
}
