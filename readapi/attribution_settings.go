package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/attribution"
)

// AttributionSettings serves GET /api/v1/attribution/settings (beta): the
// shop's attribution lookback window. It is changed with the command line
// (`cgp shops attribution`): the specification has no attribution write
// scope.
type AttributionSettings struct {
	q    *attribution.Queries
	auth *auth.Authenticator
	wait Waiter
}

// NewAttributionSettings returns the settings read handler.
func NewAttributionSettings(q *attribution.Queries, a *auth.Authenticator, wait Waiter) *AttributionSettings {
	return &AttributionSettings{q: q, auth: a, wait: wait}
}

// Routes registers the settings read.
func (s *AttributionSettings) Routes(r *mux.Router) {
	r.Handle("/api/v1/attribution/settings", httpapi.Beta(s.auth.Require(ScopeAttributionRead, http.HandlerFunc(s.handleSettings)))).
		Methods(http.MethodGet)
}

// AttributionSettingsAttributes are the attributes of the
// attribution_settings resource (id: the shop id).
type AttributionSettingsAttributes struct {
	// Lookback is the window in force, "14d" for whole days, else a Go
	// duration ("36h0m0s").
	Lookback        string `json:"lookback"`
	LookbackSeconds int64  `json:"lookback_seconds"`
	// Default is true while the shop has not chosen a window.
	Default     bool       `json:"default"`
	MinLookback string     `json:"min_lookback"`
	MaxLookback string     `json:"max_lookback"`
	UpdatedAt   *time.Time `json:"updated_at"`
}

// AttributionSettingsResource renders a shop's settings.
func AttributionSettingsResource(s attribution.Settings) httpapi.Resource {
	a := AttributionSettingsAttributes{Lookback: domain.FormatLookback(s.Lookback), LookbackSeconds: int64(s.Lookback / time.Second),
		Default: !s.Custom, MinLookback: domain.FormatLookback(domain.MinLookback), MaxLookback: domain.FormatLookback(domain.MaxLookback)}
	if s.Custom {
		at := s.ChangedAt.UTC()
		a.UpdatedAt = &at
	}
	return httpapi.Resource{ID: s.ShopID, Type: "attribution_settings", Attributes: a}
}

func (s *AttributionSettings) handleSettings(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeOne(w, r, s.wait, attribution.Name, p.ShopID, func(ctx context.Context, shop string) (attribution.Settings, error) {
		return s.q.Settings(ctx, shop)
	}, AttributionSettingsResource)
}
