package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// ShopPlans finds a shop's plan.
type ShopPlans interface {
	ShopPlan(ctx context.Context, shopID string) (domain.Plan, error)
}

// Usage serves GET /api/v1/usage: the shop's billing period, its AI credit
// budget and the image operations counted against it.
type Usage struct {
	auth    *auth.Authenticator
	keys    auth.ImageKeyFinder
	plans   ShopPlans
	credits map[domain.Plan]int
	now     func() time.Time
}

// DefaultAICredits is the monthly AI credit budget per plan (DESIGN.md §7).
func DefaultAICredits() map[domain.Plan]int {
	return map[domain.Plan]int{
		domain.PlanStarter: 0, domain.PlanGrowth: 100, domain.PlanPro: 500, domain.PlanProPlus: 2000,
		domain.PlanAgency: 5000, domain.PlanEnterprise: 20000,
	}
}

// NewUsage returns the usage handler.
func NewUsage(a *auth.Authenticator, keys auth.ImageKeyFinder, plans ShopPlans, credits map[domain.Plan]int, now func() time.Time) *Usage {
	return &Usage{auth: a, keys: keys, plans: plans, credits: credits, now: now}
}

// Routes registers GET /api/v1/usage: any admin token, or an image-API key
// with usage:read.
func (u *Usage) Routes(r *mux.Router) {
	r.Handle("/api/v1/usage", httpapi.Stable(u.auth.RequireImageKeyOrToken(u.keys, domain.ImageScopeUsageRead, http.HandlerFunc(u.handleUsage)))).Methods(http.MethodGet)
}

func (u *Usage) handleUsage(w http.ResponseWriter, r *http.Request) {
	shop := ""
	if p, ok := auth.FromContext(r.Context()); ok {
		shop = p.ShopID
	} else if k, ok := auth.ImageKeyFromContext(r.Context()); ok {
		shop = k.ShopID
	}
	plan, err := u.plans.ShopPlan(r.Context(), shop)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	now := u.now().UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	quota := u.credits[plan]
	// No image operation has been recorded yet (they arrive with the image
	// operations endpoints); the counts are what the log holds: zero.
	used := 0
	httpapi.WriteResource(w, r, http.StatusOK, httpapi.Resource{ID: shop, Type: "usage", Attributes: map[string]any{
		"plan":         plan,
		"period_start": start,
		"period_end":   start.AddDate(0, 1, 0),
		"ai_credits":   map[string]any{"quota": quota, "used": used, "remaining": quota - used},
		"image_operations": map[string]any{
			"background_removals": 0, "upscales": 0, "lifestyle_scenes": 0, "total": 0,
		},
	}})
}
