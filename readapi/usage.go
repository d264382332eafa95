package readapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// ShopPlans finds a shop's plan.
type ShopPlans interface {
	ShopPlan(ctx context.Context, shopID string) (domain.Plan, error)
}

// TokenNames finds the name an admin token was issued with.
type TokenNames interface {
	TokenName(ctx context.Context, tokenID string) (string, error)
}

// CreditLedger reads a shop's AI credits in a billing month (the tenancy
// read model's credit tables).
type CreditLedger interface {
	ShopCredits(ctx context.Context, shopID, month string) (CreditMonth, error)
}

// CreditMonth is a shop's AI credits in a billing month.
type CreditMonth struct {
	// Override is the operator's monthly budget; nil: the plan's.
	Override       *int
	Used, Reserved int
	// Operations consumed, per kind.
	BackgroundRemovals, Upscales, LifestyleScenes int
}

// UsageConfig configures the usage handler.
type UsageConfig struct {
	// Auth authenticates, and its LastUsed holds the request counts not
	// yet saved; PlanLimit gives the rate limit of a plan.
	Auth *auth.Authenticator
	Keys auth.ImageKeyFinder
	// Uses reads the saved request counts and last uses (lastuse.db).
	Uses   auth.UseReader
	Plans  ShopPlans
	Tokens TokenNames
	// Credits is the monthly budget of each plan (DefaultAICredits);
	// Ledger the month's credits and a shop's override.
	Credits map[domain.Plan]int
	Ledger  CreditLedger
	Now     func() time.Time
}

// Usage serves GET /api/v1/usage: the shop's billing period, the admin API
// requests of each of its tokens in it, its rate limit, its AI credit
// budget and the image operations counted against it.
type Usage struct {
	cfg UsageConfig
}

// DefaultAICredits is the monthly AI credit budget per plan (DESIGN.md §7,
// domain.PlanAICredits).
func DefaultAICredits() map[domain.Plan]int { return domain.PlanAICredits() }

// NewUsage returns the usage handler.
func NewUsage(cfg UsageConfig) *Usage {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Usage{cfg: cfg}
}

// Routes registers GET /api/v1/usage: any admin token, or an image-API key
// with usage:read.
func (u *Usage) Routes(r *mux.Router) {
	r.Handle("/api/v1/usage", httpapi.Stable(u.cfg.Auth.RequireImageKeyOrToken(u.cfg.Keys, domain.ImageScopeUsageRead, http.HandlerFunc(u.handleUsage)))).Methods(http.MethodGet)
}

// FilterPeriod is the query parameter choosing a past billing period.
const FilterPeriod = "filter[period]"

// firstPeriod is the earliest billing period filter[period] accepts.
const firstPeriod auth.Period = 200001

// ParseUsagePeriod parses the value of filter[period]: a month YYYY-MM
// from 2000-01 to the month holding now (UTC). Anything else is a 400
// invalid_parameter naming filter[period].
func ParseUsagePeriod(v string, now time.Time) (auth.Period, error) {
	bad := func(msg string) (auth.Period, error) { return 0, httpapi.InvalidParameter(FilterPeriod, msg) }
	if len(v) != 7 || v[4] != '-' {
		return bad("the period must be a month YYYY-MM")
	}
	n := 0
	for i, c := range []byte(v) {
		if i == 4 {
			continue
		}
		if c < '0' || c > '9' {
			return bad("the period must be a month YYYY-MM")
		}
		n = n*10 + int(c-'0')
	}
	p := auth.Period(n)
	if month := n % 100; month < 1 || month > 12 {
		return bad("the month must be from 01 to 12")
	}
	if p < firstPeriod {
		return bad("the period must not be before 2000-01")
	}
	if p > auth.PeriodOf(now) {
		return bad("the period must not be after the current month")
	}
	return p, nil
}

// usagePeriod reads the query: filter[period] once at most, nothing else.
func usagePeriod(r *http.Request, now time.Time) (auth.Period, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return 0, httpapi.InvalidParameter("query", "the query string is malformed")
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same error for the same query every time
	period := auth.PeriodOf(now)
	for _, key := range keys {
		vs := values[key]
		if key != FilterPeriod {
			return 0, httpapi.InvalidParameter(clipKey(key), "unknown query parameter; allowed: "+FilterPeriod)
		}
		if len(vs) != 1 {
			return 0, httpapi.InvalidParameter(FilterPeriod, "the parameter is given more than once")
		}
		if period, err = ParseUsagePeriod(vs[0], now); err != nil {
			return 0, err
		}
	}
	return period, nil
}

