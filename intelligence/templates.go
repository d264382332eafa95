package intelligence

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/campaigns"
)

// TemplateStates tells a message template's state ("" when the shop has
// no such template).
type TemplateStates interface {
	TemplateState(ctx context.Context, shop, templateID string) (string, error)
}

// blockedStatuses are the campaign statuses a template can hold up: a
// launched campaign waiting for approval, scheduled, sending or paused.
var blockedStatuses = []string{domain.CampaignStatusAwaitingApproval, domain.CampaignStatusScheduled, domain.CampaignStatusSending,
	domain.CampaignStatusPaused}

// templateBlocked lists the campaigns under way whose template is paused
// or rejected. Journeys are not covered: their steps name no template yet.
func (r *Runner) templateBlocked(ctx context.Context, shop string) (*domain.Recommendation, error) {
	if r.Campaigns == nil || r.Templates == nil {
		return nil, nil
	}
	var items []domain.RecommendedItem
	var n int
	for _, status := range blockedStatuses {
		var after *campaigns.Key
		for {
			rows, next, err := r.Campaigns.Campaigns(ctx, shop, status, campaigns.Page{After: after, Limit: pageSize})
			if err != nil {
				return nil, err
			}
			for _, c := range rows {
				if c.TemplateID == "" {
					continue
				}
				state, err := r.Templates.TemplateState(ctx, shop, c.TemplateID)
				if err != nil {
					return nil, err
				}
				if state != domain.TemplatePaused && state != domain.TemplateRejected {
					continue
				}
				n++
				if len(items) < r.topN() {
					items = append(items, domain.RecommendedItem{Type: "campaign", ID: c.ID, Figures: map[string]float64{}})
				}
			}
			if next == nil {
				break
			}
			after = next
		}
	}
	if n == 0 {
		return nil, nil
	}
	return &domain.Recommendation{Kind: domain.RecommendTemplateBlocked,
		Summary: fmt.Sprintf("%d campaigns are held up by a paused or rejected message template: edit and resubmit the template", n),
		Figures: map[string]float64{"campaigns": float64(n)}, Items: items}, nil
}
