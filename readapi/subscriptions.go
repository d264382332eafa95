package readapi

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// ScopeSubscriptionsRead is the scope of the subscription summary: the
// specification's catalogue has no subscriptions scope; the economics are
// analytics.
const ScopeSubscriptionsRead = domain.ScopeAnalyticsRead

// SubscriptionsPlatformScope is the platform scope the subscription
// economics need: until the shop grants it they stay hidden
// (specification, platform scopes, rule 1).
const SubscriptionsPlatformScope = "read_own_subscription_contracts"

// Subscription economics states (meta.subscription_economics).
const (
	SubscriptionEconomicsOn           = "on"
	SubscriptionEconomicsScopeMissing = "scope_missing"
	SubscriptionEconomicsGrantUnknown = "grant_unknown"
)

// SubscriptionWindowDays is the default window of the summary, ending
// today (UTC).
const SubscriptionWindowDays = 30

// subscriptionParams are the query parameters of the summary.
var subscriptionParams = []string{"filter[date_from]", "filter[date_to]"}

// Subscriptions serves the subscription economics from the commerce read
// model, behind the shop's platform grant.
type Subscriptions struct {
	q           *commerce.Queries
	tenancy     *tenancy.Queries
	auth        *auth.Authenticator
	wait        Waiter
	reauthorize func(shopDomain string) string
	now         func() time.Time
}

// NewSubscriptions returns the subscription summary's handler;
// reauthorize is the re-authorisation link of a shop's domain (nil: none).
func NewSubscriptions(q *commerce.Queries, t *tenancy.Queries, a *auth.Authenticator, wait Waiter,
	reauthorize func(shopDomain string) string, now func() time.Time) *Subscriptions {
	return &Subscriptions{q: q, tenancy: t, auth: a, wait: wait, reauthorize: reauthorize, now: now}
}

// Routes registers GET /api/v1/subscriptions/summary.
func (s *Subscriptions) Routes(r *mux.Router) {
	r.Handle("/api/v1/subscriptions/summary", httpapi.Beta(s.auth.Require(ScopeSubscriptionsRead, http.HandlerFunc(s.handleSummary)))).
		Methods(http.MethodGet)
}

// SubscriptionWindow is a validated summary window: inclusive UTC days.
type SubscriptionWindow struct {
	DateFrom, DateTo string
	From, Before     time.Time
}

// ParseSubscriptionWindow validates filter[date_from] and filter[date_to]
// (YYYY-MM-DD, inclusive, date_to not before date_from). The window is
// the SubscriptionWindowDays days ending today by default; with one bound
// given, the other is the default's. Anything else is a 400 naming the
// parameter.
func ParseSubscriptionWindow(query url.Values, now time.Time) (SubscriptionWindow, error) {
	var w SubscriptionWindow
	for name, vs := range query {
		if !slices.Contains(subscriptionParams, name) {
			return w, httpapi.InvalidParameter(name, "unknown parameter")
		}
		if len(vs) != 1 {
			return w, httpapi.InvalidParameter(name, "give the parameter once")
		}
	}
	y, m, d := now.UTC().Date()
	to := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	var from time.Time
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"filter[date_from]", &from}, {"filter[date_to]", &to}} {
		v, ok := query[p.name]
		if !ok {
			continue
		}
		t, err := time.Parse(time.DateOnly, v[0])
		if err != nil {
			return w, httpapi.InvalidParameter(p.name, p.name+" must be a day (YYYY-MM-DD)")
		}
		*p.dst = t
	}
	if from.IsZero() {
		from = to.AddDate(0, 0, 1-SubscriptionWindowDays)
	}
	if to.Before(from) {
		if _, given := query["filter[date_to]"]; !given {
			return w, httpapi.InvalidParameter("filter[date_from]", "date_from is after today (date_to's default)")
		}
		return w, httpapi.InvalidParameter("filter[date_to]", "date_to is before date_from")
	}
	return SubscriptionWindow{DateFrom: from.Format(time.DateOnly), DateTo: to.Format(time.DateOnly), From: from,
		Before: to.AddDate(0, 0, 1)}, nil
}

