package domain

import (
	"slices"
	"time"
)

// campaignEvents lists the campaign event types: saved audiences and
// campaigns sent to them.
func campaignEvents() []EventSpec {
	return []EventSpec{
		{Name: "AudienceCreated", Version: 1, New: func() Event { return &AudienceCreated{} }},
		{Name: "CampaignCreated", Version: 1, New: func() Event { return &CampaignCreated{} }},
		{Name: "CampaignLaunched", Version: 1, New: func() Event { return &CampaignLaunched{} }},
		{Name: "CampaignPaused", Version: 1, New: func() Event { return &CampaignPaused{} }},
		{Name: "CampaignResumed", Version: 1, New: func() Event { return &CampaignResumed{} }},
		{Name: "CampaignApprovalGranted", Version: 1, New: func() Event { return &CampaignApprovalGranted{} }},
	}
}

// PrefixAudience is the id prefix of a saved audience.
const PrefixAudience = "aud_"

// AudienceStream is the stream of one audience.
func AudienceStream(id string) string { return "audience-" + id }

// CampaignStream is the stream of one campaign.
func CampaignStream(id string) string { return "campaign-" + id }

// Campaign statuses (DESIGN §7).
const (
	CampaignStatusDraft            = "draft"
	CampaignStatusAwaitingApproval = "awaiting_approval"
	CampaignStatusScheduled        = "scheduled"
	CampaignStatusSending          = "sending"
	CampaignStatusPaused           = "paused"
	CampaignStatusCompleted        = "completed"
	CampaignStatusCancelled        = "cancelled"
)

// CampaignStatuses lists every campaign status.
func CampaignStatuses() []string {
	return []string{CampaignStatusDraft, CampaignStatusAwaitingApproval, CampaignStatusScheduled, CampaignStatusSending, CampaignStatusPaused,
		CampaignStatusCompleted, CampaignStatusCancelled}
}

// Campaign channels.
const (
	ChannelWhatsApp = "whatsapp"
	ChannelEmail    = "email"
)

// CampaignChannels lists the channels a campaign may use.
func CampaignChannels() []string { return []string{ChannelWhatsApp, ChannelEmail} }

// AudienceFilters select the customers of an audience; every filter set
// must hold (empty lists and nil bounds select everyone).
type AudienceFilters struct {
	// LifecycleStages: the customer is at one of these stages.
	LifecycleStages []string `json:"lifecycle_stages"`
	// Tags: the customer has every one of these tags.
	Tags []string `json:"tags"`
	// MinTotalSpent, MaxTotalSpent bound the customer's total spent
	// (inclusive).
	MinTotalSpent *Amount `json:"min_total_spent,omitempty"`
	MaxTotalSpent *Amount `json:"max_total_spent,omitempty"`
	// LastOrderAfter, LastOrderBefore bound the customer's last order
	// (inclusive).
	LastOrderAfter  *time.Time `json:"last_order_after,omitempty"`
	LastOrderBefore *time.Time `json:"last_order_before,omitempty"`
}

// AudienceCreated: a merchant saved a segment of customers (POST
// /api/v1/audiences). Its name is the merchant's label, not personal data.
type AudienceCreated struct {
	AudienceID string          `json:"audience_id"`
	ShopID     string          `json:"shop_id"`
	Name       string          `json:"name"`
	Filters    AudienceFilters `json:"filters"`
	CreatedAt  time.Time       `json:"created_at"`
}

// EventType implements Event.
func (AudienceCreated) EventType() string { return "AudienceCreated" }

// Audience is the audience aggregate: which shop saved it.
type Audience struct {
	ShopID  string
	Filters AudienceFilters
	Exists  bool
}

// Apply folds an event into the audience.
func (a *Audience) Apply(e Event) {
	if ev, ok := e.(*AudienceCreated); ok {
		a.ShopID, a.Filters, a.Exists = ev.ShopID, ev.Filters, true
	}
}

// AudienceDraft is what a merchant sends to save an audience.
type AudienceDraft struct {
	Name    string
	Filters AudienceFilters
}

