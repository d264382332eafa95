package writeapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/readapi"
)

// Scopes of the audience and campaign writes.
const (
	ScopeCampaignsWrite = domain.ScopeCampaignsWrite
	ScopeAudiencesWrite = domain.ScopeCustomersWrite
)

// TemplateStates tells whether a shop's message template is approved, as
// the messaging read model has it; an unknown template is not approved.
type TemplateStates interface {
	TemplateApproved(ctx context.Context, shop, templateID string) (bool, error)
}

// LaunchReads is what a launch reads from the read models: the
// template a WhatsApp campaign names, whether the shop can send on the
// campaign's channel, and the audience's recipients on it.
type LaunchReads interface {
	TemplateStates
	// Template returns the name, language and state of a shop's WhatsApp
	// message template; found is false when the shop has none of that id.
	Template(ctx context.Context, shop, templateID string) (name, language, state string, found bool, err error)
	// ChannelReady fails with a validation error on field channel when
	// the shop cannot send on channel (no connected WhatsApp account with
	// an access token, no SMTP relay configured, …).
	ChannelReady(ctx context.Context, shop, channel string) error
	// Recipients lists the customers of the audience filtered by f who
	// may receive a marketing message on channel, with the counts of the
	// others (no consent, no address).
	Recipients(ctx context.Context, shop string, f domain.AudienceFilters, channel string, now time.Time) (ids []string, skippedConsent, skippedAddress int, err error)
}

// Campaigns serves the audience (beta) and campaign writes.
type Campaigns struct {
	idem      func(http.Handler) http.Handler
	cmds      *commands.Handler
	auth      *auth.Authenticator
	q         *campaigns.Queries
	templates LaunchReads
	counts    readapi.CampaignCounter
	wait      readapi.Waiter
}

// NewCampaigns returns the audience and campaign write handlers. idem
// wraps every write in Idempotency-Key handling; templates is read at
// launch.
func NewCampaigns(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *campaigns.Queries,
	templates LaunchReads, counts readapi.CampaignCounter, wait readapi.Waiter) *Campaigns {
	return &Campaigns{cmds: cmds, auth: a, idem: idem, q: q, templates: templates, counts: counts, wait: wait}
}

// Routes registers the audience and campaign writes.
func (c *Campaigns) Routes(r *mux.Router) {
	write := func(scope domain.Scope, h http.HandlerFunc) http.Handler { return c.auth.Require(scope, c.idem(h)) }
	r.Handle("/api/v1/campaigns", httpapi.Stable(write(ScopeCampaignsWrite, c.handleCampaignCreate))).Methods(http.MethodPost)
	r.Handle("/api/v1/campaigns/{id}/launch", httpapi.Stable(write(ScopeCampaignsWrite, c.handleCampaignLaunch))).Methods(http.MethodPost)
	r.Handle("/api/v1/campaigns/{id}/pause", httpapi.Beta(write(ScopeCampaignsWrite, c.handleCampaignPause))).Methods(http.MethodPost)
	r.Handle("/api/v1/campaigns/{id}/resume", httpapi.Beta(write(ScopeCampaignsWrite, c.handleCampaignResume))).Methods(http.MethodPost)
	r.Handle("/api/v1/audiences", httpapi.Beta(write(ScopeAudiencesWrite, c.handleAudienceCreate))).Methods(http.MethodPost)
}

type audienceFiltersBody struct {
	LifecycleStages []string         `json:"lifecycle_stages"`
	Tags            []string         `json:"tags"`
	MinTotalSpent   *json.RawMessage `json:"min_total_spent"`
	MaxTotalSpent   *json.RawMessage `json:"max_total_spent"`
	LastOrderAfter  *string          `json:"last_order_after"`
	LastOrderBefore *string          `json:"last_order_before"`
}

type audienceCreateBody struct {
	Name    string              `json:"name"`
	Filters audienceFiltersBody `json:"filters"`
}

