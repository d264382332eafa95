package app

// Adapters of the read models to the ports of auth, ingest, writeapi and
// the receivers.

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/ingest/marketplace"
	"github.com/cgp-platform/cgp/ingest/providers"
	"github.com/cgp-platform/cgp/ingest/whatsapp"
	"github.com/cgp-platform/cgp/internal/gencache"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/marketplaces"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// Tokens adapts the tenancy read model to auth.Finder.
type Tokens struct{ Q *tenancy.Queries }

func (f Tokens) TokenByHash(ctx context.Context, hash string) (*auth.Token, error) {
	t, err := f.Q.TokenByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	return &auth.Token{ID: t.ID, ShopID: t.ShopID, AccountID: t.AccountID, Master: t.Master, Hash: t.Hash,
		Scopes: t.Scopes, Revoked: t.Revoked, ShopPlan: t.ShopPlan}, nil
}

// ImageKeys adapts the tenancy read model to auth.ImageKeyFinder.
type ImageKeys struct{ Q *tenancy.Queries }

func (f ImageKeys) ImageKeyByHash(ctx context.Context, hash string) (*auth.ImageKey, error) {
	k, err := f.Q.ImageKeyByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	return &auth.ImageKey{ID: k.ID, ShopID: k.ShopID, Hash: k.Hash, Scopes: k.Scopes}, nil
}

// ShopImageKeys lists the shop's image-API keys, the newest first.
func (f ImageKeys) ShopImageKeys(ctx context.Context, shopID string) ([]writeapi.ImageKeyListing, error) {
	keys, err := f.Q.ShopImageKeys(ctx, shopID)
	if err != nil {
		return nil, err
	}
	out := make([]writeapi.ImageKeyListing, len(keys))
	for i, k := range keys {
		out[i] = writeapi.ImageKeyListing{ID: k.ID, Scopes: k.Scopes, Imported: k.Imported, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
	}
	return out, nil
}

// Directory adapts the tenancy read model to the key endpoints' needs.
type Directory struct{ Q *tenancy.Queries }

// ShopCredits reads a shop's AI credits in a billing month.
func (d Directory) ShopCredits(ctx context.Context, shopID, month string) (readapi.CreditMonth, error) {
	c, err := d.Q.Credits(ctx, shopID, month)
	if err != nil {
		return readapi.CreditMonth{}, err
	}
	return readapi.CreditMonth{Override: c.Override, Used: c.Used, Reserved: c.Reserved,
		BackgroundRemovals: c.BackgroundRemovals, Upscales: c.Upscales, LifestyleScenes: c.LifestyleScenes}, nil
}

func (d Directory) TokenByID(ctx context.Context, id string) (*writeapi.TokenInfo, error) {
	t, err := d.Q.TokenByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return &writeapi.TokenInfo{ID: t.ID, ShopID: t.ShopID, AccountID: t.AccountID, Hash: t.Hash, Master: t.Master,
		Scopes: t.Scopes, Environment: t.Environment, Name: t.Name}, nil
}

func (d Directory) ShopAccount(ctx context.Context, shopID string) (string, error) {
	s, err := d.Q.ShopByID(ctx, shopID)
	if err != nil {
		return "", err
	}
	return s.AccountID, nil
}

func (d Directory) ShopPlan(ctx context.Context, shopID string) (domain.Plan, error) {
	s, err := d.Q.ShopByID(ctx, shopID)
	if err != nil {
		return "", err
	}
	return s.Plan, nil
}

// Shops adapts the tenancy read model to ingest.ShopFinder, with a
// cache dropped on every tenancy change (one lookup per delivery is
// otherwise a read-model query on the hottest path). A shop created an
// instant ago (by this server or by `cgp shops create` writing the same
// log) is found on its first delivery: an unknown domain is looked up once
// more after the tenancy read model reached the log's head
// (auth.FindFresh).
type Shops struct {
	Q     *tenancy.Queries
	Codec *envelope.Codec // opens the sealed webhook secret
	Auth  *auth.Authenticator
	Cache *gencache.Cache[string, *ingest.Shop]
}

// ShopByDomain implements ingest.ShopFinder.
func (f Shops) ShopByDomain(ctx context.Context, d string) (*ingest.Shop, error) {
	return auth.FindFresh(ctx, f.Auth, func() (*ingest.Shop, error) {
		return f.Cache.Get(domain.NormalizeDomain(d), func() (*ingest.Shop, error) {
			s, err := f.Q.ShopByDomain(ctx, d)
			if err != nil {
				return nil, err
			}
			secret, err := f.Codec.OpenSecret(ctx, s.ID, tenancy.SecretLabel, s.WebhookSecret)
			if err != nil {
				return nil, err
			}
			return &ingest.Shop{ID: s.ID, WebhookSecret: secret}, nil
		})
	})
}

// PublicShops adapts the tenancy read model to the public surface.
type PublicShops struct{ Q *tenancy.Queries }

func (p PublicShops) PublicKeyShop(ctx context.Context, hash string) (string, error) {
	k, err := p.Q.PublicKeyByHash(ctx, hash)
	if err != nil {
		return "", err
	}
	return k.ShopID, nil
}

func (p PublicShops) ShopCORS(ctx context.Context, d string) (string, []string, error) {
	return p.Q.ShopCORS(ctx, d)
}

func (p PublicShops) OriginAllowed(ctx context.Context, host string) (bool, error) {
	return p.Q.OriginAllowed(ctx, host)
}

// TemplateApprovals adapts the messaging and customers read models to
// writeapi.LaunchReads.
type TemplateApprovals struct {
	Q         *messaging.Queries
	Customers *customers.Queries
	// SMTP tells whether an SMTP relay is configured (e-mail can be sent).
	SMTP bool
}

func (t TemplateApprovals) Template(ctx context.Context, shop, templateID string) (string, string, string, bool, error) {
	tpl, err := t.Q.Template(ctx, shop, templateID)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return "", "", "", false, nil
	}
	if err != nil {
		return "", "", "", false, err
	}
	return tpl.Name, tpl.Language, tpl.State, true, nil
}