// NewAudience decides the creation of an audience with a fresh id: a name
// is required, stages must be known, tags are normalised and each range
// must not be inverted.
func NewAudience(shopID string, d AudienceDraft, now time.Time) (*AudienceCreated, error) {
	name, err := catalogText("name", d.Name, true)
	if err != nil {
		return nil, err
	}
	f := d.Filters
	stages := []string{}
	for _, s := range f.LifecycleStages {
		if !slices.Contains(LifecycleStages(), s) {
			return nil, Invalid("filters.lifecycle_stages", "unknown lifecycle stage %q", s)
		}
		if !slices.Contains(stages, s) {
			stages = append(stages, s)
		}
	}
	f.LifecycleStages = stages
	if f.Tags == nil {
		f.Tags = []string{}
	}
	if f.Tags, err = NormalizeTags(f.Tags); err != nil {
		return nil, Invalid("filters.tags", "at most %d tags of 1 to %d characters", MaxTags, MaxTagLength)
	}
	switch {
	case f.MinTotalSpent != nil && *f.MinTotalSpent < 0:
		return nil, Invalid("filters.min_total_spent", "min_total_spent must not be negative")
	case f.MinTotalSpent != nil && f.MaxTotalSpent != nil && *f.MinTotalSpent > *f.MaxTotalSpent:
		return nil, Invalid("filters.max_total_spent", "max_total_spent must not be less than min_total_spent")
	case f.LastOrderAfter != nil && f.LastOrderBefore != nil && f.LastOrderAfter.After(*f.LastOrderBefore):
		return nil, Invalid("filters.last_order_before", "last_order_before must not be earlier than last_order_after")
	}
	return &AudienceCreated{AudienceID: NewID(PrefixAudience), ShopID: shopID, Name: name, Filters: f, CreatedAt: now.UTC()}, nil
}

