package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// ConfigureFlow edits a shop's settings of a built-in flow (PATCH
// /api/v1/flows/{flow}).
type ConfigureFlow struct {
	ShopID, Flow string
	Patch        domain.FlowPatch
}

// ConfigureFlow runs the command against the flow's stream with its
// expected revision and returns the settings as they now are.
func (h *Handler) ConfigureFlow(ctx context.Context, cmd ConfigureFlow, meta Meta) (Result, *domain.FlowConfigured, error) {
	var configured *domain.FlowConfigured
	res, err := execute(ctx, h, cmd.ShopID, domain.FlowStream(cmd.ShopID, cmd.Flow), func() *domain.Flow { return &domain.Flow{} },
		func(f *domain.Flow) (decision, error) {
			ev, err := f.Configure(cmd.ShopID, cmd.Flow, cmd.Patch, h.now())
			if err != nil {
				return decision{}, err
			}
			configured = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.Flow
	return res, configured, err
}
