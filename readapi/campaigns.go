package readapi

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/messaging"
)

// Scopes of the audience and campaign reads. Audiences are segments of
// customers, so they take the customer scopes.
const (
	ScopeCampaignsRead = domain.ScopeCampaignsRead
	ScopeAudiencesRead = domain.ScopeCustomersRead
)

// Campaigns serves the audience (beta) and campaign reads from the
// campaigns read model.
type Campaigns struct {
	q       *campaigns.Queries
	counter AudienceCounter
	counts  CampaignCounter
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
	now     func() time.Time
}

// AudienceCounter counts the customers an audience's filters select at
// now (customers.Queries).
type AudienceCounter interface {
	CountAudience(ctx context.Context, shop string, f domain.AudienceFilters, now time.Time) (int, error)
}

// NewCampaigns returns the audience and campaign read handlers; counter
// sizes an audience on its single GET.
func NewCampaigns(q *campaigns.Queries, counter AudienceCounter, counts CampaignCounter, a *auth.Authenticator, cursors *httpapi.CursorCodec,
	wait Waiter, now func() time.Time) *Campaigns {
	return &Campaigns{q: q, counter: counter, counts: counts, auth: a, cursors: cursors, wait: wait, now: now}
}

// CampaignCounter reads the counts of campaigns' messages (the messaging
// read model's).
type CampaignCounter interface {
	CampaignCounts(ctx context.Context, shop string, ids ...string) (map[string]messaging.CampaignCounts, error)
}

// FillCampaignCounts sets the message counts of campaigns of shop from
// counts.
func FillCampaignCounts(ctx context.Context, counts CampaignCounter, shop string, cs ...*campaigns.Campaign) error {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	got, err := counts.CampaignCounts(ctx, shop, ids...)
	if err != nil {
		return err
	}
	for _, c := range cs {
		n := got[c.ID]
		c.Counts = campaigns.Counts{Sent: n.Sent, Delivered: n.Delivered, Read: n.Read, Failed: n.Failed, Skipped: n.Skipped, OptedOut: n.OptedOut}
	}
	return nil
}

// campaignSortCreatedAt is the one sort field of the audience and campaign lists.
const campaignSortCreatedAt = "created_at"

// CampaignListSpec is the allow-list of GET /api/v1/campaigns.
var CampaignListSpec = httpapi.ListSpec{
	Resource:    "campaigns",
	Filters:     map[string]httpapi.FilterKind{"status": httpapi.EnumFilter(domain.CampaignStatuses()...)},
	Sorts:       []string{campaignSortCreatedAt},
	DefaultSort: "-" + campaignSortCreatedAt,
}

// AudienceListSpec is the allow-list of GET /api/v1/audiences.
var AudienceListSpec = httpapi.ListSpec{Resource: "audiences", Sorts: []string{campaignSortCreatedAt}, DefaultSort: "-" + campaignSortCreatedAt}

// Routes registers the audience and campaign reads.
func (c *Campaigns) Routes(r *mux.Router) {
	r.Handle("/api/v1/campaigns", httpapi.Stable(httpapi.Compressed(c.auth.Require(ScopeCampaignsRead, http.HandlerFunc(c.handleCampaignList))))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/campaigns/{id}", httpapi.Stable(c.auth.Require(ScopeCampaignsRead, http.HandlerFunc(c.handleCampaignGet)))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/audiences", httpapi.Beta(httpapi.Compressed(c.auth.Require(ScopeAudiencesRead, http.HandlerFunc(c.handleAudienceList))))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/audiences/{id}", httpapi.Beta(c.auth.Require(ScopeAudiencesRead, http.HandlerFunc(c.handleAudienceGet)))).
		Methods(http.MethodGet)
}

func (c *Campaigns) handleCampaignList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, c.cursors, c.wait, campaigns.Name, CampaignListSpec,
		func(params httpapi.ListParams, after *campaigns.Key) ([]httpapi.Resource, *campaigns.Key, error) {
			rows, next, err := c.q.Campaigns(r.Context(), p.ShopID, params.Filters["status"], campaignPage(params, after))
			ptrs := make([]*campaigns.Campaign, len(rows))
			for i := range rows {
				ptrs[i] = &rows[i]
			}
			if err == nil {
				err = FillCampaignCounts(r.Context(), c.counts, p.ShopID, ptrs...)
			}
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = CampaignResource(&rows[i])
			}
			return items, next, err
		}, c.audienceRelation(p.ShopID))
}

