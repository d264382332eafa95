package writeapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
)

// TokenInfo is what the key endpoints need to know of an existing token.
type TokenInfo struct {
	ID, ShopID, AccountID, Hash string
	Master                      bool
	Scopes                      []domain.Scope
	Environment, Name           string
}

// TokenDirectory finds tokens and shops for the authorisation of key
// management.
type TokenDirectory interface {
	TokenByID(ctx context.Context, id string) (*TokenInfo, error)
	ShopAccount(ctx context.Context, shopID string) (string, error)
}

// TokenListing is one admin token of a shop in the token list, with its
// last use (nil when never used).
type TokenListing struct {
	ID, Name, Environment string
	Scopes                []domain.Scope
	CreatedAt             time.Time
	RotatedAt, RevokedAt  time.Time // zero: never
	LastUsedAt            *time.Time
	LastUsedIP            string
}

// TokenLister lists a shop's admin tokens.
type TokenLister interface {
	ShopTokens(ctx context.Context, shopID string) ([]TokenListing, error)
}

// APIKeys serves the admin-token endpoints under /api/v1/api-keys: the
// list, create, rotate and revoke.
type APIKeys struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	dir  TokenDirectory
	list TokenLister
	now  func() time.Time
}

// NewAPIKeys returns the key-management handlers.
func NewAPIKeys(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, dir TokenDirectory, list TokenLister, now func() time.Time) *APIKeys {
	return &APIKeys{cmds: cmds, auth: a, idem: idem, dir: dir, list: list, now: now}
}

// Routes registers the key-management routes.
func (k *APIKeys) Routes(r *mux.Router) {
	r.Handle("/api/v1/api-keys", httpapi.Stable(k.auth.RequireMaster(false, k.idem(http.HandlerFunc(k.handleAPIKeyCreate))))).Methods(http.MethodPost)
	r.Handle("/api/v1/api-keys", httpapi.Stable(k.auth.RequireMaster(true, http.HandlerFunc(k.handleAPIKeyList)))).Methods(http.MethodGet)
	r.Handle("/api/v1/api-keys/{id}/rotate", httpapi.Stable(k.auth.RequireMaster(true, k.idem(http.HandlerFunc(k.handleAPIKeyRotate))))).Methods(http.MethodPost)
	r.Handle("/api/v1/api-keys/{id}", httpapi.Stable(k.auth.RequireMaster(true, k.idem(http.HandlerFunc(k.handleAPIKeyRevoke))))).Methods(http.MethodDelete)
}

