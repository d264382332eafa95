package projections

import (
	"context"
	"database/sql"
	"errors"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// DecodedHandler applies one decoded event.
type DecodedHandler func(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error

// Decoding returns a Handle that skips every event whose type is not in
// types, decodes the others with codec and passes them to apply. Events of
// an erased shop (envelope.ErrShopErased) are skipped: that data is gone
// for good. Any other decoding failure is returned, so the runtime retries
// and then parks the event.
func Decoding(codec *envelope.Codec, types []string, apply DecodedHandler) func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
	want := make(map[string]bool, len(types))
	for _, t := range types {
		want[t] = true
	}
	return func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
		if !want[e.Type] {
			return nil
		}
		d, err := codec.Decode(ctx, &e)
		if errors.Is(err, envelope.ErrShopErased) {
			return nil
		}
		if err != nil {
			return err
		}
		return apply(ctx, tx, &e, d)
	}
}

// Sealing returns apply with the secrets of an event that carries any
// (domain.SecretHolder) sealed first with the event's shop key under
// label (envelope.Codec.SealSecret), so that the read model holds no
// secret in clear; its queries return them sealed and the one that uses a
// secret opens it with the same label and shop.
func Sealing(codec *envelope.Codec, label string, apply DecodedHandler) DecodedHandler {
	return func(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
		if h, ok := d.Event.(domain.SecretHolder); ok {
			for _, s := range h.Secrets() {
				sealed, err := codec.SealSecret(ctx, e.ShopID, label, *s)
				if err != nil {
					return err
				}
				*s = sealed
			}
		}
		return apply(ctx, tx, e, d)
	}
}

// DecodedEvent is an event of the log with its decoded payload.
type DecodedEvent struct {
	eventlog.Event
	envelope.Decoded
}

// BatchHandler applies decoded events, in log order, in one call.
type BatchHandler func(ctx context.Context, tx *sql.Tx, events []DecodedEvent) error

// DecodingBatch is Decoding for a Projector.HandleBatch: it keeps the
// events whose type is in types, decodes them with codec (skipping those
// of an erased shop) and passes them to apply in one call, none when no
// event is left. A decoding failure is returned.
func DecodingBatch(codec *envelope.Codec, types []string, apply BatchHandler) func(ctx context.Context, tx *sql.Tx, events []eventlog.Event) error {
	want := make(map[string]bool, len(types))
	for _, t := range types {
		want[t] = true
	}
	return func(ctx context.Context, tx *sql.Tx, events []eventlog.Event) error {
		decoded := make([]DecodedEvent, 0, len(events))
		for i := range events {
			e := &events[i]
			if !want[e.Type] {
				continue
			}
			d, err := codec.Decode(ctx, e)
			if errors.Is(err, envelope.ErrShopErased) {
				continue
			}
			if err != nil {
				return err
			}
			decoded = append(decoded, DecodedEvent{Event: *e, Decoded: d})
		}
		if len(decoded) == 0 {
			return nil
		}
		return apply(ctx, tx, decoded)
	}
}

// OneByOne turns a Projector.HandleBatch into the one-event Handle.
func OneByOne(batch func(ctx context.Context, tx *sql.Tx, events []eventlog.Event) error) func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
	return func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
		return batch(ctx, tx, []eventlog.Event{e})
	}
}
