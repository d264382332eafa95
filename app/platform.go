package app

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/outbound"
	"github.com/cgp-platform/cgp/platform"
	"github.com/cgp-platform/cgp/platformapi"
)

// Platform is the server's connection to the commerce platform: the
// OAuth/Admin API client and the shops' sessions (both nil when the app's
// credentials are not configured), the declared scopes and the public
// address the re-authorisation links start with.
type Platform struct {
	Client     *platformapi.Client
	Sessions   *platform.Sessions
	Declared   []string
	PublicBase string
	// Plan is the plan of a shop an install creates.
	Plan string
}

// Reauthorize is the re-authorisation link of a shop's domain.
func (p *Platform) Reauthorize(shopDomain string) string {
	return platform.ReauthorizeURL(p.PublicBase, shopDomain)
}

// Session returns a shop's platform session (platform.ErrNoSession when
// the platform is not configured or the shop has none).
func (p *Platform) Session(ctx context.Context, shop string) (platform.Session, error) {
	if p.Sessions == nil {
		return platform.Session{}, platform.ErrNoSession
	}
	return p.Sessions.Session(ctx, shop)
}

// openPlatform builds the platform client from the configuration. Its
// HTTP client is the outbound guard's: the platform's address holds the
// shop's domain.
func openPlatform(cfg Config, core *Core, a *App) (*Platform, error) {
	p := &Platform{Declared: cfg.DeclaredPlatformScopes(), PublicBase: cfg.PublicBaseURL(), Plan: cfg.InstallPlan}
	if p.Plan == "" {
		p.Plan = string(domain.PlanStarter)
	}
	if cfg.PlatformClientID == "" {
		return p, nil
	}
	suffix := cfg.PlatformShopSuffix
	switch suffix {
	case "":
		suffix = platformapi.DefaultShopSuffix
	case "none":
		suffix = ""
	}
	c, err := platformapi.New(platformapi.Config{BaseURL: cfg.PlatformAPIURL, ClientID: cfg.PlatformClientID,
		ClientSecret: cfg.PlatformClientSecret, ShopSuffix: suffix, Now: cfg.Test.PlatformClock,
		HTTP: outbound.NewClient(outbound.ClientOptions{AllowPrivate: cfg.OutboundAllowPrivate, TLSConfig: cfg.Test.OutboundTLS, Timeout: 30 * time.Second})})
	if err != nil {
		return nil, err
	}
	now := cfg.Test.PlatformClock
	if now == nil {
		now = time.Now
	}
	p.Client = c
	p.Sessions = &platform.Sessions{Client: c, Commands: core.Commands, Now: now,
		Domain: func(ctx context.Context, shop string) (string, error) {
			s, err := a.Tenancy.ShopByID(ctx, shop)
			if err != nil {
				return "", err
			}
			return s.Domain, nil
		}}
	return p, nil
}
