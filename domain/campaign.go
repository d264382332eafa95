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
	ShopID string
	Exists bool
}

// Apply folds an event into the audience.
func (a *Audience) Apply(e Event) {
	if ev, ok := e.(*AudienceCreated); ok {
		a.ShopID, a.Exists = ev.ShopID, true
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
	TemplateID string    `json:"template_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// EventType implements Event.
func (CampaignCreated) EventType() string { return "CampaignCreated" }

// CampaignLaunched: a merchant launched a draft campaign; Status is
// sending, or awaiting_approval when its message template was not approved
// at launch.
type CampaignLaunched struct {
	CampaignID string    `json:"campaign_id"`
	ShopID     string    `json:"shop_id"`
	Status     string    `json:"status"`
	LaunchedAt time.Time `json:"launched_at"`
}

// EventType implements Event.
func (CampaignLaunched) EventType() string { return "CampaignLaunched" }

// Campaign is the campaign aggregate: its shop, channel, template and
// status.
type Campaign struct {
	ShopID, Channel, TemplateID, Status string
	Exists                              bool
}

// Apply folds an event into the campaign.
func (c *Campaign) Apply(e Event) {
	switch ev := e.(type) {
	case *CampaignCreated:
		c.ShopID, c.Channel, c.TemplateID, c.Status, c.Exists = ev.ShopID, ev.Channel, ev.TemplateID, CampaignStatusDraft, true
	case *CampaignLaunched:
		c.Status = ev.Status
	}
}

// CampaignDraft is what a merchant sends to create a campaign.
type CampaignDraft struct {
	Name, AudienceID, Channel, TemplateID string
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
	return &CampaignCreated{CampaignID: NewID(PrefixCampaign), ShopID: shopID, Name: name, AudienceID: d.AudienceID,
		Channel: ch, TemplateID: tpl, CreatedAt: now.UTC()}, nil
}

// Launch decides the launch of a draft campaign. templateApproved says
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
	status := CampaignStatusSending
	if c.Channel == ChannelWhatsApp && !templateApproved {
		status = CampaignStatusAwaitingApproval
	}
	return &CampaignLaunched{CampaignID: campaignID, ShopID: shopID, Status: status, LaunchedAt: now.UTC()}, nil
}
