package commands

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// RecordDelivery keeps an inbound delivery the service does not map to a
// domain event (unknown topic, unprocessable payload).
type RecordDelivery struct {
	ShopID      string
	Source      string
	Topic       string
	Reason      string
	Detail      string    // why, for a refused or unprocessable delivery (never a value of the payload)
	TriggeredAt time.Time // zero when unknown
	Payload     []byte
	// EventID is derived from the delivery id; the delivery's stream is
	// named after it, so a repeat appends nothing.
	EventID uuid.UUID
}

// RecordDelivery runs the command.
func (h *Handler) RecordDelivery(ctx context.Context, cmd RecordDelivery, meta Meta) (Result, error) {
	ev := &domain.WebhookDeliveryRecorded{
		ShopID: cmd.ShopID, Source: cmd.Source, Topic: cmd.Topic, Reason: cmd.Reason, Detail: cmd.Detail,
		Payload: cmd.Payload,
	}
	if !cmd.TriggeredAt.IsZero() {
		at := cmd.TriggeredAt
		ev.TriggeredAt = &at
	}
	data, err := h.codec.Encode(ctx, cmd.EventID, cmd.ShopID, ev, h.now(), meta.metadata())
	if err != nil {
		return Result{}, err
	}
	stream := domain.DeliveryStream(cmd.EventID.String())
	res, err := h.log.Append(ctx, stream, eventlog.Any(), data)
	if err != nil {
		return Result{}, err
	}
	return Result{ID: cmd.EventID.String(), Position: res.Position, Revision: res.NextExpectedRevision}, nil
}