// handleAPIKeyList lists a shop's admin tokens (revoked ones too) with
// their scopes, creation, rotation and last use (time and address),
// never a secret. A master token names the shop (shop_id, one of its
// account's); a shop token with "*" lists its own shop.
func (k *APIKeys) handleAPIKeyList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	shop := r.URL.Query().Get("shop_id")
	switch {
	case p.Master:
		if shop == "" {
			httpapi.WriteError(w, r, httpapi.ValidationFailed("shop_id", "a master token names the shop: shop_id is required"))
			return
		}
		if acc, err := k.dir.ShopAccount(r.Context(), shop); err != nil || acc != p.AccountID {
			httpapi.WriteError(w, r, domain.NotFound("shop"))
			return
		}
	case !domain.Grants(p.Scopes, domain.ScopeAll):
		httpapi.WriteError(w, r, httpapi.ScopeRequired(string(domain.ScopeAll)))
		return
	case shop != "" && shop != p.ShopID:
		httpapi.WriteError(w, r, domain.NotFound("shop"))
		return
	default:
		shop = p.ShopID
	}
	list, err := k.list.ShopTokens(r.Context(), shop)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	out := make([]httpapi.Resource, 0, len(list))
	for _, t := range list {
		attrs := map[string]any{"shop_id": shop, "name": t.Name, "scopes": t.Scopes, "environment": t.Environment,
			"created_at": t.CreatedAt, "rotated_at": timeOrNil(t.RotatedAt), "revoked_at": timeOrNil(t.RevokedAt),
			"last_used_at": t.LastUsedAt, "last_used_ip": nil}
		if t.LastUsedAt != nil {
			attrs["last_used_ip"] = t.LastUsedIP
		}
		out = append(out, httpapi.Resource{ID: t.ID, Type: "api_key", Attributes: attrs})
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteList(w, r, out, httpapi.Page{})
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// handleAPIKeyRevoke stops a token for good (204; revoking a revoked
// token again is also 204). Who may revoke is who may rotate.
func (k *APIKeys) handleAPIKeyRevoke(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	target, err := k.dir.TokenByID(r.Context(), id)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if err := k.mayRotate(r.Context(), p, target); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := k.cmds.RevokeToken(r.Context(), commands.RevokeToken{TokenID: id}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	k.auth.Revoke(target.Hash)
	if res.Position > 0 {
		w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(uint64(res.Position), 10))
	}
	w.WriteHeader(http.StatusNoContent)
}

type apiKeyCreate struct {
	ShopID      *string  `json:"shop_id"`
	Name        string   `json:"name"`
	Scopes      []string `json:"scopes"`
	Environment string   `json:"environment"`
}

func (k *APIKeys) handleAPIKeyCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body apiKeyCreate
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.ShopID == nil || *body.ShopID == "" {
		httpapi.WriteError(w, r, httpapi.ValidationFailed("shop_id", "shop_id is required"))
		return
	}
	if body.Scopes == nil {
		httpapi.WriteError(w, r, httpapi.ValidationFailed("scopes", "scopes is required"))
		return
	}
	if body.Environment == "" {
		body.Environment = domain.EnvLive
	}
	res, err := k.cmds.IssueTokenAsMaster(r.Context(), commands.IssueTokenAsMaster{AccountID: p.AccountID, Token: commands.IssueToken{
		ShopID: *body.ShopID, Name: body.Name, Scopes: body.Scopes, Environment: body.Environment,
	}}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	scopes, _ := domain.ParseAdminScopes(body.Scopes) // validated by the command
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Location", "/api/v1/api-keys/"+res.ID)
	w.Header().Set("Cache-Control", "no-store")
	idempotency.SealAnswer(w)
	httpapi.WriteResource(w, r, http.StatusCreated, apiKeyResource(res.ID, *body.ShopID, body.Name, scopes, body.Environment, res.Token, k.now()))
}

// handleAPIKeyRotate gives a token a new secret. A token may rotate itself;
// a token with "*" may rotate any token of its shop; a master token may
// rotate itself and any token of its account's shops. Anything else is not
// found (a token of another shop) or 403 scope_required "*".
func (k *APIKeys) handleAPIKeyRotate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	target, err := k.dir.TokenByID(r.Context(), id)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if err := k.mayRotate(r.Context(), p, target); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := k.cmds.RotateToken(r.Context(), commands.RotateToken{TokenID: id}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	// The old secret fails in this process from now on, before the read
	// model catches up; other servers stop it when their projection does.
	k.auth.Revoke(target.Hash)
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Cache-Control", "no-store")
	idempotency.SealAnswer(w)
	httpapi.WriteResource(w, r, http.StatusOK, apiKeyResource(id, target.ShopID, target.Name, target.Scopes, target.Environment, res.Token, k.now()))
}

func (k *APIKeys) mayRotate(ctx context.Context, p auth.Principal, t *TokenInfo) error {
	switch {
	case p.TokenID == t.ID:
		return nil
	case p.Master:
		if t.Master {
			if t.AccountID == p.AccountID {
				return nil
			}
			return domain.NotFound("token")
		}
		acc, err := k.dir.ShopAccount(ctx, t.ShopID)
		if err != nil || acc != p.AccountID {
			return domain.NotFound("token")
		}
		return nil
	case t.Master || t.ShopID != p.ShopID:
		return domain.NotFound("token")
	case !domain.Grants(p.Scopes, domain.ScopeAll):
		return httpapi.ScopeRequired(string(domain.ScopeAll))
	}
	return nil
}

func apiKeyResource(id, shopID, name string, scopes []domain.Scope, env, token string, now time.Time) httpapi.Resource {
	attrs := map[string]any{
		"shop_id": shopID, "name": name, "scopes": scopes, "environment": env,
		"token": token, "issued_at": now.UTC(),
	}
	if shopID == "" {
		attrs["shop_id"] = nil
	}
	return httpapi.Resource{ID: id, Type: "api_key", Attributes: attrs}
}

func meta(r *http.Request, p auth.Principal) commands.Meta {
	return commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: p.TokenID, Source: "api"}
}
