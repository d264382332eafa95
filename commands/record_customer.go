package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
)

// RecordCustomer records a customer snapshot sent by the commerce platform
// (customers/create, customers/update).
type RecordCustomer struct {
	ShopID  string
	Profile domain.CustomerProfile
	// EventID is derived from the delivery id, so that a repeated delivery
	// appends nothing (idempotent append by event id).
	EventID uuid.UUID
}

// RecordCustomer runs the command.
func (h *Handler) RecordCustomer(ctx context.Context, cmd RecordCustomer, meta Meta) (Result, error) {
	if cmd.Profile.ExternalID == "" {
		return Result{}, domain.Invalid("id", "customer id is required")
	}
	id := domain.CustomerIDFromExternal(cmd.ShopID, cmd.Profile.ExternalID)
	res, err := execute(ctx, h, cmd.ShopID, domain.CustomerStream(id), func() *domain.Customer { return &domain.Customer{} },
		func(c *domain.Customer) (decision, error) {
			if c.Exists && c.ShopID != cmd.ShopID {
				return decision{}, domain.Conflict("customer belongs to another shop")
			}
			return decision{events: []domain.Event{c.RecordProfile(cmd.ShopID, id, cmd.Profile)}, ids: []uuid.UUID{cmd.EventID}}, nil
		}, meta)
	res.ID = id
	return res, err
}
