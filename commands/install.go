package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// InstallApp records the merchant's approval of the app on the platform
// (the OAuth callback, after the code exchange): the shop is created when
// the domain has none (or only an erased one), reactivated when it was
// uninstalled, given its grant and its session.
type InstallApp struct {
	Domain string
	// Granted and Declared are the token's scopes and the app's request.
	Granted, Declared []string
	// Session is the offline token as issued (ShopID and Source are set
	// here).
	Session domain.PlatformSessionStored
	// WebhookSecret is what the platform signs the shop's webhooks with:
	// the app's client secret. Plan is a new shop's plan.
	WebhookSecret, Plan string
	// Nonce is the callback's state nonce: the events' ids derive from it,
	// so a retried callback records nothing twice.
	Nonce string
}

// Installed is what InstallApp did.
type Installed struct {
	Result
	ShopID      string
	Created     bool // a new shop
	Reinstalled bool // an uninstalled shop came back (its countdown is cancelled)
}

// InstallApp runs the command.
func (h *Handler) InstallApp(ctx context.Context, cmd InstallApp, meta Meta) (Installed, error) {
	d := domain.NormalizeDomain(cmd.Domain)
	shopID, err := h.claimedShop(ctx, d)
	if err != nil {
		return Installed{}, err
	}
	var out Installed
	if shopID == "" {
		res, err := h.installNewShop(ctx, cmd, d, meta)
		if err != nil {
			return Installed{}, err
		}
		shopID, out.Created = res.ID, true
	}
	out.ShopID = shopID
	now := h.now().UTC()
	res, err := execute(ctx, h, shopID, domain.ShopStream(shopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			if !s.Exists {
				return decision{}, domain.NotFound("shop")
			}
			var d decision
			if s.Uninstalled {
				re, err := s.ReinstallApp(now)
				if err != nil {
					return decision{}, err
				}
				d.events = append(d.events, re)
				d.ids = append(d.ids, eventlog.DeterministicID("install", cmd.Nonce, "reinstalled"))
				out.Reinstalled = true
			}
			d.events = append(d.events, &domain.AppInstalled{ShopID: shopID, Domain: s.Domain, Granted: cmd.Granted,
				Declared: cmd.Declared, WebhookSecret: cmd.WebhookSecret, InstalledAt: now})
			d.ids = append(d.ids, eventlog.DeterministicID("install", cmd.Nonce, "installed"))
			return d, nil
		}, meta)
	if err != nil {
		return Installed{}, err
	}
	sess := cmd.Session
	sess.ShopID, sess.Source, sess.StoredAt = shopID, domain.SessionFromInstall, now
	sres, err := h.StorePlatformSession(ctx, StorePlatformSession{Session: sess, EventID: eventlog.DeterministicID("install", cmd.Nonce, "session")}, meta)
	if err != nil {
		return Installed{}, err
	}
	out.Result = res
	if sres.Position > out.Position {
		out.Position = sres.Position
	}
	return out, nil
}

// claimedShop returns the shop that claims domain d, "" when none does or
// the one that did was erased.
func (h *Handler) claimedShop(ctx context.Context, d string) (string, error) {
	evs, err := h.log.ReadStream(ctx, domain.ShopDomainStream(d), 0, 1<<20)
	if err != nil {
		return "", fmt.Errorf("read domain claim: %w", err)
	}
	if len(evs) == 0 {
		return "", nil
	}
	id := evs[len(evs)-1].ShopID
	var s domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(id), &s); err != nil {
		return "", err
	}
	if s.Erased {
		return "", nil
	}
	return id, nil
}

// installNewShop creates a merchant's own account, named after the
// domain, and the shop under it.
func (h *Handler) installNewShop(ctx context.Context, cmd InstallApp, d string, meta Meta) (Result, error) {
	if err := registrable("shop", d); err != nil {
		return Result{}, err
	}
	acc, err := h.CreateAccount(ctx, CreateAccount{Name: d, Plan: cmd.Plan}, meta)
	if err != nil {
		return Result{}, err
	}
	return h.CreateShop(ctx, CreateShop{AccountID: acc.ID, Domain: d, Plan: cmd.Plan, WebhookSecret: cmd.WebhookSecret}, meta)
}

// StorePlatformSession records a shop's platform session: issued at
// install, or refreshed. With Expected set (a refresh), the append expects
// the session stream at that revision, so two servers refreshing at once
// record one session and the other learns of it (ErrSessionChanged).
type StorePlatformSession struct {
	Session  domain.PlatformSessionStored
	EventID  uuid.UUID
	Expected *uint64
}

// ErrSessionChanged: another writer stored a session since it was read.
var ErrSessionChanged = errors.New("the platform session changed meanwhile")

// StorePlatformSession runs the command.
func (h *Handler) StorePlatformSession(ctx context.Context, cmd StorePlatformSession, meta Meta) (Result, error) {
	ev := cmd.Session
	if ev.StoredAt.IsZero() {
		ev.StoredAt = h.now().UTC()
	}
	if ev.AccessToken == "" {
		return Result{}, domain.Invalid("access_token", "a session needs an access token")
	}
	id := cmd.EventID
	if id == uuid.Nil {
		id = newEventID()
	}
	stream := domain.PlatformSessionStream(ev.ShopID)
	expected := eventlog.Any()
	if cmd.Expected != nil {
		expected = eventlog.Exact(*cmd.Expected)
	}
	res, err := h.appendOne(ctx, ev.ShopID, stream, expected, id, &ev, ev.StoredAt, meta)
	if errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		return Result{}, ErrSessionChanged
	}
	return res, err
}

// LoadPlatformSession reads a shop's session stream: the session and the
// revision a refresh expects.
func (h *Handler) LoadPlatformSession(ctx context.Context, shopID string) (domain.PlatformSession, uint64, error) {
	var s domain.PlatformSession
	rev, exists, err := h.load(ctx, domain.PlatformSessionStream(shopID), &s)
	if err == nil && !exists {
		err = domain.NotFound("platform session")
	}
	return s, rev, err
}

// RecordWebhooksRegistered records the app's webhook subscriptions
// registered on the platform for a grant.
func (h *Handler) RecordWebhooksRegistered(ctx context.Context, ev domain.PlatformWebhooksRegistered, meta Meta) (Result, error) {
	if ev.RegisteredAt.IsZero() {
		ev.RegisteredAt = h.now().UTC()
	}
	id := eventlog.DeterministicID("platform-webhooks", ev.ShopID, strings.Join(ev.Grant, ","), ev.Address)
	return h.recordFact(ctx, ev.ShopID, domain.PlatformWebhooksStream(ev.ShopID), id, &ev, meta)
}
