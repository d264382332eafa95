package app

import (
	"context"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/platform"
	"github.com/cgp-platform/cgp/platformapi"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/writeapi"
)

// platformActions is writeapi.Platform over the server's platform
// connection: sessions from Platform, grants from the tenancy read model
// (the last app/scopes_update or install), the calls through
// platformapi.Client.
type platformActions struct {
	p       *Platform
	tenancy *tenancy.Queries
}

var _ writeapi.Platform = platformActions{}

// Session implements writeapi.Platform.
func (pa platformActions) Session(ctx context.Context, shopID string) (platform.Session, error) {
	if pa.p.Client == nil {
		return platform.Session{}, platform.ErrNoSession
	}
	return pa.p.Session(ctx, shopID)
}

// Granted implements writeapi.Platform: the shop's grant as the platform
// last reported it, or the session's own when it never did.
func (pa platformActions) Granted(ctx context.Context, s platform.Session, scope string) (bool, error) {
	g, err := pa.tenancy.ShopPlatformScopes(ctx, s.ShopID)
	if err != nil {
		return false, err
	}
	if g.Known {
		return g.Has(scope), nil
	}
	return domain.PlatformScopeGranted(s.Scopes, scope), nil
}

// Reauthorize implements writeapi.Platform.
func (pa platformActions) Reauthorize(ctx context.Context, shopID string) string {
	s, err := pa.tenancy.ShopByID(ctx, shopID)
	if err != nil {
		return pa.p.PublicBase + "/auth/install"
	}
	return pa.p.Reauthorize(s.Domain)
}

// CancelOrder implements writeapi.Platform.
func (pa platformActions) CancelOrder(ctx context.Context, s platform.Session, in platformapi.CancelOrder) (platformapi.CancelJob, error) {
	return pa.p.Client.CancelOrder(ctx, s.Domain, s.AccessToken, in)
}

// CreateRefund implements writeapi.Platform.
func (pa platformActions) CreateRefund(ctx context.Context, s platform.Session, in platformapi.CreateRefund) (platformapi.Refund, error) {
	return pa.p.Client.CreateRefund(ctx, s.Domain, s.AccessToken, in)
}

// UpdateProduct implements writeapi.Platform.
func (pa platformActions) UpdateProduct(ctx context.Context, s platform.Session, in platformapi.UpdateProduct) error {
	return pa.p.Client.UpdateProduct(ctx, s.Domain, s.AccessToken, in)
}

// mountOrderActions registers the order actions taken on the platform.
func mountOrderActions(a *App, r *mux.Router, idem Middleware) {
	writeapi.NewOrderActions(a.Commands, a.Auth, idem, a.Commerce, a.Runtime, platformActions{p: a.Platform, tenancy: a.Tenancy}).Routes(r)
}
