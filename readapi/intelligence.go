package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/intelligence"
)

// ScopeAnalyticsRead is the scope of the decision-intelligence and SEO
// reads.
const ScopeAnalyticsRead = domain.ScopeAnalyticsRead

// Intelligence serves the SEO keyword and decision-intelligence run reads.
type Intelligence struct {
	q       *intelligence.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewIntelligence returns the intelligence read handlers.
func NewIntelligence(q *intelligence.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Intelligence {
	return &Intelligence{q: q, auth: a, cursors: cursors, wait: wait}
}

// KeywordListSpec is the allow-list of GET
// /api/v1/seo-intelligence/keywords. filter[keyword] matches the keyword
// exactly after normalisation (trimmed, inner spaces collapsed, lower
// case), as the import stores it.
var KeywordListSpec = httpapi.ListSpec{
	Resource:    "seo_keywords",
	Filters:     map[string]httpapi.FilterKind{"keyword": httpapi.StringFilter()},
	Sorts:       intelligence.KeywordSorts(),
	DefaultSort: intelligence.KeywordSortPosition,
}

// RunListSpec is the allow-list of GET /api/v1/decision-intelligence/runs:
// newest first by default.
var RunListSpec = httpapi.ListSpec{
	Resource:    "decision_runs",
	Filters:     map[string]httpapi.FilterKind{"status": httpapi.EnumFilter(domain.DecisionRunStatuses()...)},
	Sorts:       []string{"started_at"},
	DefaultSort: "-started_at",
}

// Routes registers the intelligence reads.
func (h *Intelligence) Routes(r *mux.Router) {
	read := func(f http.HandlerFunc) http.Handler { return httpapi.Stable(h.auth.Require(ScopeAnalyticsRead, f)) }
	r.Handle("/api/v1/seo-intelligence/keywords", httpapi.Compressed(read(h.handleKeywordList))).Methods(http.MethodGet)
	r.Handle("/api/v1/seo-intelligence/keywords/{kw_id}", read(h.handleKeywordGet)).Methods(http.MethodGet)
	r.Handle("/api/v1/decision-intelligence/runs", httpapi.Compressed(read(h.handleRunList))).Methods(http.MethodGet)
	r.Handle("/api/v1/decision-intelligence/runs/{run_id}", read(h.handleRunGet)).Methods(http.MethodGet)
}

func (h *Intelligence) handleKeywordList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, h.cursors, h.wait, intelligence.Name, KeywordListSpec,
		func(params httpapi.ListParams, after *intelligence.Key) ([]httpapi.Resource, *intelligence.Key, error) {
			rows, next, err := h.q.Keywords(r.Context(), intelligence.KeywordListQuery{Shop: p.ShopID, Keyword: params.Filters["keyword"],
				Sort: params.Sort.Field, Desc: params.Sort.Desc, After: after, Limit: params.Limit})
			return resources(rows, KeywordResource), next, err
		})
}

func (h *Intelligence) handleKeywordGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["kw_id"]
	ServeOne(w, r, h.wait, intelligence.Name, p.ShopID,
		func(ctx context.Context, shop string) (*intelligence.Keyword, error) {
			return h.q.Keyword(ctx, shop, id)
		}, KeywordResource)
}

func (h *Intelligence) handleRunList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, h.cursors, h.wait, intelligence.Name, RunListSpec,
		func(params httpapi.ListParams, after *intelligence.Key) ([]httpapi.Resource, *intelligence.Key, error) {
			rows, next, err := h.q.Runs(r.Context(), intelligence.RunListQuery{Shop: p.ShopID, Status: params.Filters["status"],
				Desc: params.Sort.Desc, After: after, Limit: params.Limit})
			return resources(rows, RunResource), next, err
		})
}

func (h *Intelligence) handleRunGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["run_id"]
	ServeOne(w, r, h.wait, intelligence.Name, p.ShopID,
		func(ctx context.Context, shop string) (*intelligence.Run, error) { return h.q.Run(ctx, shop, id) }, RunResource)
}

// resources renders rows with render.
func resources[T any](rows []T, render func(*T) httpapi.Resource) []httpapi.Resource {
	out := make([]httpapi.Resource, len(rows))
	for i := range rows {
		out[i] = render(&rows[i])
	}
	return out
}

// KeywordAttributes are an SEO keyword's attributes in the admin API: the
// latest ranking of the keyword for the URL, the one before it and the
// change (previous − latest; positive means the URL moved up, 0 without a
// previous ranking).
type KeywordAttributes struct {
	Keyword          string   `json:"keyword"`
	URL              string   `json:"url"`
	Position         float64  `json:"position"`
	PositionDate     string   `json:"position_date"`
	PreviousPosition *float64 `json:"previous_position"`
	PreviousDate     *string  `json:"previous_date"`
	Change           *float64 `json:"change"`
	SearchVolume     int64    `json:"search_volume"`
	Clicks           int64    `json:"clicks"`
	Impressions      int64    `json:"impressions"`
	Rankings         int      `json:"rankings"`
}

// KeywordResource renders a keyword in the single-resource shape.
func KeywordResource(k *intelligence.Keyword) httpapi.Resource {
	attrs := KeywordAttributes{Keyword: k.Keyword, URL: k.URL, Position: k.Position, PositionDate: k.PositionDate,
		PreviousPosition: k.PreviousPosition, PreviousDate: k.PreviousDate, SearchVolume: k.SearchVolume, Clicks: k.Clicks,
		Impressions: k.Impressions, Rankings: k.Rankings}
	if k.PreviousPosition != nil {
		c := k.Change
		attrs.Change = &c
	}
	return httpapi.Resource{ID: k.ID, Type: "seo_keyword", Attributes: attrs}
}

// RunAttributes are a decision-intelligence run's attributes in the admin
// API.
type RunAttributes struct {
	Status          string                  `json:"status"`
	Trigger         string                  `json:"trigger"`
	StartedAt       time.Time               `json:"started_at"`
	FinishedAt      *time.Time              `json:"finished_at"`
	FailureReason   *string                 `json:"failure_reason"`
	Recommendations []domain.Recommendation `json:"recommendations"`
}

// RunResource renders a run in the single-resource shape.
func RunResource(r *intelligence.Run) httpapi.Resource {
	attrs := RunAttributes{Status: r.Status, Trigger: r.Trigger, StartedAt: r.StartedAt, FinishedAt: zeroTimeAsNull(r.FinishedAt),
		FailureReason: emptyAsNull(r.Reason), Recommendations: r.Recommendations}
	if attrs.Recommendations == nil {
		attrs.Recommendations = []domain.Recommendation{}
	}
	for i := range attrs.Recommendations {
		if attrs.Recommendations[i].Items == nil {
			attrs.Recommendations[i].Items = []domain.RecommendedItem{}
		}
	}
	return httpapi.Resource{ID: r.ID, Type: "decision_intelligence_run", Attributes: attrs}
}