// draft parses the amounts (decimal numbers or strings) and the times (RFC
// 3339) of the body.
func (b audienceCreateBody) draft() (domain.AudienceDraft, error) {
	f := b.Filters
	d := domain.AudienceDraft{Name: b.Name, Filters: domain.AudienceFilters{LifecycleStages: f.LifecycleStages, Tags: f.Tags}}
	for _, a := range []struct {
		field string
		in    *json.RawMessage
		out   **domain.Amount
	}{{"filters.min_total_spent", f.MinTotalSpent, &d.Filters.MinTotalSpent}, {"filters.max_total_spent", f.MaxTotalSpent, &d.Filters.MaxTotalSpent}} {
		if a.in == nil {
			continue
		}
		v, err := parseAmount(*a.in)
		if err != nil {
			return d, httpapi.ValidationFailed(a.field, "must be a decimal amount such as 100.00")
		}
		*a.out = &v
	}
	for _, t := range []struct {
		field string
		in    *string
		out   **time.Time
	}{{"filters.last_order_after", f.LastOrderAfter, &d.Filters.LastOrderAfter}, {"filters.last_order_before", f.LastOrderBefore, &d.Filters.LastOrderBefore}} {
		if t.in == nil {
			continue
		}
		v, err := time.Parse(time.RFC3339, *t.in)
		if err != nil {
			return d, httpapi.ValidationFailed(t.field, "must be an RFC 3339 date-time such as 2026-01-31T00:00:00Z")
		}
		v = v.UTC()
		*t.out = &v
	}
	return d, nil
}

// parseAmount reads a decimal amount sent as a JSON number or string.
func parseAmount(raw json.RawMessage) (domain.Amount, error) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, err
		}
		s = n.String()
	}
	return domain.ParseAmount(s)
}

// handleAudienceCreate saves an audience and answers 201 with it, built
// from the command's result.
func (c *Campaigns) handleAudienceCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body audienceCreateBody
	err := httpapi.DecodeData(w, r, MaxBody, &body)
	var d domain.AudienceDraft
	if err == nil {
		d, err = body.draft()
	}
	var res commands.Result
	var ev *domain.AudienceCreated
	if err == nil {
		res, ev, err = c.cmds.CreateAudience(r.Context(), commands.CreateAudience{ShopID: p.ShopID, Draft: d}, meta(r, p))
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	a := &campaigns.Audience{ID: ev.AudienceID, ShopID: ev.ShopID, Name: ev.Name, Filters: ev.Filters, CreatedAt: ev.CreatedAt}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(uint64(res.Position), 10))
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.AudienceResource(a))
}

type campaignCreateBody struct {
	Name       string                 `json:"name"`
	AudienceID string                 `json:"audience_id"`
	Channel    string                 `json:"channel"`
	TemplateID string                 `json:"template_id"`
	Content    *domain.MessageContent `json:"content"`
}

// handleCampaignCreate creates a draft campaign and answers 201 with it,
// built from the command's result.
func (c *Campaigns) handleCampaignCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body campaignCreateBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, ev, err := c.cmds.CreateCampaign(r.Context(), commands.CreateCampaign{ShopID: p.ShopID, Draft: domain.CampaignDraft{
		Name: body.Name, AudienceID: body.AudienceID, Channel: body.Channel, TemplateID: body.TemplateID, Content: body.Content}}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cam := &campaigns.Campaign{ID: ev.CampaignID, ShopID: ev.ShopID, Name: ev.Name, AudienceID: ev.AudienceID, Channel: ev.Channel,
		TemplateID: ev.TemplateID, Content: ev.Content, Status: domain.CampaignStatusDraft, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(uint64(res.Position), 10))
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.CampaignResource(cam))
}

