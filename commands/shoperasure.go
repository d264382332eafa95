package commands

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// ShopErasedEventID is the id of a shop's ShopErased event: derived from
// the shop id alone, so the erasure is recorded once whatever asked for it
// (shop/redact, the countdown) and however often.
func ShopErasedEventID(shopID string) uuid.UUID {
	return eventlog.DeterministicID("shop-erased", shopID)
}

// EraseShop records that all the shop's data is to be erased for good
// (ShopErased); the erasure reactor then shreds its keys and every
// projector drops its rows.
type EraseShop struct {
	ShopID string
	// Reason is domain.ShopErasedRedact or domain.ShopErasedRetention.
	Reason string
	// RequestEventID is the ShopRedactRequested event's id ("" for the
	// countdown).
	RequestEventID string
	// At is the time of the decision (the countdown's clock); zero: now.
	At time.Time
}

// EraseShop runs the command. A shop erased already appends nothing; the
// countdown's erasure of a shop reinstalled meanwhile is a conflict.
func (h *Handler) EraseShop(ctx context.Context, cmd EraseShop, meta Meta) (Result, error) {
	at := cmd.At
	if at.IsZero() {
		at = h.now()
	}
	res, err := execute(ctx, h, cmd.ShopID, domain.ShopStream(cmd.ShopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			ev, err := s.EraseShop(cmd.Reason, cmd.RequestEventID, at)
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{ShopErasedEventID(cmd.ShopID)}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, err
}

// ReinstallApp records that the shop installed the app again, which
// cancels its retention countdown (`cgp shops reinstall`: the platform's
// install flow is outside the service).
type ReinstallApp struct {
	ShopID string
	At     time.Time // zero: now
}

// ReinstallApp runs the command; an installed shop appends nothing.
func (h *Handler) ReinstallApp(ctx context.Context, cmd ReinstallApp, meta Meta) (Result, error) {
	at := cmd.At
	if at.IsZero() {
		at = h.now()
	}
	res, err := execute(ctx, h, cmd.ShopID, domain.ShopStream(cmd.ShopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			ev, err := s.ReinstallApp(at)
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, err
}
