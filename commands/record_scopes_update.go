package commands

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
)

// RecordScopesUpdate records the scopes granted to the app on a shop
// (app/scopes_update).
type RecordScopesUpdate struct {
	ShopID    string
	Granted   []string
	Previous  []string
	UpdatedAt time.Time
	// EventID is derived from the delivery id: a repeat appends nothing.
	EventID uuid.UUID
}

// RecordScopesUpdate runs the command.
func (h *Handler) RecordScopesUpdate(ctx context.Context, cmd RecordScopesUpdate, meta Meta) (Result, error) {
	res, err := execute(ctx, h, cmd.ShopID, domain.ShopStream(cmd.ShopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			if !s.Exists {
				return decision{}, domain.NotFound("shop")
			}
			at := cmd.UpdatedAt
			if at.IsZero() {
				at = h.now()
			}
			ev := &domain.ShopScopesUpdated{ShopID: s.ID, Granted: cmd.Granted, Previous: cmd.Previous, UpdatedAt: at.UTC()}
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{cmd.EventID}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, err
}
