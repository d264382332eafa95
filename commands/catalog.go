package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// The admin API's catalog writes: CreateProduct, UpdateProduct and
// AdjustInventory.

// CreateProduct creates a product the service owns (POST
// /api/v1/products).
type CreateProduct struct {
	ShopID string
	Draft  domain.ProductDraft
}

// CreateProduct runs the command; the result's ID is the new product's id.
func (h *Handler) CreateProduct(ctx context.Context, cmd CreateProduct, meta Meta) (Result, *domain.ProductCreated, error) {
	ev, err := domain.NewProduct(cmd.ShopID, cmd.Draft, h.now())
	if err != nil {
		return Result{}, nil, err
	}
	res, err := h.appendNew(ctx, cmd.ShopID, domain.ProductStream(ev.ProductID), ev, meta)
	res.ID = ev.ProductID
	return res, ev, err
}

// UpdateProduct changes a product of a shop (PATCH /api/v1/products/{id}),
// whether the platform or the API created it.
type UpdateProduct struct {
	ShopID    string
	ProductID string
	Changes   domain.ProductChanges
}

// UpdateProduct runs the command and returns the event it recorded. A
// product of another shop is not found; a variant it does not have is a
// validation failure naming variants[i].id.
func (h *Handler) UpdateProduct(ctx context.Context, cmd UpdateProduct, meta Meta) (Result, *domain.ProductUpdated, error) {
	if !domain.HasPrefixID(cmd.ProductID, domain.PrefixProduct) {
		return Result{}, nil, domain.NotFound("product")
	}
	var recorded *domain.ProductUpdated
	res, err := execute(ctx, h, cmd.ShopID, domain.ProductStream(cmd.ProductID), func() *domain.CatalogProduct { return &domain.CatalogProduct{} },
		func(p *domain.CatalogProduct) (decision, error) {
			ev, err := p.Update(cmd.ShopID, cmd.ProductID, cmd.Changes, h.now())
			if err != nil {
				return decision{}, err
			}
			recorded = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ProductID
	return res, recorded, err
}

// AdjustInventory sets the available quantities of up to 100 inventory
// levels of a shop (PATCH /api/v1/inventory) in one event and one append:
// all or nothing. An invalid item rejects the whole request with a
// *domain.BulkError listing every bad item.
type AdjustInventory struct {
	ShopID string
	Items  []domain.InventorySet
}

// AdjustInventory runs the command.
func (h *Handler) AdjustInventory(ctx context.Context, cmd AdjustInventory, meta Meta) (Result, *domain.InventoryAdjusted, error) {
	ev, err := domain.AdjustInventory(cmd.ShopID, cmd.Items, h.now())
	if err != nil {
		return Result{}, nil, err
	}
	// Setting a quantity depends on no earlier adjustment: each request is
	// a new stream of its own.
	res, err := h.appendNew(ctx, cmd.ShopID, domain.InventoryAdjustmentStream(ev.AdjustmentID), ev, meta)
	res.ID = ev.AdjustmentID
	return res, ev, err
}
