package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// Pausing and resuming campaigns and journeys: PauseCampaign,
// ResumeCampaign and PauseJourney, ResumeJourney (admin API), and
// ApplyTemplateToCampaign, ApplyTemplateToJourney (the template reactor).

// PauseCampaign pauses a launched campaign (POST
// /api/v1/campaigns/{id}/pause).
type PauseCampaign struct {
	ShopID, CampaignID string
}

// PauseCampaign runs the command against the campaign's stream with its
// expected revision.
func (h *Handler) PauseCampaign(ctx context.Context, cmd PauseCampaign, meta Meta) (Result, *domain.CampaignPaused, error) {
	if !domain.HasPrefixID(cmd.CampaignID, domain.PrefixCampaign) {
		return Result{}, nil, domain.NotFound("campaign")
	}
	var paused *domain.CampaignPaused
	res, err := execute(ctx, h, cmd.ShopID, domain.CampaignStream(cmd.CampaignID), func() *domain.Campaign { return &domain.Campaign{} },
		func(c *domain.Campaign) (decision, error) {
			ev, err := c.Pause(cmd.ShopID, cmd.CampaignID, h.now())
			if err != nil {
				return decision{}, err
			}
			paused = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.CampaignID
	return res, paused, err
}

// ResumeCampaign resumes a paused campaign (POST
// /api/v1/campaigns/{id}/resume). TemplateApproved is the approval state
// of the campaign's template as the caller read it (see LaunchCampaign):
// a WhatsApp campaign whose template is not approved resumes to
// awaiting_approval.
type ResumeCampaign struct {
	ShopID, CampaignID string
	TemplateApproved   bool
}

// ResumeCampaign runs the command against the campaign's stream with its
// expected revision.
func (h *Handler) ResumeCampaign(ctx context.Context, cmd ResumeCampaign, meta Meta) (Result, *domain.CampaignResumed, error) {
	if !domain.HasPrefixID(cmd.CampaignID, domain.PrefixCampaign) {
		return Result{}, nil, domain.NotFound("campaign")
	}
	var resumed *domain.CampaignResumed
	res, err := execute(ctx, h, cmd.ShopID, domain.CampaignStream(cmd.CampaignID), func() *domain.Campaign { return &domain.Campaign{} },
		func(c *domain.Campaign) (decision, error) {
			ev, err := c.Resume(cmd.ShopID, cmd.CampaignID, cmd.TemplateApproved, h.now())
			if err != nil {
				return decision{}, err
			}
			resumed = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.CampaignID
	return res, resumed, err
}

// ApplyTemplateToCampaign lets a campaign react to a change of its
// message template (pause, resume, unblock; see
// domain.Campaign.ReactToTemplate). The event id derives from the template
// event and the campaign, and the campaign remembers the template events
// it handled, so a redelivered or replayed template event changes nothing
// twice.
type ApplyTemplateToCampaign struct {
	ShopID, CampaignID string
	Change             domain.TemplateChange
}

// ApplyTemplateToCampaign runs the command; the event is nil when nothing
// was appended.
func (h *Handler) ApplyTemplateToCampaign(ctx context.Context, cmd ApplyTemplateToCampaign, meta Meta) (Result, domain.Event, error) {
	if !domain.HasPrefixID(cmd.CampaignID, domain.PrefixCampaign) {
		return Result{}, nil, domain.NotFound("campaign")
	}
	var out domain.Event
	res, err := execute(ctx, h, cmd.ShopID, domain.CampaignStream(cmd.CampaignID), func() *domain.Campaign { return &domain.Campaign{} },
		func(c *domain.Campaign) (decision, error) {
			ev, err := c.ReactToTemplate(cmd.ShopID, cmd.CampaignID, cmd.Change, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			out = ev
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{templateReactionID(cmd.Change, cmd.CampaignID)}}, nil
		}, meta)
	res.ID = cmd.CampaignID
	return res, out, err
}

// PauseJourney pauses an active journey (POST /api/v1/journeys/{id}/pause).
type PauseJourney struct {
	ShopID, JourneyID string
}

// PauseJourney runs the command against the journey's stream with its
// expected revision.
func (h *Handler) PauseJourney(ctx context.Context, cmd PauseJourney, meta Meta) (Result, *domain.JourneyPaused, error) {
	if !domain.HasPrefixID(cmd.JourneyID, domain.PrefixJourney) {
		return Result{}, nil, domain.NotFound("journey")
	}
	var paused *domain.JourneyPaused
	res, err := execute(ctx, h, cmd.ShopID, domain.JourneyStream(cmd.JourneyID), func() *domain.Journey { return &domain.Journey{} },
		func(j *domain.Journey) (decision, error) {
			ev, err := j.Pause(cmd.ShopID, cmd.JourneyID, h.now())
			if err != nil {
				return decision{}, err
			}
			paused = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.JourneyID
	return res, paused, err
}

// ResumeJourney resumes a paused journey (POST
// /api/v1/journeys/{id}/resume).
type ResumeJourney struct {
	ShopID, JourneyID string
}

// ResumeJourney runs the command against the journey's stream with its
// expected revision.
func (h *Handler) ResumeJourney(ctx context.Context, cmd ResumeJourney, meta Meta) (Result, *domain.JourneyResumed, error) {
	if !domain.HasPrefixID(cmd.JourneyID, domain.PrefixJourney) {
		return Result{}, nil, domain.NotFound("journey")
	}
	var resumed *domain.JourneyResumed
	res, err := execute(ctx, h, cmd.ShopID, domain.JourneyStream(cmd.JourneyID), func() *domain.Journey { return &domain.Journey{} },
		func(j *domain.Journey) (decision, error) {
			ev, err := j.Resume(cmd.ShopID, cmd.JourneyID, h.now())
			if err != nil {
				return decision{}, err
			}
			resumed = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.JourneyID
	return res, resumed, err
}

// ApplyTemplateToJourney lets a journey react to a change of a message
// template its WhatsApp steps send (see domain.Journey.ReactToTemplate),
// once per template event, like ApplyTemplateToCampaign.
type ApplyTemplateToJourney struct {
	ShopID, JourneyID string
	Change            domain.TemplateChange
}

// ApplyTemplateToJourney runs the command; the event is nil when nothing
// was appended.
func (h *Handler) ApplyTemplateToJourney(ctx context.Context, cmd ApplyTemplateToJourney, meta Meta) (Result, domain.Event, error) {
	if !domain.HasPrefixID(cmd.JourneyID, domain.PrefixJourney) {
		return Result{}, nil, domain.NotFound("journey")
	}
	var out domain.Event
	res, err := execute(ctx, h, cmd.ShopID, domain.JourneyStream(cmd.JourneyID), func() *domain.Journey { return &domain.Journey{} },
		func(j *domain.Journey) (decision, error) {
			ev, err := j.ReactToTemplate(cmd.ShopID, cmd.JourneyID, cmd.Change, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			out = ev
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{templateReactionID(cmd.Change, cmd.JourneyID)}}, nil
		}, meta)
	res.ID = cmd.JourneyID
	return res, out, err
}

// templateReactionID is the id of the event a template event causes on
// target: the same however often the template event is handled.
func templateReactionID(t domain.TemplateChange, target string) uuid.UUID {
	return eventlog.DeterministicID("template-reaction", t.EventID, target)
}