// handleCampaignGet serves one campaign with its audience snapshot's size
// and its messages' counts and rates.
func (c *Campaigns) handleCampaignGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, c.wait, campaigns.Name, p.ShopID,
		func(ctx context.Context, shop string) (*campaigns.Campaign, error) {
			cam, err := c.q.Campaign(ctx, shop, id)
			if err == nil {
				err = FillCampaignCounts(ctx, c.counts, shop, cam)
			}
			return cam, err
		}, CampaignResource, c.audienceRelation(p.ShopID))
}

// audienceRelation embeds a campaign's audience (include=audience).
func (c *Campaigns) audienceRelation(shop string) Relation {
	return Relation{
		Name: "audience",
		Key: func(res httpapi.Resource) string {
			if a, ok := res.Attributes.(CampaignAttributes); ok {
				return a.AudienceID
			}
			return ""
		},
		Load: func(ctx context.Context, ids []string) (map[string][]httpapi.Resource, error) {
			rows, err := c.q.AudiencesByID(ctx, shop, ids)
			out := make(map[string][]httpapi.Resource, len(rows))
			for i := range rows {
				out[rows[i].ID] = []httpapi.Resource{AudienceResource(&rows[i])}
			}
			return out, err
		},
	}
}

func (c *Campaigns) handleAudienceList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, c.cursors, c.wait, campaigns.Name, AudienceListSpec,
		func(params httpapi.ListParams, after *campaigns.Key) ([]httpapi.Resource, *campaigns.Key, error) {
			rows, next, err := c.q.Audiences(r.Context(), p.ShopID, campaignPage(params, after))
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = AudienceResource(&rows[i])
			}
			return items, next, err
		})
}

func (c *Campaigns) handleAudienceGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	type counted struct {
		a *campaigns.Audience
		n int
	}
	ServeOne(w, r, c.wait, campaigns.Name, p.ShopID,
		func(ctx context.Context, shop string) (counted, error) {
			a, err := c.q.Audience(ctx, shop, id)
			if err != nil {
				return counted{}, err
			}
			n, err := c.counter.CountAudience(ctx, shop, a.Filters, c.now())
			return counted{a, n}, err
		}, func(x counted) httpapi.Resource {
			res := AudienceResource(x.a)
			attrs := res.Attributes.(AudienceAttributes)
			attrs.CustomerCount = &x.n
			res.Attributes = attrs
			return res
		})
}

func campaignPage(params httpapi.ListParams, after *campaigns.Key) campaigns.Page {
	return campaigns.Page{Desc: params.Sort.Desc, After: after, Limit: params.Limit}
}