// CampaignCreated: a merchant created a campaign (POST /api/v1/campaigns),
// in draft.
type CampaignCreated struct {
	CampaignID string `json:"campaign_id"`
	ShopID     string `json:"shop_id"`
	Name       string `json:"name"`
	AudienceID string `json:"audience_id"`
	Channel    string `json:"channel"`
	// TemplateID is the messaging platform's message template id of a
	// WhatsApp campaign ("" for e-mail).
	TemplateID string `json:"template_id,omitempty"`
	// Content is what the campaign's messages say (absent from campaigns
	// created before content existed: they cannot be launched).
	Content   *MessageContent `json:"content,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// EventType implements Event.
func (CampaignCreated) EventType() string { return "CampaignCreated" }

// CampaignLaunched: a merchant launched a draft campaign; Status is
// sending, or awaiting_approval when its message template was not approved
// at launch.
type CampaignLaunched struct {
	CampaignID string `json:"campaign_id"`
	ShopID     string `json:"shop_id"`
	Status     string `json:"status"`
	// TemplateName and TemplateLanguage are the WhatsApp template the
	// campaign's template_id named at launch, as sent.
	TemplateName     string    `json:"template_name,omitempty"`
	TemplateLanguage string    `json:"template_language,omitempty"`
	LaunchedAt       time.Time `json:"launched_at"`
}

// EventType implements Event.
func (CampaignLaunched) EventType() string { return "CampaignLaunched" }

// Campaign is the campaign aggregate: its shop, channel, template and
// status; while paused, the status it was paused from, why, and the
// template that paused it (when one did).
type Campaign struct {
	ShopID, Channel, TemplateID, Status string
	AudienceID                          string
	Content                             *MessageContent
	Exists                              bool
	PausedFrom, PausedReason, PausedBy  string
	// handled holds the template events the campaign reacted to.
	handled map[string]bool
}

// Apply folds an event into the campaign.
func (c *Campaign) Apply(e Event) {
	switch ev := e.(type) {
	case *CampaignCreated:
		c.ShopID, c.Channel, c.TemplateID, c.Status, c.Exists = ev.ShopID, ev.Channel, ev.TemplateID, CampaignStatusDraft, true
		c.AudienceID, c.Content = ev.AudienceID, ev.Content
	case *CampaignLaunched:
		c.Status = ev.Status
	case *CampaignCompleted:
		c.Status = CampaignStatusCompleted
	case *CampaignPaused:
		c.Status, c.PausedFrom, c.PausedReason, c.PausedBy = CampaignStatusPaused, ev.PreviousStatus, ev.Reason, ev.TemplateID
		c.handle(ev.TemplateEventID)
	case *CampaignResumed:
		c.Status, c.PausedFrom, c.PausedReason, c.PausedBy = ev.Status, "", "", ""
		c.handle(ev.TemplateEventID)
	case *CampaignApprovalGranted:
		c.Status = ev.Status
		c.handle(ev.TemplateEventID)
	}
}

func (c *Campaign) handle(templateEventID string) {
	if templateEventID == "" {
		return
	}
	if c.handled == nil {
		c.handled = map[string]bool{}
	}
	c.handled[templateEventID] = true
}

// CampaignDraft is what a merchant sends to create a campaign.
type CampaignDraft struct {
	Name, AudienceID, Channel, TemplateID string
	// Content may be partial in a draft; a launch needs it complete.
	Content *MessageContent
}

// NewCampaign decides the creation of a campaign with a fresh id, in
// draft. audience is the aggregate of d.AudienceID as loaded: a missing
// audience_id, or an audience the shop does not have, fails on field
// audience_id. The channel defaults to whatsapp, which needs a
// template_id.
func NewCampaign(shopID string, d CampaignDraft, audience *Audience, now time.Time) (*CampaignCreated, error) {
	name, err := catalogText("name", d.Name, true)
	if err != nil {
		return nil, err
	}
	switch {
	case d.AudienceID == "":
		return nil, Invalid("audience_id", "audience_id is required")
	case audience == nil || !audience.Exists || audience.ShopID != shopID:
		return nil, Invalid("audience_id", "the shop has no audience %s", d.AudienceID)
	}
	ch := d.Channel
	if ch == "" {
		ch = ChannelWhatsApp
	}
	if !slices.Contains(CampaignChannels(), ch) {
		return nil, Invalid("channel", "channel must be one of whatsapp, email")
	}
	tpl, err := catalogText("template_id", d.TemplateID, ch == ChannelWhatsApp)
	if err != nil {
		return nil, err
	}
	if ch == ChannelEmail && tpl != "" {
		return nil, Invalid("template_id", "template_id is only for whatsapp campaigns")
	}
	if d.Content != nil {
		if err := d.Content.Validate("content", ch, false); err != nil {
			return nil, err
		}
	}
	return &CampaignCreated{CampaignID: NewID(PrefixCampaign), ShopID: shopID, Name: name, AudienceID: d.AudienceID,
		Channel: ch, TemplateID: tpl, Content: d.Content, CreatedAt: now.UTC()}, nil
}

// Launch decides the launch of a draft campaign, whose content must be
// complete for its channel (a validation error naming the field otherwise).
// templateApproved says
// whether the campaign's message template was approved when the caller
// looked (ignored for e-mail): when it was not, the campaign waits for
// approval instead of sending. Only a draft can be launched: a second
// launch, or the launch of a paused, completed or cancelled campaign, is a
// conflict. A campaign of another shop is not found.
func (c *Campaign) Launch(shopID, campaignID string, templateApproved bool, now time.Time) (*CampaignLaunched, error) {
	if !c.Exists || c.ShopID != shopID {
		return nil, NotFound("campaign")
	}
	switch c.Status {
	case CampaignStatusDraft:
	case CampaignStatusAwaitingApproval, CampaignStatusScheduled, CampaignStatusSending:
		return nil, Conflict("the campaign was already launched (status %s)", c.Status)
	default:
		return nil, Conflict("a %s campaign cannot be launched", c.Status)
	}
	content := MessageContent{}
	if c.Content != nil {
		content = *c.Content
	}
	if err := content.Validate("content", c.Channel, true); err != nil {
		return nil, err
	}
	status := CampaignStatusSending
	if c.Channel == ChannelWhatsApp && !templateApproved {
		status = CampaignStatusAwaitingApproval
	}
	return &CampaignLaunched{CampaignID: campaignID, ShopID: shopID, Status: status, LaunchedAt: now.UTC()}, nil
}

// Pause reasons: a merchant's pause, or a reaction to the campaign's (or
// journey's) message template being paused or rejected.
const (
	PauseManual           = "manual"
	PauseTemplatePaused   = "template_paused"
	PauseTemplateRejected = "template_rejected"
)

// Resume reasons: a merchant's resume, or the template that paused the
// campaign or journey approved again.
const (
	ResumeManual           = "manual"
	ResumeTemplateApproved = "template_approved"
)

// PauseReasons lists every pause reason.
func PauseReasons() []string {
	return []string{PauseManual, PauseTemplatePaused, PauseTemplateRejected}
}

// TemplateChange is a message template's new state as the template
// reactor hands it to a campaign or a journey: the template's id and
// name, its state (TemplateApproved, TemplatePaused, TemplateRejected or
// another value, which changes nothing) and the id of the template event,
// which makes the reaction happen once however often the event is
// delivered.
type TemplateChange struct {
	TemplateID, Name, State, EventID string
}

// pauseReason is the pause reason a template state gives ("" for none).
func (t TemplateChange) pauseReason() string {
	switch t.State {
	case TemplatePaused:
		return PauseTemplatePaused
	case TemplateRejected:
		return PauseTemplateRejected
	}
	return ""
}

// autoPaused tells whether a pause of reason by template was the
// reaction to template's events (not a merchant's pause).
func autoPaused(reason, by, template string) bool {
	return (reason == PauseTemplatePaused || reason == PauseTemplateRejected) && by == template
}

// CampaignPaused: a launched campaign was paused, by its merchant
// (Reason manual) or because its message template was paused or rejected
// (Reason template_paused or template_rejected, with the template and the
// template event). PreviousStatus is the status it was paused from.
type CampaignPaused struct {
	CampaignID      string    `json:"campaign_id"`
	ShopID          string    `json:"shop_id"`
	Reason          string    `json:"reason"`
	TemplateID      string    `json:"template_id,omitempty"`
	TemplateEventID string    `json:"template_event_id,omitempty"`
	PreviousStatus  string    `json:"previous_status"`
	PausedAt        time.Time `json:"paused_at"`
}

// EventType implements Event.
func (CampaignPaused) EventType() string { return "CampaignPaused" }

// CampaignResumed: a paused campaign was resumed, by its merchant (Reason
// manual) or because the template that paused it was approved (Reason
// template_approved). Status is where it went: back to the status it was
// paused from, except that a WhatsApp campaign whose template is not
// approved goes to awaiting_approval, and one paused while awaiting
// approval whose template is approved goes to sending.
type CampaignResumed struct {
	CampaignID      string    `json:"campaign_id"`
	ShopID          string    `json:"shop_id"`
	Reason          string    `json:"reason"`
	TemplateID      string    `json:"template_id,omitempty"`
	TemplateEventID string    `json:"template_event_id,omitempty"`
	Status          string    `json:"status"`
	ResumedAt       time.Time `json:"resumed_at"`
}

// EventType implements Event.
func (CampaignResumed) EventType() string { return "CampaignResumed" }

// CampaignApprovalGranted: the message template of a campaign awaiting
// approval was approved, so the campaign was unblocked (Status sending).
// It is its own event rather than a CampaignResumed because the campaign
// was never paused: it was launched before its template was approved.
type CampaignApprovalGranted struct {
	CampaignID      string    `json:"campaign_id"`
	ShopID          string    `json:"shop_id"`
	TemplateID      string    `json:"template_id"`
	TemplateEventID string    `json:"template_event_id"`
	Status          string    `json:"status"`
	GrantedAt       time.Time `json:"granted_at"`
}

// EventType implements Event.
func (CampaignApprovalGranted) EventType() string { return "CampaignApprovalGranted" }

// pausableCampaign tells whether a campaign of status may be paused: launched and
// not finished.
func pausableCampaign(status string) bool {
	return status == CampaignStatusScheduled || status == CampaignStatusSending || status == CampaignStatusAwaitingApproval
}

// resumeStatus is the status a paused campaign resumes to: awaiting_approval
// for a WhatsApp campaign whose template is not approved, else the status
// it was paused from (scheduled or sending; a campaign paused while
// awaiting approval now sends).
func (c *Campaign) resumeStatus(templateApproved bool) string {
	switch {
	case c.Channel == ChannelWhatsApp && !templateApproved:
		return CampaignStatusAwaitingApproval
	case c.PausedFrom == CampaignStatusScheduled:
		return CampaignStatusScheduled
	}
	return CampaignStatusSending
}

// Pause decides a merchant's pause of a campaign: only a scheduled,
// sending or awaiting_approval campaign can be paused; pausing a paused,
// draft, completed or cancelled one is a conflict. A campaign of another
// shop is not found.
func (c *Campaign) Pause(shopID, campaignID string, now time.Time) (*CampaignPaused, error) {
	if !c.Exists || c.ShopID != shopID {
		return nil, NotFound("campaign")
	}
	switch {
	case c.Status == CampaignStatusPaused:
		return nil, Conflict("the campaign is already paused")
	case !pausableCampaign(c.Status):
		return nil, Conflict("a %s campaign cannot be paused", c.Status)
	}
	return &CampaignPaused{CampaignID: campaignID, ShopID: shopID, Reason: PauseManual, PreviousStatus: c.Status, PausedAt: now.UTC()}, nil
}

// Resume decides a merchant's resume of a paused campaign (whatever
// paused it). templateApproved says whether the campaign's template was
// approved when the caller looked (ignored for e-mail): when it was not,
// the campaign goes to awaiting_approval and the template's approval
// unblocks it. Resuming a campaign that is not paused is a conflict.
func (c *Campaign) Resume(shopID, campaignID string, templateApproved bool, now time.Time) (*CampaignResumed, error) {
	if !c.Exists || c.ShopID != shopID {
		return nil, NotFound("campaign")
	}
	if c.Status != CampaignStatusPaused {
		return nil, Conflict("only a paused campaign can be resumed (status %s)", c.Status)
	}
	return &CampaignResumed{CampaignID: campaignID, ShopID: shopID, Reason: ResumeManual, Status: c.resumeStatus(templateApproved),
		ResumedAt: now.UTC()}, nil
}

// ReactToTemplate decides what a change of the campaign's message
// template does to it; nil when nothing: the campaign does not use the
// template, the template event was handled already, or the state does not
// apply. A paused or rejected template pauses a scheduled, sending or
// awaiting_approval campaign; an approved one resumes a campaign that
// this template paused (never one the merchant paused) and unblocks one
// awaiting approval.
func (c *Campaign) ReactToTemplate(shopID, campaignID string, t TemplateChange, now time.Time) (Event, error) {
	if !c.Exists || c.ShopID != shopID {
		return nil, NotFound("campaign")
	}
	if t.EventID == "" || c.Channel != ChannelWhatsApp || c.TemplateID != t.TemplateID || c.handled[t.EventID] {
		return nil, nil
	}
	at := now.UTC()
	if reason := t.pauseReason(); reason != "" {
		if !pausableCampaign(c.Status) {
			return nil, nil
		}
		return &CampaignPaused{CampaignID: campaignID, ShopID: shopID, Reason: reason, TemplateID: t.TemplateID,
			TemplateEventID: t.EventID, PreviousStatus: c.Status, PausedAt: at}, nil
	}
	if t.State != TemplateApproved {
		return nil, nil
	}
	switch {
	case c.Status == CampaignStatusPaused && autoPaused(c.PausedReason, c.PausedBy, t.TemplateID):
		return &CampaignResumed{CampaignID: campaignID, ShopID: shopID, Reason: ResumeTemplateApproved, TemplateID: t.TemplateID,
			TemplateEventID: t.EventID, Status: c.resumeStatus(true), ResumedAt: at}, nil
	case c.Status == CampaignStatusAwaitingApproval:
		return &CampaignApprovalGranted{CampaignID: campaignID, ShopID: shopID, TemplateID: t.TemplateID, TemplateEventID: t.EventID,
			Status: CampaignStatusSending, GrantedAt: at}, nil
	}
	return nil, nil
}
