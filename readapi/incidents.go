package readapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/intelligence"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// Theme tracking states of the incident list's meta.theme_tracking.
const (
	// ThemeTrackingOn: the shop granted read_themes; theme changes arrive.
	ThemeTrackingOn = "on"
	// ThemeTrackingScopeMissing: the shop's grant is not known or lacks
	// read_themes (on the implied set): theme webhooks are not delivered,
	// so new theme changes are absent from the list until the merchant
	// re-authorises the app.
	ThemeTrackingScopeMissing = "scope_missing"
)

// maxIncidentScan bounds the theme change days one page evaluates: a page
// that reaches it without filling up ends early with a cursor (has_next
// true) to continue from.
const maxIncidentScan = 200

// ThemeIncidentListSpec is the allow-list of GET
// /api/v1/seo-intelligence/incidents: by the change day, newest first by
// default; filter[date_from] and filter[date_to] bound the change day
// (inclusive, UTC).
var ThemeIncidentListSpec = httpapi.ListSpec{
	Resource:    "theme_incidents",
	Filters:     map[string]httpapi.FilterKind{"date_from": httpapi.DateFilter(), "date_to": httpapi.DateFilter()},
	Sorts:       []string{"changed_at"},
	DefaultSort: "-changed_at",
}

// ThemeIncidents serves the theme regression incident view: the main
// theme's changes (commerce read model) correlated with the imported SEO
// rankings (intelligence read model) by domain.ThemeIncidentRule, and
// whether the shop's platform grant lets theme changes arrive at all
// (tenancy read model).
type ThemeIncidents struct {
	commerce *commerce.Queries
	intel    *intelligence.Queries
	tenancy  *tenancy.Queries
	auth     *auth.Authenticator
	cursors  *httpapi.CursorCodec
	wait     Waiter
	// reauthorize is a shop domain's re-authorisation link.
	reauthorize func(shopDomain string) string
	rule        domain.ThemeIncidentRule
}

// ThemeIncidentsConfig is what the incident view reads.
type ThemeIncidentsConfig struct {
	Commerce     *commerce.Queries
	Intelligence *intelligence.Queries
	Tenancy      *tenancy.Queries
	Auth         *auth.Authenticator
	Cursors      *httpapi.CursorCodec
	Wait         Waiter
	// Reauthorize returns a shop domain's re-authorisation link
	// ({public base}/auth/install?shop=DOMAIN).
	Reauthorize func(shopDomain string) string
}

// NewThemeIncidents returns the incident view's handler, applying
// domain.DefaultThemeIncidentRule.
func NewThemeIncidents(c ThemeIncidentsConfig) *ThemeIncidents {
	return &ThemeIncidents{commerce: c.Commerce, intel: c.Intelligence, tenancy: c.Tenancy, auth: c.Auth, cursors: c.Cursors,
		wait: c.Wait, reauthorize: c.Reauthorize, rule: domain.DefaultThemeIncidentRule()}
}

// Routes registers GET /api/v1/seo-intelligence/incidents.
func (h *ThemeIncidents) Routes(r *mux.Router) {
	r.Handle("/api/v1/seo-intelligence/incidents",
		httpapi.Beta(httpapi.Compressed(h.auth.Require(ScopeAnalyticsRead, http.HandlerFunc(h.handleList))))).Methods(http.MethodGet)
}

// incidentKey is the incident list's cursor position: the last change day
// evaluated.
type incidentKey struct {
	Day string `json:"d"`
}

func (h *ThemeIncidents) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	// The list reads three read models: ServeKeysetMeta waits for the
	// intelligence one, this for the other two.
	if err := WaitForPosition(r, h.wait, commerce.Name, tenancy.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	ServeKeysetMeta(w, r, h.cursors, h.wait, intelligence.Name, ThemeIncidentListSpec,
		func(params httpapi.ListParams, after *incidentKey) ([]httpapi.Resource, *incidentKey, error) {
			return h.page(r.Context(), p.ShopID, params, after)
		},
		func(ctx context.Context) (map[string]any, error) { return h.meta(ctx, p.ShopID) })
}

// page evaluates the shop's change days after the cursor in the list's
// order until it holds Limit incidents (or maxIncidentScan days were
// evaluated).
func (h *ThemeIncidents) page(ctx context.Context, shop string, params httpapi.ListParams, after *incidentKey) ([]httpapi.Resource, *incidentKey, error) {
	from, before, err := dateRange(params)
	if err != nil {
		return nil, nil, err
	}
	changes, err := h.commerce.ThemeChanges(ctx, shop)
	if err != nil {
		return nil, nil, err
	}
	// Windows are cut at the next change day, so the days are computed
	// from every change before the filters apply.
	days := slices.DeleteFunc(h.rule.ThemeChangeDays(changes), func(d domain.ThemeChangeDay) bool {
		t, _ := time.Parse(time.DateOnly, d.Day)
		return (!from.IsZero() && t.Before(from)) || (!before.IsZero() && !t.Before(before)) ||
			(after != nil && ((params.Sort.Desc && d.Day >= after.Day) || (!params.Sort.Desc && d.Day <= after.Day)))
	})
	if !params.Sort.Desc {
		slices.Reverse(days)
	}
	var items []httpapi.Resource
	for i, d := range days {
		if i == maxIncidentScan {
			return items, &incidentKey{Day: days[i-1].Day}, nil
		}
		keywords, err := h.intel.RankingsBetween(ctx, shop, d.BaselineFrom, d.WindowTo)
		if err != nil {
			return nil, nil, err
		}
		inc, ok := h.rule.Detect(d, keywords)
		if !ok {
			continue
		}
		if len(items) == params.Limit {
			return items, &incidentKey{Day: days[i-1].Day}, nil
		}
		items = append(items, ThemeIncidentResource(&inc))
	}
	return items, nil, nil
}