func (t TemplateApprovals) ChannelReady(ctx context.Context, shop, channel string) error {
	switch channel {
	case domain.ChannelWhatsApp:
		_, _, err := t.Q.SendingAccount(ctx, shop)
		if domain.ErrorCode(err) == domain.CodeNotFound {
			return domain.Invalid("channel", "the shop has no connected WhatsApp account with an access token (cgp messaging connect --access-token)")
		}
		return err
	case domain.ChannelEmail:
		if !t.SMTP {
			return domain.Invalid("channel", "e-mail cannot be sent: the service has no SMTP relay configured (--smtp-addr)")
		}
	}
	return nil
}

func (t TemplateApprovals) Recipients(ctx context.Context, shop string, f domain.AudienceFilters, channel string, now time.Time) ([]string, int, int, error) {
	ids, skipped, err := t.Customers.Recipients(ctx, shop, f, channel, now)
	return ids, skipped.NoConsent, skipped.NoAddress, err
}

func (t TemplateApprovals) TemplateApproved(ctx context.Context, shop, templateID string) (bool, error) {
	tpl, err := t.Q.Template(ctx, shop, templateID)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return tpl.State == domain.TemplateApproved, nil
}

// WhatsAppAccounts adapts the messaging read model to the receiver,
// opening the sealed app secret.
type WhatsAppAccounts struct {
	Q     *messaging.Queries
	Codec *envelope.Codec
}

func (w WhatsAppAccounts) WhatsAppAccount(ctx context.Context, id string) (*whatsapp.Account, error) {
	a, err := w.Q.WhatsAppAccount(ctx, id)
	return w.receiverAccount(ctx, a, err)
}

func (w WhatsAppAccounts) AccountByVerifyTokenHash(ctx context.Context, hash string) (*whatsapp.Account, error) {
	a, err := w.Q.AccountByVerifyTokenHash(ctx, hash)
	return w.receiverAccount(ctx, a, err)
}

func (w WhatsAppAccounts) receiverAccount(ctx context.Context, a *messaging.Account, err error) (*whatsapp.Account, error) {
	if err != nil {
		return nil, err
	}
	secret, err := w.Codec.OpenSecret(ctx, a.ShopID, messaging.SecretLabel, a.AppSecret)
	if err != nil {
		return nil, err
	}
	return &whatsapp.Account{ID: a.BusinessAccountID, ShopID: a.ShopID, AppSecret: secret, VerifyTokenHash: a.VerifyTokenHash}, nil
}

// ProviderConnections adapts the messaging read model to
// providers.Connections.
type ProviderConnections struct{ Q *messaging.Queries }

func (p ProviderConnections) ProviderByTokenHash(ctx context.Context, hash string) (*providers.Connection, error) {
	c, err := p.Q.ProviderByTokenHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	return &providers.Connection{ShopID: c.ShopID, Provider: c.Provider, TokenHash: c.TokenHash}, nil
}

// MarketplaceConnections adapts the marketplaces read model to the receiver.
// The secret is sealed in the read model; it is opened here, on use.
type MarketplaceConnections struct {
	Q     *marketplaces.Queries
	Codec *envelope.Codec
}

func (m MarketplaceConnections) MarketplaceConnection(ctx context.Context, name, account string) (*marketplace.Connection, error) {
	c, err := m.Q.Connection(ctx, name, account)
	if err != nil {
		return nil, err
	}
	secret, err := m.Codec.OpenSecret(ctx, c.ShopID, marketplaces.SecretLabel, c.Secret)
	if err != nil {
		return nil, err
	}
	return &marketplace.Connection{ShopID: c.ShopID, Secret: secret, AppKey: c.AppKey}, nil
}

// TokenName implements readapi.TokenNames over the tenancy read model.
func (d Directory) TokenName(ctx context.Context, id string) (string, error) {
	t, err := d.Q.TokenByID(ctx, id)
	if err != nil {
		return "", err
	}
	return t.Name, nil
}

// TokenList lists a shop's admin tokens from the tenancy read model with
// their last uses (saved, or still pending in this process).
type TokenList struct {
	Q     *tenancy.Queries
	Uses  *auth.LastUsed
	Store auth.UseReader
}

// ShopTokens lists the shop's tokens, the newest first.
func (l TokenList) ShopTokens(ctx context.Context, shopID string) ([]writeapi.TokenListing, error) {
	tokens, err := l.Q.ShopTokens(ctx, shopID)
	if err != nil {
		return nil, err
	}
	out := make([]writeapi.TokenListing, 0, len(tokens))
	for _, t := range tokens {
		tl := writeapi.TokenListing{ID: t.ID, Name: t.Name, Environment: t.Environment, Scopes: t.Scopes,
			CreatedAt: t.CreatedAt, RotatedAt: t.RotatedAt, RevokedAt: t.RevokedAt}
		u, ok, err := l.Uses.Last(ctx, l.Store, t.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			at := u.At.UTC()
			tl.LastUsedAt, tl.LastUsedIP = &at, u.IP.String()
		}
		out = append(out, tl)
	}
	return out, nil
}
