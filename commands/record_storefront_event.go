package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// RecordStorefrontEvent records a storefront pixel event of a shop.
type RecordStorefrontEvent struct {
	ShopID string
	Event  domain.StorefrontEvent
}

// RecordStorefrontEvent runs the command: one event appended to the
// visitor's stream (any revision: events of a visitor only accumulate).
func (h *Handler) RecordStorefrontEvent(ctx context.Context, cmd RecordStorefrontEvent, meta Meta) (Result, error) {
	now := h.now()
	ev, err := domain.RecordStorefrontEvent(cmd.ShopID, cmd.Event, now)
	if err != nil {
		return Result{}, err
	}
	data, err := h.codec.Encode(ctx, newEventID(), cmd.ShopID, ev, now, meta.metadata())
	if err != nil {
		return Result{}, err
	}
	res, err := h.log.Append(ctx, domain.VisitorStream(cmd.ShopID, ev.AnonymousID), eventlog.Any(), data)
	if err != nil {
		return Result{}, err
	}
	return Result{ID: data.ID.String(), Position: res.Position, Revision: res.NextExpectedRevision}, nil
}
