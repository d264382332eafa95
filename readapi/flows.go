package readapi

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/journeys"
)

// Flows serves the reads of the shop's settings of the built-in flows
// (domain.Flows) from the journeys read model (beta).
type Flows struct {
	q    *journeys.Queries
	auth *auth.Authenticator
	wait Waiter
}

// NewFlows returns the flow read handlers.
func NewFlows(q *journeys.Queries, a *auth.Authenticator, wait Waiter) *Flows {
	return &Flows{q: q, auth: a, wait: wait}
}

// Routes registers the flow reads.
func (f *Flows) Routes(r *mux.Router) {
	read := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(httpapi.Compressed(f.auth.Require(domain.ScopeJourneysRead, h)))
	}
	r.Handle("/api/v1/flows", read(f.handleList)).Methods(http.MethodGet)
	r.Handle("/api/v1/flows/{flow}", read(f.handleGet)).Methods(http.MethodGet)
}

// handleList lists every built-in flow with the shop's settings, in
// domain.Flows order: two items, in the list envelope without a next page.
func (f *Flows) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	if err := WaitForPosition(r, f.wait, journeys.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	flows, err := f.q.Flows(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	items := make([]httpapi.Resource, len(flows))
	for i, v := range flows {
		items[i] = FlowResource(v)
	}
	httpapi.WriteList(w, r, items, httpapi.Page{})
}

// handleGet serves one built-in flow; a name that is none is not found.
func (f *Flows) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	name := mux.Vars(r)["flow"]
	ServeOne(w, r, f.wait, journeys.Name, p.ShopID, func(ctx context.Context, shop string) (journeys.FlowView, error) {
		return f.q.Flow(ctx, shop, name)
	}, FlowResource)
}

// FlowAttributes are a built-in flow's attributes in the admin API: what
// it is (name, trigger, intent, merge fields) and the shop's settings.
// Content members the channel does not take are null.
type FlowAttributes struct {
	Name    string `json:"name"`
	Trigger string `json:"trigger"`
	Intent  string `json:"intent"`

	Enabled      bool     `json:"enabled"`
	DelayMinutes int      `json:"delay_minutes"`
	Channel      string   `json:"channel"`
	Subject      *string  `json:"subject"`
	Text         *string  `json:"text"`
	HTML         *string  `json:"html"`
	Template     *string  `json:"template"`
	Language     *string  `json:"language"`
	Parameters   []string `json:"parameters"`
	// LinkURL is the review page of the review request (null: the shop's
	// https://{domain}/pages/reviews; always null for cart abandonment).
	LinkURL *string `json:"link_url"`

	// MergeFields are the merge fields the flow's content may use.
	MergeFields []string `json:"merge_fields"`
	// ConfiguredAt is when the shop last changed the settings; null while
	// they are the defaults.
	ConfiguredAt *time.Time `json:"configured_at"`
}

// FlowResource renders a shop's settings of a built-in flow.
func FlowResource(v journeys.FlowView) httpapi.Resource {
	s := v.Settings
	return httpapi.Resource{ID: v.Name, Type: "flow", Attributes: FlowAttributes{Name: v.Name, Trigger: domain.FlowTrigger(v.Name),
		Intent: domain.FlowIntent(v.Name), Enabled: s.Enabled, DelayMinutes: s.DelayMinutes, Channel: s.Channel,
		Subject: optional(s.Subject), Text: optional(s.Text), HTML: optional(s.HTML), Template: optional(s.Template),
		Language: optional(s.Language), Parameters: nonNil(slices.Clone(s.Parameters)), LinkURL: optional(s.LinkURL),
		MergeFields: append(domain.MergeFields(), domain.FlowMergeFields(v.Name)...), ConfiguredAt: zeroTimeAsNull(v.ConfiguredAt)}}
}
