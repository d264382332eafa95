package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"golang.org/x/net/publicsuffix"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// CreateAccount creates an account.
type CreateAccount struct {
	Name string
	Plan string
}

// CreateAccount runs the command.
func (h *Handler) CreateAccount(ctx context.Context, cmd CreateAccount, meta Meta) (Result, error) {
	id := domain.NewID(domain.PrefixAccount)
	ev, err := domain.CreateAccount(id, cmd.Name, cmd.Plan, h.now())
	if err != nil {
		return Result{}, err
	}
	res, err := execute(ctx, h, "", domain.AccountStream(id), func() *domain.Account { return &domain.Account{} },
		func(*domain.Account) (decision, error) { return decision{events: []domain.Event{ev}}, nil }, meta)
	res.ID = id
	return res, err
}

// CreateShop creates a shop under an account and claims its domain.
type CreateShop struct {
	AccountID     string
	Domain        string
	Plan          string
	WebhookSecret string
	ContactEmail  string
	CORSAllowList []string
}

// CreateShop runs the command. The domain is claimed first (a stream per
// domain appended with "no stream"), so two shops never share a domain.
// Beside domain.ValidDomain's rules, the shop's domain and every domain
// of its CORS allow-list must be registrable: not a public suffix itself
// (com, co.uk, myshopify.com), by the public suffix list.
func (h *Handler) CreateShop(ctx context.Context, cmd CreateShop, meta Meta) (Result, error) {
	if err := registrable("domain", cmd.Domain); err != nil {
		return Result{}, err
	}
	for _, d := range cmd.CORSAllowList {
		if err := registrable("cors_allow_list", d); err != nil {
			return Result{}, err
		}
	}
	var account domain.Account
	if _, _, err := h.load(ctx, domain.AccountStream(cmd.AccountID), &account); err != nil {
		return Result{}, err
	}
	id := domain.NewID(domain.PrefixShop)
	ev, err := domain.CreateShop(&account, domain.NewShop{
		ID: id, Domain: cmd.Domain, Plan: cmd.Plan, WebhookSecret: cmd.WebhookSecret,
		ContactEmail: cmd.ContactEmail, CORSAllowList: cmd.CORSAllowList,
	}, h.now())
	if err != nil {
		return Result{}, err
	}
	claim, err := h.codec.Encode(ctx, uuid.New(), id, &domain.ShopDomainClaimed{ShopID: id, Domain: ev.Domain}, h.now(), meta.metadata())
	if err != nil {
		return Result{}, err
	}
	if _, err := h.log.Append(ctx, domain.ShopDomainStream(ev.Domain), eventlog.NoStream(), claim); err != nil {
		if errors.Is(err, eventlog.ErrWrongExpectedRevision) {
			return Result{}, domain.Conflict("domain %s is already used by another shop", ev.Domain)
		}
		return Result{}, fmt.Errorf("claim domain: %w", err)
	}
	res, err := execute(ctx, h, id, domain.ShopStream(id), func() *domain.Shop { return &domain.Shop{} },
		func(*domain.Shop) (decision, error) { return decision{events: []domain.Event{ev}}, nil }, meta)
	res.ID = id
	return res, err
}

// IssueToken creates an admin API token for a shop.
type IssueToken struct {
	ShopID      string
	Name        string
	Scopes      []string
	Environment string
}

// IssuedToken is the result of IssueToken: the raw token is returned once
// and never stored.
type IssuedToken struct {
	Result
	Token string
}

// IssueToken runs the command.
func (h *Handler) IssueToken(ctx context.Context, cmd IssueToken, meta Meta) (IssuedToken, error) {
	if cmd.Environment == "" {
		cmd.Environment = domain.EnvLive
	}
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return IssuedToken{}, err
	}
	raw, err := domain.NewAdminToken(cmd.Environment)
	if err != nil {
		return IssuedToken{}, err
	}
	id := domain.NewID(domain.PrefixToken)
	ev, err := domain.IssueToken(&shop, id, cmd.Name, cmd.Scopes, cmd.Environment, raw, h.now())
	if err != nil {
		return IssuedToken{}, err
	}
	res, err := execute(ctx, h, shop.ID, domain.TokenStream(id), func() *domain.Token { return &domain.Token{} },
		func(*domain.Token) (decision, error) { return decision{events: []domain.Event{ev}}, nil }, meta)
	res.ID = id
	return IssuedToken{Result: res, Token: raw}, err
}

// registrable refuses a domain that is a public suffix (a name under
// which anyone can register, so not one shop's).
func registrable(field, d string) error {
	d = domain.NormalizeDomain(d)
	if !domain.ValidDomain(d) {
		return domain.Invalid(field, "not a valid shop domain: a public DNS name without port, such as shop.example.com")
	}
	if _, err := publicsuffix.EffectiveTLDPlusOne(d); err != nil {
		return domain.Invalid(field, "%s is a public suffix, not a registrable domain", d)
	}
	return nil
}
