package commands

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// SetAttributionLookback changes a shop's attribution lookback window.
type SetAttributionLookback struct {
	ShopID   string
	Lookback time.Duration
}

// SetAttributionLookback runs the command: the shop must exist; the window
// is validated by the settings aggregate (1 hour to 365 days, whole
// seconds). Setting the window in force appends nothing (Position 0).
func (h *Handler) SetAttributionLookback(ctx context.Context, cmd SetAttributionLookback, meta Meta) (Result, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return Result{}, err
	}
	if !shop.Exists {
		return Result{}, domain.NotFound("shop")
	}
	res, err := execute(ctx, h, cmd.ShopID, domain.AttributionSettingsStream(cmd.ShopID),
		func() *domain.AttributionSettings { return &domain.AttributionSettings{} },
		func(s *domain.AttributionSettings) (decision, error) {
			ev, err := s.SetLookback(cmd.ShopID, cmd.Lookback, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, err
}
