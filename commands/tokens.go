package commands

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/cgp-platform/cgp/domain"
)

// IssueMasterToken creates an account-level master token (enterprise).
type IssueMasterToken struct {
	AccountID   string
	Name        string
	Environment string
}

// IssueMasterToken runs the command.
func (h *Handler) IssueMasterToken(ctx context.Context, cmd IssueMasterToken, meta Meta) (IssuedToken, error) {
	if cmd.Environment == "" {
		cmd.Environment = domain.EnvLive
	}
	var acc domain.Account
	if _, _, err := h.load(ctx, domain.AccountStream(cmd.AccountID), &acc); err != nil {
		return IssuedToken{}, err
	}
	if !acc.Exists {
		return IssuedToken{}, domain.NotFound("account")
	}
	if !acc.Plan.HasMasterTokens() {
		return IssuedToken{}, domain.Forbidden("master tokens need the enterprise plan")
	}
	raw, err := domain.NewAdminToken(cmd.Environment)
	if err != nil {
		return IssuedToken{}, err
	}
	id := domain.NewID(domain.PrefixToken)
	ev := &domain.MasterTokenIssued{TokenID: id, AccountID: acc.ID, Name: strings.TrimSpace(cmd.Name),
		Environment: cmd.Environment, Hash: domain.HashToken(raw), CreatedAt: h.now().UTC()}
	res, err := execute(ctx, h, "", domain.TokenStream(id), func() *domain.Token { return &domain.Token{} },
		func(*domain.Token) (decision, error) { return decision{events: []domain.Event{ev}}, nil }, meta)
	res.ID = id
	return IssuedToken{Result: res, Token: raw}, err
}

// IssueTokenAsMaster creates a shop token with a master token: the shop
// must belong to the master token's account (POST /api/v1/api-keys).
type IssueTokenAsMaster struct {
	AccountID string
	Token     IssueToken
}

// IssueTokenAsMaster runs the command. A shop of another account is not
// found; a shop whose plan has no API access is refused.
func (h *Handler) IssueTokenAsMaster(ctx context.Context, cmd IssueTokenAsMaster, meta Meta) (IssuedToken, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.Token.ShopID), &shop); err != nil {
		return IssuedToken{}, err
	}
	if !shop.Exists || shop.AccountID != cmd.AccountID {
		return IssuedToken{}, domain.Invalid("shop_id", "no shop with this id in the token's account")
	}
	if !shop.Plan.HasAPIAccess() {
		return IssuedToken{}, domain.Invalid("shop_id", "the shop's plan has no admin API access (agency or enterprise)")
	}
	return h.IssueToken(ctx, cmd.Token, meta)
}

// RotateToken gives a token a new secret; the old one stops working when the
// rotation is committed.
type RotateToken struct {
	TokenID string
}

// RotateToken runs the command. The shop (or account) of the token is in
// the result's ID-bearing token; the caller checks who may rotate it.
func (h *Handler) RotateToken(ctx context.Context, cmd RotateToken, meta Meta) (IssuedToken, error) {
	if !domain.HasPrefixID(cmd.TokenID, domain.PrefixToken) {
		return IssuedToken{}, domain.NotFound("token")
	}
	var raw string
	res, err := execute(ctx, h, "", domain.TokenStream(cmd.TokenID), func() *domain.Token { return &domain.Token{} },
		func(t *domain.Token) (decision, error) {
			if !t.Exists {
				return decision{}, domain.NotFound("token")
			}
			env := t.Environment
			var err error
			if raw, err = domain.NewAdminToken(env); err != nil {
				return decision{}, err
			}
			ev, err := t.Rotate(raw, h.now())
			if err != nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}, shop: t.ShopID}, nil
		}, meta)
	res.ID = cmd.TokenID
	return IssuedToken{Result: res, Token: raw}, err
}

// RevokeToken stops a token for good. Revoking twice changes nothing.
type RevokeToken struct {
	TokenID string
}

// RevokeToken runs the command.
func (h *Handler) RevokeToken(ctx context.Context, cmd RevokeToken, meta Meta) (Result, error) {
	if !domain.HasPrefixID(cmd.TokenID, domain.PrefixToken) {
		return Result{}, domain.NotFound("token")
	}
	res, err := execute(ctx, h, "", domain.TokenStream(cmd.TokenID), func() *domain.Token { return &domain.Token{} },
		func(t *domain.Token) (decision, error) {
			ev, err := t.Revoke(h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}, shop: t.ShopID}, nil
		}, meta)
	res.ID = cmd.TokenID
	return res, err
}

// ChangeShopPlan moves a shop to another plan.
type ChangeShopPlan struct {
	ShopID string
	Plan   string
}

