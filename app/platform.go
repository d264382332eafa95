package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections/tenancy"

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
	// webhookSecret is the client secret: the platform signs webhooks
	// with it. now is the platform clock.
	webhookSecret string
	now           func() time.Time
	// registerWake and reconsentWake wake the platform jobs.
	registerWake, reconsentWake chan struct{}
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
	p := &Platform{Declared: cfg.DeclaredPlatformScopes(), PublicBase: cfg.PublicBaseURL(), Plan: cfg.InstallPlan,
		registerWake: make(chan struct{}, 1), reconsentWake: make(chan struct{}, 1)}
	if p.Plan == "" {
		p.Plan = string(domain.PlanStarter)
	}
	p.now = cfg.Test.PlatformClock
	if p.now == nil {
		p.now = time.Now
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
	p.Client, p.webhookSecret = c, cfg.PlatformClientSecret
	p.Sessions = &platform.Sessions{Client: c, Commands: core.Commands, Now: p.now,
		Domain: func(ctx context.Context, shop string) (string, error) {
			s, err := a.Tenancy.ShopByID(ctx, shop)
			if err != nil {
				return "", err
			}
			return s.Domain, nil
		}}
	return p, nil
}

// wake nudges the platform jobs (a tenancy change: an install, a scopes
// update, a registration).
func (p *Platform) wake() {
	for _, ch := range []chan struct{}{p.registerWake, p.reconsentWake} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// platformWebhooksJob registers the app's webhook subscriptions on the
// platform for every installed shop whose grant changed since its last
// registration (the tenancy read model's work list), and records each
// registration (PlatformWebhooksRegistered). A shop that fails is tried
// again at the next pass.
func platformWebhooksJob(a *App) func(ctx context.Context) error {
	p := a.Platform
	if p.Client == nil {
		return nil
	}
	return func(ctx context.Context) error {
		return EveryTickOrWake(ctx, time.Minute, p.registerWake, func(ctx context.Context) {
			pending, err := a.Tenancy.PendingRegistrations(ctx)
			if err != nil {
				a.Logger.Warn().Err(err).Msg("platform webhooks: pending registrations")
				return
			}
			for _, s := range pending {
				if err := p.register(ctx, a, s); err != nil && ctx.Err() == nil {
					a.Logger.Warn().Err(err).Str("shop_id", s.ShopID).Msg("platform webhooks not registered; retried at the next pass")
				}
			}
		})
	}
}

func (p *Platform) register(ctx context.Context, a *App, s tenancy.PendingRegistration) error {
	sess, err := p.Session(ctx, s.ShopID)
	if err != nil {
		return err
	}
	subs, withheld := platform.Subscriptions(s.Granted)
	topics := make([]string, 0, len(subs))
	for _, sub := range subs {
		if _, err := p.Client.RegisterWebhook(ctx, sess.Domain, sess.AccessToken, sub.Topic, p.PublicBase+sub.Path); err != nil {
			return fmt.Errorf("register %s: %w", sub.Topic, err)
		}
		topics = append(topics, sub.Topic)
	}
	_, err = a.Commands.RecordWebhooksRegistered(ctx, domain.PlatformWebhooksRegistered{ShopID: s.ShopID,
		Grant: domain.ImpliedPlatformScopes(s.Granted), Topics: topics, Withheld: withheld, Address: p.PublicBase},
		commands.Meta{Actor: "system:platform_webhooks", Source: "system"})
	return err
}

// reconsentKey is the dedupe key of a shop's re-consent anomaly.
const reconsentKey = "platform_reconsent"

// platformReconsentJob compares every known grant with the declared
// scopes: a shop whose implied grant lacks one is told to re-consent (a P2
// anomaly, notified like every anomaly, with the re-authorisation link);
// a grant that covers them again (app/scopes_update, a new install)
// resolves it. Each shop is decided once per grant and declaration.
func platformReconsentJob(a *App) func(ctx context.Context) error {
	p := a.Platform
	decided := map[string]string{}
	sum := sha256.Sum256([]byte(strings.Join(p.Declared, ",")))
	declared := hex.EncodeToString(sum[:8])
	return func(ctx context.Context) error {
		return EveryTickOrWake(ctx, 10*time.Minute, p.reconsentWake, func(ctx context.Context) {
			grants, err := a.Tenancy.KnownGrants(ctx)
			if err != nil {
				a.Logger.Warn().Err(err).Msg("platform re-consent: known grants")
				return
			}
			for _, g := range grants {
				key := declared + "|" + domain.GrantKey(g.Granted)
				if decided[g.ShopID] == key {
					continue
				}
				if err := p.decideReconsent(ctx, a, g, key); err != nil {
					if ctx.Err() == nil {
						a.Logger.Warn().Err(err).Str("shop_id", g.ShopID).Msg("platform re-consent not decided; tried again at the next pass")
					}
					continue
				}
				decided[g.ShopID] = key
			}
		})
	}
}

func (p *Platform) decideReconsent(ctx context.Context, a *App, g tenancy.KnownGrant, key string) error {
	meta := commands.Meta{Actor: "system:platform_reconsent", Source: "system"}
	sum := sha256.Sum256([]byte(key))
	cause := "reconsent:" + hex.EncodeToString(sum[:12])
	missing := domain.MissingPlatformScopes(p.Declared, g.Granted)
	if len(missing) == 0 {
		_, _, err := a.Commands.ResolveAnomaly(ctx, commands.ResolveAnomaly{ShopID: g.ShopID, DedupeKey: reconsentKey, Cause: cause,
			Reason: "the grant covers the declared scopes"}, meta)
		return err
	}
	link := p.Reauthorize(g.Domain)
	res := make([]domain.AnomalyResource, 0, len(missing))
	for _, s := range missing {
		if len(res) < 20 {
			res = append(res, domain.AnomalyResource{Type: "platform_scope", ID: s})
		}
	}
	title := fmt.Sprintf("Re-authorise the app: %d platform scope(s) not granted", len(missing))
	summary := fmt.Sprintf("The app now requests %s, which this shop has not granted. The features that need them stay off until the merchant re-authorises the app at %s.",
		strings.Join(missing, ", "), link)
	_, _, err := a.Commands.RaiseAnomaly(ctx, commands.RaiseAnomaly{Draft: domain.AnomalyDraft{ShopID: g.ShopID, Severity: domain.SeverityP2,
		Kind: domain.AnomalyPlatformReconsent, Title: title, Summary: summary, DedupeKey: reconsentKey, Cause: cause, Resources: res}}, meta)
	return err
}

// mountInstall registers the install flow (GET /auth/install and
// /auth/callback).
func mountInstall(a *App, r *mux.Router, _ Middleware) {
	in := &platform.Installer{Commands: a.Commands, States: a.Idempotency, StateKey: deriveKey(a.CursorKey, "cgp oauth state v1"),
		Declared: a.Platform.Declared, PublicBase: a.Platform.PublicBase, Plan: a.Platform.Plan, Now: a.Platform.now,
		Wait: func(ctx context.Context, pos uint64) error {
			return a.Runtime.WaitFor(ctx, eventlog.Position(pos), tenancy.Name)
		}}
	if a.Platform.Client != nil {
		in.Client, in.WebhookSecret = a.Platform.Client, a.Platform.webhookSecret
	}
	in.Routes(r)
}