// handleCampaignLaunch launches a draft campaign (no body). The template's
// approval is read here, from the messaging read model, and handed to the
// command, which decides sending or awaiting_approval (see
// commands.LaunchCampaign). It answers 200 with the campaign as the read
// model shows it once caught up (bounded), else with the launch applied.
func (c *Campaigns) handleCampaignLaunch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	// X-Wait-For-Position makes the audience snapshot see the customers
	// (and their consent) up to that position.
	if err := readapi.WaitForPosition(r, c.wait, customers.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cmd, err := c.launch(r.Context(), p.ShopID, id)
	var res commands.Result
	var ev *domain.CampaignLaunched
	if err == nil {
		res, ev, err = c.cmds.LaunchCampaign(r.Context(), cmd, meta(r, p))
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	c.answer(w, r, p.ShopID, id, res, func(cam *campaigns.Campaign) {
		cam.Status, cam.LaunchedAt, cam.UpdatedAt = ev.Status, ev.LaunchedAt, ev.LaunchedAt
	})
}

// launch prepares the launch of a draft campaign from the read models:
// the shop must be able to send on the campaign's channel (422 on
// channel), a WhatsApp campaign's template must be known (422 on
// template_id; its approval decides sending or awaiting_approval), and the
// audience is resolved to its recipients. A campaign that is not a draft
// gets no look-up: the command answers its conflict.
func (c *Campaigns) launch(ctx context.Context, shop, id string) (commands.LaunchCampaign, error) {
	cmd := commands.LaunchCampaign{ShopID: shop, CampaignID: id}
	cam, aud, err := c.cmds.Campaign(ctx, shop, id)
	if err != nil || cam.Status != domain.CampaignStatusDraft {
		return cmd, err
	}
	if err := c.templates.ChannelReady(ctx, shop, cam.Channel); err != nil {
		return cmd, err
	}
	if cam.Channel == domain.ChannelWhatsApp {
		name, lang, state, found, err := c.templates.Template(ctx, shop, cam.TemplateID)
		if err != nil {
			return cmd, err
		}
		if !found {
			return cmd, domain.Invalid("template_id", "the shop has no message template %s (a template becomes known by its status webhook)", cam.TemplateID)
		}
		cmd.TemplateApproved, cmd.TemplateName, cmd.TemplateLanguage = state == domain.TemplateApproved, name, lang
	}
	cmd.Recipients, cmd.SkippedConsent, cmd.SkippedAddress, err = c.templates.Recipients(ctx, shop, aud.Filters, cam.Channel, time.Now())
	return cmd, err
}

// templateApproved reads whether the campaign's WhatsApp template is
// approved (false for e-mail, which has none and does not need it), from the messaging read
// model, for the commands that decide between sending and
// awaiting_approval.
func (c *Campaigns) templateApproved(ctx context.Context, shop, id string) (bool, error) {
	channel, templateID, err := c.cmds.CampaignTemplate(ctx, shop, id)
	if err != nil || channel != domain.ChannelWhatsApp {
		return false, err
	}
	return c.templates.TemplateApproved(ctx, shop, templateID)
}

// answer serves a campaign after a write: 200 with the read model's row
// once caught up with res (bounded), else with patch applied to it.
func (c *Campaigns) answer(w http.ResponseWriter, r *http.Request, shop, id string, res commands.Result, patch func(*campaigns.Campaign)) {
	readapi.ServeWritten(w, r, c.wait, campaigns.Name, res.Position, http.StatusOK,
		func(ctx context.Context) (*campaigns.Campaign, error) {
			cam, err := c.q.Campaign(ctx, shop, id)
			if err == nil {
				err = readapi.FillCampaignCounts(ctx, c.counts, shop, cam)
			}
			return cam, err
		}, patch, readapi.CampaignResource)
}

// handleCampaignPause pauses a scheduled, sending or awaiting_approval
// campaign (no body) and answers 200 with it, like a launch; any other
// status is a 409 conflict.
func (c *Campaigns) handleCampaignPause(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	res, ev, err := c.cmds.PauseCampaign(r.Context(), commands.PauseCampaign{ShopID: p.ShopID, CampaignID: id}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	c.answer(w, r, p.ShopID, id, res, func(cam *campaigns.Campaign) {
		cam.Status, cam.PausedReason, cam.PausedAt, cam.UpdatedAt = domain.CampaignStatusPaused, ev.Reason, ev.PausedAt, ev.PausedAt
	})
}

// handleCampaignResume resumes a paused campaign (no body). The
// template's approval is read as at launch: a WhatsApp campaign whose
// template is not approved resumes to awaiting_approval. A campaign that
// is not paused is a 409 conflict.
func (c *Campaigns) handleCampaignResume(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	approved, err := c.templateApproved(r.Context(), p.ShopID, id)
	var res commands.Result
	var ev *domain.CampaignResumed
	if err == nil {
		res, ev, err = c.cmds.ResumeCampaign(r.Context(), commands.ResumeCampaign{ShopID: p.ShopID, CampaignID: id, TemplateApproved: approved}, meta(r, p))
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	c.answer(w, r, p.ShopID, id, res, func(cam *campaigns.Campaign) {
		cam.Status, cam.PausedReason, cam.PausedAt, cam.UpdatedAt = ev.Status, "", time.Time{}, ev.ResumedAt
	})
}
