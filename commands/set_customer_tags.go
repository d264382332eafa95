package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// SetCustomerTags replaces the tags of a customer of a shop (PATCH
// /api/v1/customers/{id}).
type SetCustomerTags struct {
	ShopID     string
	CustomerID string
	Tags       []string
}

// SetCustomerTags runs the command. A customer of another shop is not found.
func (h *Handler) SetCustomerTags(ctx context.Context, cmd SetCustomerTags, meta Meta) (Result, error) {
	if !domain.HasPrefixID(cmd.CustomerID, domain.PrefixCustomer) {
		return Result{}, domain.NotFound("customer")
	}
	res, err := execute(ctx, h, cmd.ShopID, domain.CustomerStream(cmd.CustomerID), func() *domain.Customer { return &domain.Customer{} },
		func(c *domain.Customer) (decision, error) {
			if !c.Exists || c.ShopID != cmd.ShopID {
				return decision{}, domain.NotFound("customer")
			}
			ev, err := c.SetTags(cmd.Tags)
			if err != nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.CustomerID
	return res, err
}