func (s *Subscriptions) handleSummary(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	win, err := ParseSubscriptionWindow(r.URL.Query(), s.now())
	if err == nil {
		err = WaitForPosition(r, s.wait, commerce.Name, tenancy.Name)
	}
	var meta map[string]any
	var on bool
	if err == nil {
		meta, on, err = s.state(r, p.ShopID)
	}
	var sum *commerce.SubscriptionSummary
	if err == nil && on {
		sum, err = s.q.SubscriptionSummary(r.Context(), p.ShopID, win.From, win.Before)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if !on {
		// Nothing of the read model is read: no number leaks.
		httpapi.WriteOptional(w, r, http.StatusOK, nil, meta)
		return
	}
	res := SubscriptionSummaryResource(win, sum)
	httpapi.WriteOptional(w, r, http.StatusOK, &res, meta)
}

// state reads the shop's grant: the summary's meta and whether the
// economics are on.
func (s *Subscriptions) state(r *http.Request, shop string) (map[string]any, bool, error) {
	ps, err := s.tenancy.ShopPlatformScopes(r.Context(), shop)
	if err != nil {
		return nil, false, err
	}
	meta := map[string]any{"feature": domain.FeatureSubscriptionRevenue, "platform_scope": SubscriptionsPlatformScope}
	if ps.Known && ps.Has(SubscriptionsPlatformScope) {
		meta["subscription_economics"] = SubscriptionEconomicsOn
		meta["reason"], meta["reauthorize_url"] = nil, nil
		return meta, true, nil
	}
	meta["subscription_economics"] = SubscriptionEconomicsScopeMissing
	if !ps.Known {
		meta["subscription_economics"] = SubscriptionEconomicsGrantUnknown
	}
	meta["reason"] = PlatformScopeReason(ps.Known, SubscriptionsPlatformScope)
	meta["reauthorize_url"] = nil
	if s.reauthorize != nil {
		sh, err := s.tenancy.ShopByID(r.Context(), shop)
		if err != nil {
			return nil, false, err
		}
		meta["reauthorize_url"] = emptyAsNull(s.reauthorize(sh.Domain))
	}
	return meta, false, nil
}

// SubscriptionAmount is an amount in one currency and the number of
// attempts or contracts it sums.
type SubscriptionAmount struct {
	Currency string  `json:"currency"`
	Amount   float64 `json:"amount"`
	Count    int     `json:"count"`
}

// SubscriptionSummaryAttributes are the summary's attributes.
type SubscriptionSummaryAttributes struct {
	DateFrom  string `json:"date_from"`
	DateTo    string `json:"date_to"`
	Contracts struct {
		Total     int            `json:"total"`
		Active    int            `json:"active"`
		InDunning int            `json:"in_dunning"`
		ByStatus  map[string]int `json:"by_status"`
	} `json:"contracts"`
	Revenue struct {
		Recognised       []SubscriptionAmount `json:"recognised"`
		UnpricedAttempts int                  `json:"unpriced_attempts"`
	} `json:"revenue"`
	MRR struct {
		Estimate          []SubscriptionAmount `json:"estimate"`
		UnpricedContracts int                  `json:"unpriced_contracts"`
	} `json:"mrr"`
	Churn struct {
		LiveAtStart   int      `json:"live_at_start"`
		EndedInWindow int      `json:"ended_in_window"`
		EndedOfStart  int      `json:"ended_of_start"`
		Rate          *float64 `json:"rate"`
	} `json:"churn"`
	Dunning struct {
		FailedAttempts     int `json:"failed_attempts"`
		SuccessfulAttempts int `json:"successful_attempts"`
		ContractsInDunning int `json:"contracts_in_dunning"`
	} `json:"dunning"`
}

// SubscriptionSummaryResource renders a shop's subscription economics.
func SubscriptionSummaryResource(win SubscriptionWindow, s *commerce.SubscriptionSummary) httpapi.Resource {
	var a SubscriptionSummaryAttributes
	a.DateFrom, a.DateTo = win.DateFrom, win.DateTo
	a.Contracts.Total, a.Contracts.Active, a.Contracts.InDunning, a.Contracts.ByStatus = s.Contracts, s.Active(), s.InDunning, s.ByStatus
	a.Revenue.Recognised, a.Revenue.UnpricedAttempts = subscriptionAmounts(s.Revenue), s.UnpricedAttempts
	a.MRR.Estimate, a.MRR.UnpricedContracts = subscriptionAmounts(s.MRR), s.UnpricedContracts
	a.Churn.LiveAtStart, a.Churn.EndedInWindow, a.Churn.EndedOfStart, a.Churn.Rate = s.LiveAtStart, s.EndedInWindow, s.EndedOfStart, s.ChurnRate
	a.Dunning.FailedAttempts, a.Dunning.SuccessfulAttempts, a.Dunning.ContractsInDunning = s.FailedAttempts, s.SuccessfulAttempts, s.InDunning
	return httpapi.Resource{ID: win.DateFrom + ":" + win.DateTo, Type: "subscription_summary", Attributes: a}
}

func subscriptionAmounts(in []commerce.CurrencyAmount) []SubscriptionAmount {
	out := make([]SubscriptionAmount, len(in))
	for i, c := range in {
		out[i] = SubscriptionAmount{Currency: c.Currency, Amount: c.Amount.Float(), Count: c.Count}
	}
	return out
}