// ChangeShopPlan runs the command.
func (h *Handler) ChangeShopPlan(ctx context.Context, cmd ChangeShopPlan, meta Meta) (Result, error) {
	res, err := execute(ctx, h, cmd.ShopID, domain.ShopStream(cmd.ShopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			ev, err := s.ChangePlan(cmd.Plan, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, err
}

// IssuePublicKey creates a storefront key (pk_…) for a shop.
type IssuePublicKey struct {
	ShopID      string
	Environment string
}

// IssuePublicKey runs the command; the raw key is returned once.
func (h *Handler) IssuePublicKey(ctx context.Context, cmd IssuePublicKey, meta Meta) (IssuedToken, error) {
	if cmd.Environment == "" {
		cmd.Environment = domain.EnvLive
	}
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return IssuedToken{}, err
	}
	if !shop.Exists {
		return IssuedToken{}, domain.NotFound("shop")
	}
	raw, err := domain.NewCredential(domain.PublicKeyPrefix, cmd.Environment)
	if err != nil {
		return IssuedToken{}, err
	}
	id := domain.NewID(domain.PrefixPublicKey)
	ev := &domain.PublicKeyIssued{KeyID: id, ShopID: shop.ID, Environment: cmd.Environment, Hash: domain.HashToken(raw),
		Last4: domain.CredentialLast4(raw), CreatedAt: h.now().UTC()}
	res, err := h.appendNew(ctx, shop.ID, domain.PublicKeyStream(id), ev, meta)
	res.ID = id
	return IssuedToken{Result: res, Token: raw}, err
}

// MintImageKey creates an image-operations API key. Scopes nil means the
// mint form's read-only default; an empty list is an inert key.
type MintImageKey struct {
	ShopID string
	Scopes []string
}

// MintedImageKey is the result of MintImageKey.
type MintedImageKey struct {
	IssuedToken
	Scopes []domain.Scope
}

// MintImageKey runs the command: the scopes are expanded at mint
// (implication, de-duplication, catalogue order, collapse to *).
func (h *Handler) MintImageKey(ctx context.Context, cmd MintImageKey, meta Meta) (MintedImageKey, error) {
	requested := cmd.Scopes
	if requested == nil {
		requested = domain.DefaultImageScopes()
	}
	scopes, err := domain.ExpandImageScopes(requested)
	if err != nil {
		return MintedImageKey{}, err
	}
	raw, err := domain.NewCredential(domain.ImageKeyPrefix, domain.EnvLive)
	if err != nil {
		return MintedImageKey{}, err
	}
	res, err := h.issueImageKey(ctx, cmd.ShopID, domain.HashToken(raw), domain.ImageScopes{Recorded: true, List: scopes}, false, meta)
	return MintedImageKey{IssuedToken: IssuedToken{Result: res, Token: raw}, Scopes: scopes}, err
}

// ImportImageKey records a key of the system before scopes, by the hex
// SHA-256 of its raw value: it has no scopes recorded (unrestricted).
type ImportImageKey struct {
	ShopID string
	SHA256 string
}

// ImportImageKey runs the command.
func (h *Handler) ImportImageKey(ctx context.Context, cmd ImportImageKey, meta Meta) (Result, error) {
	sum := strings.ToLower(strings.TrimSpace(cmd.SHA256))
	if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
		return Result{}, domain.Invalid("sha256", "must be 64 hexadecimal characters")
	}
	return h.issueImageKey(ctx, cmd.ShopID, sum, domain.ImageScopes{}, true, meta)
}

func (h *Handler) issueImageKey(ctx context.Context, shopID, hash string, scopes domain.ImageScopes, imported bool, meta Meta) (Result, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(shopID), &shop); err != nil {
		return Result{}, err
	}
	if !shop.Exists {
		return Result{}, domain.NotFound("shop")
	}
	id := domain.NewID(domain.PrefixImageKey)
	ev := &domain.ImageKeyIssued{KeyID: id, ShopID: shop.ID, Hash: hash, Scopes: scopes, Imported: imported, CreatedAt: h.now().UTC()}
	res, err := h.appendNew(ctx, shop.ID, "imagekey-"+id, ev, meta)
	res.ID = id
	return res, err
}

// RevokeImageKey stops an image-API key of a shop for good. Revoking
// twice changes nothing.
type RevokeImageKey struct {
	ShopID, KeyID string
}

// RevokedImageKey is the result: the key's hash, for the authenticator
// to refuse it in this process before the read model catches up.
type RevokedImageKey struct {
	Result
	Hash string
}

// RevokeImageKey runs the command; a key of another shop is not found.
func (h *Handler) RevokeImageKey(ctx context.Context, cmd RevokeImageKey, meta Meta) (RevokedImageKey, error) {
	if !domain.HasPrefixID(cmd.KeyID, domain.PrefixImageKey) {
		return RevokedImageKey{}, domain.NotFound("image key")
	}
	var hash string
	res, err := execute(ctx, h, cmd.ShopID, "imagekey-"+cmd.KeyID, func() *domain.ImageKey { return &domain.ImageKey{} },
		func(k *domain.ImageKey) (decision, error) {
			ev, err := k.Revoke(cmd.ShopID, h.now())
			hash = k.Hash
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}, shop: k.ShopID}, nil
		}, meta)
	res.ID = cmd.KeyID
	return RevokedImageKey{Result: res, Hash: hash}, err
}

// noAggregate folds nothing: the stream of a new credential is created
// with "no stream".
type noAggregate struct{}

func (noAggregate) Apply(domain.Event) {}

func (h *Handler) appendNew(ctx context.Context, shop, stream string, ev domain.Event, meta Meta) (Result, error) {
	return execute(ctx, h, shop, stream, func() noAggregate { return noAggregate{} },
		func(noAggregate) (decision, error) { return decision{events: []domain.Event{ev}}, nil }, meta)
}