// CampaignAttributes are a campaign's attributes in the admin API.
type CampaignAttributes struct {
	Name       string `json:"name"`
	AudienceID string `json:"audience_id"`
	Channel    string `json:"channel"`
	// TemplateID is the WhatsApp message template's id; nil for e-mail.
	TemplateID *string    `json:"template_id"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	LaunchedAt *time.Time `json:"launched_at"`
	// PausedReason (manual, template_paused, template_rejected) and
	// PausedAt are set while the campaign is paused, else null.
	PausedReason *string    `json:"paused_reason"`
	PausedAt     *time.Time `json:"paused_at"`
	CompletedAt  *time.Time `json:"completed_at"`
	// Content is what the messages say; null when the campaign was
	// created without (it cannot be launched).
	Content *domain.MessageContent `json:"content"`
	// Template is the WhatsApp template as resolved at launch (null
	// before the launch and for e-mail).
	Template *CampaignTemplate `json:"template"`
	// Recipients is the audience snapshot's size at launch (0 before).
	Recipients int           `json:"recipients"`
	Stats      CampaignStats `json:"stats"`
}

// CampaignTemplate is the WhatsApp template a campaign sends.
type CampaignTemplate struct {
	Name     string `json:"name"`
	Language string `json:"language"`
}

// CampaignStats are the outcomes of a campaign's messages so far, and
// their rates: delivery rate = delivered / sent, open rate = read /
// delivered, failure rate = failed / recipients, opt-out rate = opted out
// / recipients (0 when the divisor is 0). Skipped messages are those of
// recipients who withdrew consent or lost their address after the
// snapshot; opted_out counts the audience's customers left out at the
// snapshot for consent and the recipients skipped for it since.
type CampaignStats struct {
	Sent             int     `json:"sent"`
	Delivered        int     `json:"delivered"`
	Read             int     `json:"read"`
	Failed           int     `json:"failed"`
	Skipped          int     `json:"skipped"`
	OptedOut         int     `json:"opted_out"`
	SkippedNoAddress int     `json:"skipped_no_address"`
	DeliveryRate     float64 `json:"delivery_rate"`
	OpenRate         float64 `json:"open_rate"`
	FailureRate      float64 `json:"failure_rate"`
	OptOutRate       float64 `json:"opt_out_rate"`
}

// rate is n / of rounded to 4 places, 0 when of is 0.
func rate(n, of int) float64 {
	if of <= 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*10000) / 10000
}

func campaignStats(c *campaigns.Campaign) CampaignStats {
	n := c.Counts
	optedOut := n.OptedOut + c.SkippedNoConsent
	audience := c.Recipients + c.SkippedNoConsent
	return CampaignStats{Sent: n.Sent, Delivered: n.Delivered, Read: n.Read, Failed: n.Failed, Skipped: n.Skipped, OptedOut: optedOut,
		SkippedNoAddress: c.SkippedNoAddress, DeliveryRate: rate(n.Delivered, n.Sent), OpenRate: rate(n.Read, n.Delivered),
		FailureRate: rate(n.Failed, c.Recipients), OptOutRate: rate(optedOut, audience)}
}

// CampaignResource renders a campaign in the single-resource shape.
func CampaignResource(c *campaigns.Campaign) httpapi.Resource {
	var tpl *CampaignTemplate
	if c.TemplateName != "" {
		tpl = &CampaignTemplate{Name: c.TemplateName, Language: c.TemplateLanguage}
	}
	return httpapi.Resource{
		ID: c.ID, Type: "campaign",
		Attributes: CampaignAttributes{Name: c.Name, AudienceID: c.AudienceID, Channel: c.Channel, TemplateID: optional(c.TemplateID),
			Status: c.Status, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, LaunchedAt: zeroTimeAsNull(c.LaunchedAt),
			PausedReason: optional(c.PausedReason), PausedAt: zeroTimeAsNull(c.PausedAt), CompletedAt: zeroTimeAsNull(c.CompletedAt),
			Content: c.Content, Template: tpl, Recipients: c.Recipients, Stats: campaignStats(c)},
		Relationships: map[string]httpapi.Relationship{"audience": httpapi.RelatedLink("/api/v1/audiences/" + c.AudienceID)},
	}
}

// AudienceAttributes are an audience's attributes in the admin API.
type AudienceAttributes struct {
	Name      string          `json:"name"`
	Filters   AudienceFilters `json:"filters"`
	CreatedAt time.Time       `json:"created_at"`
	// CustomerCount is the number of customers the filters select at the
	// request; only the single GET computes it (absent from lists and the
	// create answer).
	CustomerCount *int `json:"customer_count,omitempty"`
}

// AudienceFilters are an audience's filters in the admin API: amounts as
// decimal numbers, absent bounds as null.
type AudienceFilters struct {
	LifecycleStages []string   `json:"lifecycle_stages"`
	Tags            []string   `json:"tags"`
	MinTotalSpent   *float64   `json:"min_total_spent"`
	MaxTotalSpent   *float64   `json:"max_total_spent"`
	LastOrderAfter  *time.Time `json:"last_order_after"`
	LastOrderBefore *time.Time `json:"last_order_before"`
}

// AudienceResource renders an audience in the single-resource shape.
func AudienceResource(a *campaigns.Audience) httpapi.Resource {
	f := a.Filters
	amount := func(v *domain.Amount) *float64 {
		if v == nil {
			return nil
		}
		x := v.Float()
		return &x
	}
	return httpapi.Resource{ID: a.ID, Type: "audience", Attributes: AudienceAttributes{Name: a.Name, CreatedAt: a.CreatedAt,
		Filters: AudienceFilters{LifecycleStages: nonNil(f.LifecycleStages), Tags: nonNil(f.Tags), MinTotalSpent: amount(f.MinTotalSpent),
			MaxTotalSpent: amount(f.MaxTotalSpent), LastOrderAfter: f.LastOrderAfter, LastOrderBefore: f.LastOrderBefore}}}
}
