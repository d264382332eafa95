package auth

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// Principal is an authenticated admin-token caller.
type Principal struct {
	TokenID string
	ShopID  string
	Scopes  []domain.Scope
}

// Token is what Finder returns for a token hash.
type Token struct {
	ID      string
	ShopID  string
	Hash    string // hex SHA-256 of the raw token
	Scopes  []domain.Scope
	Revoked bool
}

// Finder looks a token up by the hex SHA-256 of its raw value. It returns an
// error with domain code not_found for an unknown hash.
type Finder interface {
	TokenByHash(ctx context.Context, hash string) (*Token, error)
}

type principalKey struct{}

// FromContext returns the authenticated principal of a request.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// WithPrincipal returns ctx carrying p (used by the middleware and tests).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// Authenticator checks bearer tokens.
type Authenticator struct {
	tokens Finder
}

// New returns an authenticator over a token finder.
func New(tokens Finder) *Authenticator { return &Authenticator{tokens: tokens} }

// Authenticate resolves the request's bearer token.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return Principal{}, httpapi.AuthenticationRequired()
	}
	scheme, raw, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, httpapi.InvalidToken()
	}
	raw = strings.TrimSpace(raw)
	if _, ok := domain.ParseAdminToken(raw); !ok {
		return Principal{}, httpapi.InvalidToken()
	}
	hash := domain.HashToken(raw)
	tok, err := a.tokens.TokenByHash(r.Context(), hash)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return Principal{}, httpapi.InvalidToken()
	}
	if err != nil {
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(tok.Hash), []byte(hash)) != 1 || tok.Revoked {
		return Principal{}, httpapi.InvalidToken()
	}
	return Principal{TokenID: tok.ID, ShopID: tok.ShopID, Scopes: tok.Scopes}, nil
}

// Require wraps next so that it runs only for a caller whose token grants
// scope ("" means any valid token).
func (a *Authenticator) Require(scope domain.Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r)
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		if scope != "" && !domain.Grants(p.Scopes, scope) {
			httpapi.WriteError(w, r, httpapi.ScopeRequired(string(scope)))
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}
