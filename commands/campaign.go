package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// The admin API's audience and campaign writes: CreateAudience,
// CreateCampaign and LaunchCampaign.

// CreateAudience saves a segment of customers (POST /api/v1/audiences).
type CreateAudience struct {
	ShopID string
	Draft  domain.AudienceDraft
}

// CreateAudience runs the command; the result's ID is the new audience's
// id.
func (h *Handler) CreateAudience(ctx context.Context, cmd CreateAudience, meta Meta) (Result, *domain.AudienceCreated, error) {
	ev, err := domain.NewAudience(cmd.ShopID, cmd.Draft, h.now())
	if err != nil {
		return Result{}, nil, err
	}
	res, err := h.appendNew(ctx, cmd.ShopID, domain.AudienceStream(ev.AudienceID), ev, meta)
	res.ID = ev.AudienceID
	return res, ev, err
}

// CreateCampaign creates a draft campaign (POST /api/v1/campaigns). The
// audience is read from its own stream in the log, not from a read model,
// so an audience created just before is always found.
type CreateCampaign struct {
	ShopID string
	Draft  domain.CampaignDraft
}

// CreateCampaign runs the command; the result's ID is the new campaign's
// id. A missing audience_id, or one the shop does not have, is a
// validation error on audience_id.
func (h *Handler) CreateCampaign(ctx context.Context, cmd CreateCampaign, meta Meta) (Result, *domain.CampaignCreated, error) {
	var audience *domain.Audience
	if domain.HasPrefixID(cmd.Draft.AudienceID, domain.PrefixAudience) {
		audience = &domain.Audience{}
		if _, _, err := h.load(ctx, domain.AudienceStream(cmd.Draft.AudienceID), audience); err != nil {
			return Result{}, nil, err
		}
	}
	ev, err := domain.NewCampaign(cmd.ShopID, cmd.Draft, audience, h.now())
	if err != nil {
		return Result{}, nil, err
	}
	res, err := h.appendNew(ctx, cmd.ShopID, domain.CampaignStream(ev.CampaignID), ev, meta)
	res.ID = ev.CampaignID
	return res, ev, err
}

// LaunchCampaign launches a draft campaign (POST
// /api/v1/campaigns/{id}/launch).
//
// TemplateApproved is the approval state of the campaign's message
// template as the caller read it from the messaging read model: the
// command decides the status from it (sending, or awaiting_approval), but
// does not look it up itself, because a template's state is a projection
// of many template events and commands read only the streams they write.
// A template approved a moment after the read is handled like any later
// approval (the campaign waits, then is unblocked).
//
// The caller also resolves, from the read models, the WhatsApp template
// the campaign names (TemplateName, TemplateLanguage) and the audience's
// recipients on the campaign's channel (Recipients, with the counts of
// the customers left out): the launch appends them, with the launch, in
// one append, as the audience snapshot that the sender works from.
type LaunchCampaign struct {
	ShopID           string
	CampaignID       string
	TemplateApproved bool
	TemplateName     string
	TemplateLanguage string
	Recipients       []string
	SkippedConsent   int
	SkippedAddress   int
}

// LaunchCampaign runs the command against the campaign's stream with its
// expected revision, so two launches racing each other give one launch and
// one conflict.
func (h *Handler) LaunchCampaign(ctx context.Context, cmd LaunchCampaign, meta Meta) (Result, *domain.CampaignLaunched, error) {
	if !domain.HasPrefixID(cmd.CampaignID, domain.PrefixCampaign) {
		return Result{}, nil, domain.NotFound("campaign")
	}
	var launched *domain.CampaignLaunched
	res, err := execute(ctx, h, cmd.ShopID, domain.CampaignStream(cmd.CampaignID), func() *domain.Campaign { return &domain.Campaign{} },
		func(c *domain.Campaign) (decision, error) {
			ev, err := c.Launch(cmd.ShopID, cmd.CampaignID, cmd.TemplateApproved, h.now())
			if err != nil {
				return decision{}, err
			}
			ev.TemplateName, ev.TemplateLanguage = cmd.TemplateName, cmd.TemplateLanguage
			launched = ev
			events := append([]domain.Event{ev},
				domain.SnapshotAudience(cmd.ShopID, cmd.CampaignID, cmd.Recipients, cmd.SkippedConsent, cmd.SkippedAddress, h.now())...)
			return decision{events: events}, nil
		}, meta)
	res.ID = cmd.CampaignID
	return res, launched, err
}

// Campaign returns a shop's campaign and its audience, read from their
// streams, for the launch's look-ups. A campaign of another shop is not
// found.
func (h *Handler) Campaign(ctx context.Context, shopID, campaignID string) (*domain.Campaign, *domain.Audience, error) {
	if !domain.HasPrefixID(campaignID, domain.PrefixCampaign) {
		return nil, nil, domain.NotFound("campaign")
	}
	var c domain.Campaign
	if _, _, err := h.load(ctx, domain.CampaignStream(campaignID), &c); err != nil {
		return nil, nil, err
	}
	if !c.Exists || c.ShopID != shopID {
		return nil, nil, domain.NotFound("campaign")
	}
	var a domain.Audience
	if domain.HasPrefixID(c.AudienceID, domain.PrefixAudience) {
		if _, _, err := h.load(ctx, domain.AudienceStream(c.AudienceID), &a); err != nil {
			return nil, nil, err
		}
	}
	return &c, &a, nil
}

// CampaignTemplate returns the channel and template id of a shop's
// campaign, read from its stream, so the caller can look the template's
// state up before LaunchCampaign. A campaign of another shop is not found.
func (h *Handler) CampaignTemplate(ctx context.Context, shopID, campaignID string) (channel, templateID string, err error) {
	if !domain.HasPrefixID(campaignID, domain.PrefixCampaign) {
		return "", "", domain.NotFound("campaign")
	}
	var c domain.Campaign
	if _, _, err := h.load(ctx, domain.CampaignStream(campaignID), &c); err != nil {
		return "", "", err
	}
	if !c.Exists || c.ShopID != shopID {
		return "", "", domain.NotFound("campaign")
	}
	return c.Channel, c.TemplateID, nil
}