// clipKey shortens a client's parameter name before it is echoed.
func clipKey(s string) string {
	const maxLen = 64
	if len(s) <= maxLen {
		return s
	}
	s = s[:maxLen]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

type usageAttributes struct {
	Plan            domain.Plan     `json:"plan"`
	Period          string          `json:"period"`
	PeriodStart     time.Time       `json:"period_start"`
	PeriodEnd       time.Time       `json:"period_end"`
	APIRequests     apiRequests     `json:"api_requests"`
	RateLimit       rateLimit       `json:"rate_limit"`
	AICredits       credits         `json:"ai_credits"`
	ImageOperations imageOperations `json:"image_operations"`
}

type apiRequests struct {
	Total   int64          `json:"total"`
	ByToken []tokenRequest `json:"by_token"`
}

type tokenRequest struct {
	TokenID    string     `json:"token_id"`
	Name       string     `json:"name"`
	Requests   int64      `json:"requests"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

type rateLimit struct {
	// RequestsPerMinute is per token; nil when no limit applies.
	RequestsPerMinute *int64 `json:"requests_per_minute"`
}

// credits is the month's AI credits: Remaining = Quota − Used − Reserved,
// never below zero.
type credits struct {
	Quota     int       `json:"quota"`
	Used      int       `json:"used"`
	Reserved  int       `json:"reserved"`
	Remaining int       `json:"remaining"`
	ResetsAt  time.Time `json:"resets_at"`
}

type imageOperations struct {
	BackgroundRemovals int `json:"background_removals"`
	Upscales           int `json:"upscales"`
	LifestyleScenes    int `json:"lifestyle_scenes"`
	Total              int `json:"total"`
}

func (u *Usage) handleUsage(w http.ResponseWriter, r *http.Request) {
	shop := ""
	if p, ok := auth.FromContext(r.Context()); ok {
		if p.Master {
			// A master token belongs to an account and reads no shop's data.
			httpapi.WriteError(w, r, httpapi.ScopeRequired("shop token"))
			return
		}
		shop = p.ShopID
	} else if k, ok := auth.ImageKeyFromContext(r.Context()); ok {
		shop = k.ShopID
	}
	period, err := usagePeriod(r, u.cfg.Now())
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	plan, err := u.cfg.Plans.ShopPlan(r.Context(), shop)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	requests, err := u.requests(r.Context(), shop, period)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	attrs := usageAttributes{Plan: plan, Period: period.String(), PeriodStart: period.Start(), PeriodEnd: period.End(),
		APIRequests: requests}
	if lim, ok := u.cfg.Auth.PlanLimit(plan); ok {
		if lim, err := lim.Normalize(); err == nil {
			perMinute := int64(lim.Rate) * int64(time.Minute) / int64(lim.Period)
			attrs.RateLimit.RequestsPerMinute = &perMinute
		}
	}
	if attrs.AICredits, attrs.ImageOperations, err = u.credits(r.Context(), shop, plan, period); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteResource(w, r, http.StatusOK, httpapi.Resource{ID: shop, Type: "usage", Attributes: attrs})
}

// credits is the shop's AI credits and consumed operations in period. The
// quota is the budget in force now (the override, else the current plan's),
// whatever the period.
func (u *Usage) credits(ctx context.Context, shop string, plan domain.Plan, period auth.Period) (credits, imageOperations, error) {
	m, err := u.cfg.Ledger.ShopCredits(ctx, shop, period.String())
	if err != nil {
		return credits{}, imageOperations{}, err
	}
	q := u.cfg.Credits[plan]
	if m.Override != nil {
		q = *m.Override
	}
	c := credits{Quota: q, Used: m.Used, Reserved: m.Reserved, Remaining: max(0, q-m.Used-m.Reserved),
		ResetsAt: domain.CreditsResetAt(period.Start())}
	ops := imageOperations{BackgroundRemovals: m.BackgroundRemovals, Upscales: m.Upscales, LifestyleScenes: m.LifestyleScenes,
		Total: m.BackgroundRemovals + m.Upscales + m.LifestyleScenes}
	return c, ops, nil
}

// requests is the shop's admin API requests in period, per token.
func (u *Usage) requests(ctx context.Context, shop string, period auth.Period) (apiRequests, error) {
	tokens, err := u.cfg.Auth.LastUsed.ShopUsage(ctx, u.cfg.Uses, shop, period)
	if err != nil {
		return apiRequests{}, err
	}
	out := apiRequests{ByToken: make([]tokenRequest, 0, len(tokens))}
	for _, t := range tokens {
		name, err := u.cfg.Tokens.TokenName(ctx, t.TokenID)
		if err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
			return apiRequests{}, err
		}
		tr := tokenRequest{TokenID: t.TokenID, Name: name, Requests: t.Requests}
		if !t.LastUsedAt.IsZero() {
			at := t.LastUsedAt.UTC()
			tr.LastUsedAt = &at
		}
		out.Total += t.Requests
		out.ByToken = append(out.ByToken, tr)
	}
	return out, nil
}
