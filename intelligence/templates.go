package intelligence

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/journeys"
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
// or rejected, and the journeys the template reactor paused because a
// template of their steps was paused or rejected (steps name templates by
// name, so the journey's pause reason is what tells).
func (r *Runner) templateBlocked(ctx context.Context, shop string) (*domain.Recommendation, error) {
	var items []domain.RecommendedItem
	n, err := r.templateBlockedCampaigns(ctx, shop, &items)
	if err != nil {
		return nil, err
	}
	m, err := r.templateBlockedJourneys(ctx, shop, &items)
	if err != nil {
		return nil, err
	}
	if n+m == 0 {
		return nil, nil
	}
	summary := fmt.Sprintf("%d campaigns are held up by a paused or rejected message template: edit and resubmit the template", n)
	if m > 0 {
		summary = fmt.Sprintf("%d campaigns and %d journeys are held up by a paused or rejected message template: edit and resubmit the template", n, m)
	}
	return &domain.Recommendation{Kind: domain.RecommendTemplateBlocked, Summary: summary,
		Figures: map[string]float64{"campaigns": float64(n), "journeys": float64(m)}, Items: items}, nil
}

// templateBlockedJourneys counts the shop's journeys paused by a paused or
// rejected template and adds them to items (up to topN items in all).
func (r *Runner) templateBlockedJourneys(ctx context.Context, shop string, items *[]domain.RecommendedItem) (int, error) {
	if r.Journeys == nil {
		return 0, nil
	}
	var n int
	var after *journeys.Key
	for {
		rows, next, err := r.Journeys.Journeys(ctx, journeys.ListQuery{Shop: shop, Status: domain.JourneyStatusPaused, After: after, Limit: pageSize})
		if err != nil {
			return 0, err
		}
		for _, j := range rows {
			if j.PausedReason != domain.PauseTemplatePaused && j.PausedReason != domain.PauseTemplateRejected {
				continue
			}
			n++
			if len(*items) < r.topN() {
				*items = append(*items, domain.RecommendedItem{Type: "journey", ID: j.ID, Figures: map[string]float64{}})
			}
		}
		if next == nil {
			return n, nil
		}
		after = next
	}
}

// templateBlockedCampaigns counts the shop's campaigns under way whose
// template is paused or rejected and adds them to items.
func (r *Runner) templateBlockedCampaigns(ctx context.Context, shop string, items *[]domain.RecommendedItem) (int, error) {
	if r.Campaigns == nil || r.Templates == nil {
		return 0, nil
	}
	var n int
	for _, status := range blockedStatuses {
		var after *campaigns.Key
		for {
			rows, next, err := r.Campaigns.Campaigns(ctx, shop, status, campaigns.Page{After: after, Limit: pageSize})
			if err != nil {
				return 0, err
			}
			for _, c := range rows {
				if c.TemplateID == "" {
					continue
				}
				state, err := r.Templates.TemplateState(ctx, shop, c.TemplateID)
				if err != nil {
					return 0, err
				}
				if state != domain.TemplatePaused && state != domain.TemplateRejected {
					continue
				}
				n++
				if len(*items) < r.topN() {
					*items = append(*items, domain.RecommendedItem{Type: "campaign", ID: c.ID, Figures: map[string]float64{}})
				}
			}
			if next == nil {
				break
			}
			after = next
		}
	}
	return n, nil
}
