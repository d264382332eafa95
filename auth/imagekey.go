package auth

import (
	"context"
	"crypto/subtle"
	"net/http"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// HeaderAPIKey carries an image-operations API key.
const HeaderAPIKey = "X-API-Key"

// ImageKey is what ImageKeyFinder returns for a key hash.
type ImageKey struct {
	ID     string
	ShopID string
	Hash   string
	Scopes domain.ImageScopes
	Plan   domain.Plan
}

// ImageKeyFinder looks an image-API key up by the hex SHA-256 of its raw
// value (domain code not_found for an unknown one).
type ImageKeyFinder interface {
	ImageKeyByHash(ctx context.Context, hash string) (*ImageKey, error)
}

// ImageKeyPrincipal is an authenticated image-API caller.
type ImageKeyPrincipal struct {
	KeyID  string
	ShopID string
	Scopes domain.ImageScopes
}

type imageKeyContext struct{}

// ImageKeyFromContext returns the image-API caller of a request.
func ImageKeyFromContext(ctx context.Context) (ImageKeyPrincipal, bool) {
	p, ok := ctx.Value(imageKeyContext{}).(ImageKeyPrincipal)
	return p, ok
}

// authenticateImageKey resolves X-API-Key, with the brute-force guard.
// A success does not reset the address's brute-force counters: only an
// admin token's does (see Authenticate).
func (a *Authenticator) authenticateImageKey(r *http.Request, keys ImageKeyFinder) (ImageKeyPrincipal, error) {
	if _, err := a.guardCheck(r); err != nil {
		return ImageKeyPrincipal{}, err
	}
	raw := r.Header.Get(HeaderAPIKey)
	if _, ok := domain.ParseCredential(domain.ImageKeyPrefix, raw); !ok && len(raw) != 0 {
		// Keys imported from the system before scopes may have any shape;
		// they are looked up by hash like the others, within reason.
		if len(raw) > 256 {
			return ImageKeyPrincipal{}, a.failed(r, httpapi.InvalidToken())
		}
	}
	hash := domain.HashToken(raw)
	k, err := FindFresh(r.Context(), a, func() (*ImageKey, error) { return keys.ImageKeyByHash(r.Context(), hash) })
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return ImageKeyPrincipal{}, a.failed(r, httpapi.InvalidToken())
	}
	if err != nil {
		return ImageKeyPrincipal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 || a.revokedHere(hash) {
		return ImageKeyPrincipal{}, a.failed(r, httpapi.InvalidToken())
	}
	return ImageKeyPrincipal{KeyID: k.ID, ShopID: k.ShopID, Scopes: k.Scopes}, nil
}

// RequireImageKeyOrToken wraps next for an endpoint reachable with an
// image-API key holding scope (X-API-Key) or with any valid admin token of
// a shop (Authorization: Bearer). The check of the key is an exact match
// against its stored scopes (no implication); a key without the scope gets
// 403 naming it. The handler finds the caller with FromContext or
// ImageKeyFromContext.
func (a *Authenticator) RequireImageKeyOrToken(keys ImageKeyFinder, scope domain.Scope, next http.Handler) http.Handler {
	viaToken := a.Require("", next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderAPIKey) == "" {
			viaToken.ServeHTTP(w, r)
			return
		}
		a.serveImageKey(w, r, keys, scope, next)
	})
}

// RequireImageKey wraps next for an endpoint of the image-operations API
// proper: only an image-API key holding scope (X-API-Key) is accepted,
// checked as RequireImageKeyOrToken checks it; a request without the
// header is 401 authentication_required.
func (a *Authenticator) RequireImageKey(keys ImageKeyFinder, scope domain.Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderAPIKey) == "" {
			e := httpapi.AuthenticationRequired()
			e.Message = "send the shop's image-API key in the " + HeaderAPIKey + " header"
			httpapi.WriteError(w, r, e)
			return
		}
		a.serveImageKey(w, r, keys, scope, next)
	})
}

// serveImageKey authenticates X-API-Key, checks scope and serves next
// with the key's principal.
func (a *Authenticator) serveImageKey(w http.ResponseWriter, r *http.Request, keys ImageKeyFinder, scope domain.Scope, next http.Handler) {
	p, err := a.authenticateImageKey(r, keys)
	if err == nil && !p.Scopes.Allows(scope) {
		err = &httpapi.Error{Status: http.StatusForbidden, Code: httpapi.CodeScopeRequired,
			Message: "this API key lacks the scope " + string(scope),
			Details: map[string]any{"required_scope": string(scope)}}
	}
	if err == nil {
		err = a.settle(r, p.KeyID)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	next.ServeHTTP(a.recordWrites(w, p.KeyID), r.WithContext(context.WithValue(r.Context(), imageKeyContext{}, p)))
}
