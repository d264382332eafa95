package projections

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// TxCases is the dispatch by event type of a projector that writes each
// event in SQL as it comes (a DecodedHandler), written once: the types the
// projector folds (Projector.Types, and those Decoding decodes) are read
// from the cases, as for Cases, so that they are not listed a second time
// beside a type switch.
type TxCases struct {
	dispatch[DecodedHandler]
}

// TxCase applies events of one type in a transaction.
type TxCase struct {
	typ   string
	apply DecodedHandler
}

// OnTx is the case of the event type E (a pointer to a domain event, as
// the codec decodes it).
func OnTx[E domain.Event](apply func(ctx context.Context, tx *sql.Tx, ev E, e *DecodedEvent) error) TxCase {
	return TxCase{typ: eventType[E](), apply: func(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
		return apply(ctx, tx, d.Event.(E), &DecodedEvent{Event: *e, Decoded: d})
	}}
}

// NewTxCases returns the dispatch of cases (one per event type).
func NewTxCases(cases ...TxCase) TxCases {
	var c TxCases
	for _, k := range cases {
		c.add(k.typ, k.apply)
	}
	return c
}

// Apply applies e with the case of its type (a DecodedHandler); an event
// of a type without a case is passed over.
func (c TxCases) Apply(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
	if apply, ok := c.by[e.Type]; ok {
		return apply(ctx, tx, e, d)
	}
	return nil
}

// Handle is the Projector.Handle of the cases: it decodes the events of
// their types (Decoding) and applies them, with wrap, when given, around
// Apply (Sealing, say).
func (c TxCases) Handle(codec *envelope.Codec, wrap func(DecodedHandler) DecodedHandler) func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
	var apply DecodedHandler = c.Apply
	if wrap != nil {
		apply = wrap(apply)
	}
	return Decoding(codec, c.types, apply)
}

// WrapErrors returns apply with each error it returns prefixed with what
// and the event's type ("messaging WhatsAppMessageReceived: …").
func WrapErrors(what string, apply DecodedHandler) DecodedHandler {
	return func(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
		if err := apply(ctx, tx, e, d); err != nil {
			return fmt.Errorf("%s %s: %w", what, e.Type, err)
		}
		return nil
	}
}