// meta is the list's theme-tracking state: on, or scope_missing with the
// reason and the merchant's re-authorisation link; and the rule applied.
func (h *ThemeIncidents) meta(ctx context.Context, shop string) (map[string]any, error) {
	scope := domain.PlatformFeatureScope(domain.FeatureThemeIncidents)
	grant, err := h.tenancy.ShopPlatformScopes(ctx, shop)
	if err != nil {
		return nil, err
	}
	m := map[string]any{"theme_tracking": ThemeTrackingOn, "platform_scope": scope, "grant_known": grant.Known,
		"reason": nil, "reauthorize_url": nil, "rule": ThemeIncidentRuleIO{WindowDays: h.rule.WindowDays,
			BaselineDays: h.rule.BaselineDays, MinPositionDrop: h.rule.MinDrop, MinKeywords: h.rule.MinKeywords, MinShare: h.rule.MinShare}}
	if grant.Known && grant.Has(scope) {
		return m, nil
	}
	sh, err := h.tenancy.ShopByID(ctx, shop)
	if err != nil {
		return nil, err
	}
	m["theme_tracking"] = ThemeTrackingScopeMissing
	m["reauthorize_url"] = h.reauthorize(sh.Domain)
	if grant.Known {
		m["reason"] = "the shop has not granted the platform scope " + scope + ": theme changes are not delivered, " +
			"so none is correlated with the SEO rankings until the merchant re-authorises the app"
	} else {
		m["reason"] = "the shop's platform grant is not known (the app was not installed through the platform's " +
			"authorisation, and no scope update was received): theme changes are not tracked until the merchant " +
			"authorises the app with the scope " + scope
	}
	return m, nil
}

// ThemeIncidentRuleIO is the rule as meta.rule shows it.
type ThemeIncidentRuleIO struct {
	WindowDays      int     `json:"window_days"`
	BaselineDays    int     `json:"baseline_days"`
	MinPositionDrop float64 `json:"min_position_drop"`
	MinKeywords     int     `json:"min_keywords"`
	MinShare        float64 `json:"min_share"`
}

// ThemeIncidentAttributes are a theme regression incident's attributes.
type ThemeIncidentAttributes struct {
	Day              string             `json:"day"`
	Severity         string             `json:"severity"`
	ThemeChange      ThemeChangeIO      `json:"theme_change"`
	ChangesOnDay     int                `json:"theme_changes_on_day"`
	BaselineFrom     string             `json:"baseline_from"`
	Window           DateWindowIO       `json:"window"`
	KeywordsCompared int                `json:"keywords_compared"`
	KeywordsDropped  int                `json:"keywords_dropped"`
	DroppedKeywords  []DroppedKeywordIO `json:"dropped_keywords"`
}

// ThemeChangeIO is the suspected theme change.
type ThemeChangeIO struct {
	ThemeID         string    `json:"theme_id"`
	ThemeExternalID string    `json:"theme_external_id"`
	Name            string    `json:"name"`
	Topic           string    `json:"topic"`
	ChangedAt       time.Time `json:"changed_at"`
}

// DateWindowIO is an inclusive range of dates.
type DateWindowIO struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// DroppedKeywordIO is a keyword that dropped in an incident's window.
type DroppedKeywordIO struct {
	KeywordID          string  `json:"keyword_id"`
	Keyword            string  `json:"keyword"`
	URL                string  `json:"url"`
	PositionBefore     float64 `json:"position_before"`
	PositionBeforeDate string  `json:"position_before_date"`
	PositionAfter      float64 `json:"position_after"`
	PositionAfterDate  string  `json:"position_after_date"`
	Change             float64 `json:"change"`
}

// ThemeIncidentResource renders an incident; its id is the change day's.
func ThemeIncidentResource(inc *domain.ThemeIncident) httpapi.Resource {
	s := inc.Suspect
	attrs := ThemeIncidentAttributes{Day: inc.Day, Severity: inc.Severity,
		ThemeChange:  ThemeChangeIO{ThemeID: s.ThemeID, ThemeExternalID: s.ExternalID, Name: s.Name, Topic: s.Topic, ChangedAt: s.At.UTC()},
		ChangesOnDay: inc.Changes, BaselineFrom: inc.BaselineFrom, Window: DateWindowIO{From: inc.WindowFrom, To: inc.WindowTo},
		KeywordsCompared: inc.Compared, KeywordsDropped: len(inc.Dropped), DroppedKeywords: make([]DroppedKeywordIO, len(inc.Dropped))}
	for i, d := range inc.Dropped {
		attrs.DroppedKeywords[i] = DroppedKeywordIO{KeywordID: d.KeywordID, Keyword: d.Keyword, URL: d.URL, PositionBefore: d.Before,
			PositionBeforeDate: d.BeforeDate, PositionAfter: d.After, PositionAfterDate: d.AfterDate, Change: d.Change}
	}
	return httpapi.Resource{ID: "tin_" + strings.ReplaceAll(inc.Day, "-", ""), Type: "theme_incident", Attributes: attrs}
}
