package auth

import (
	"context"
	"net/http"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// Public-surface headers.
const (
	HeaderPublicKey  = "X-Public-Key"
	HeaderShopDomain = "X-Shop-Domain"
)

// PublicShops is what the public surface looks up.
type PublicShops interface {
	// PublicKeyShop returns the shop of a public key by the key's hex
	// SHA-256 (domain code not_found for an unknown key).
	PublicKeyShop(ctx context.Context, hash string) (string, error)
	// ShopCORS returns a shop by domain with its CORS allow-list (not_found
	// for an unknown domain).
	ShopCORS(ctx context.Context, domain string) (shopID string, allowed []string, err error)
	// OriginAllowed reports whether some shop is on host or allows it.
	OriginAllowed(ctx context.Context, host string) (bool, error)
}

type publicShopKey struct{}

// PublicShopFromContext returns the shop a public request was admitted for.
func PublicShopFromContext(ctx context.Context) (string, bool) {
	s, ok := ctx.Value(publicShopKey{}).(string)
	return s, ok
}

// Public wraps a /api/public/ endpoint. A request is admitted for a shop by
// its public key (X-Public-Key, for headless storefronts), or by the CORS
// allow-list: X-Shop-Domain names the shop and the Origin must be the
// shop's own domain or on its allow-list. Allowed origins get the CORS
// response headers. A wrong key counts as a failed authentication; a
// right one does not reset the address's counters (public keys are in
// every storefront page: only an admin token's success resets them). An
// admitted request honours X-Wait-For-Position; one refused does not wait.
func (a *Authenticator) Public(shops PublicShops, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		shop, err := a.admitPublic(w, r, shops)
		if err == nil {
			err = httpapi.WaitForPosition(r, a.cfg.WaitFor)
		}
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), publicShopKey{}, shop)))
	})
}

func (a *Authenticator) admitPublic(w http.ResponseWriter, r *http.Request, shops PublicShops) (string, error) {
	origin := r.Header.Get("Origin")
	w.Header().Add("Vary", "Origin")
	if raw := r.Header.Get(HeaderPublicKey); raw != "" {
		if _, err := a.guardCheck(r); err != nil {
			return "", err
		}
		if _, ok := domain.ParseCredential(domain.PublicKeyPrefix, raw); !ok {
			return "", a.failed(r, httpapi.InvalidToken())
		}
		hash := domain.HashToken(raw)
		if a.revokedHere(hash) {
			return "", a.failed(r, httpapi.InvalidToken()) // rotated or revoked on this server, not yet projected
		}
		shop, err := FindFresh(r.Context(), a, func() (string, error) { return shops.PublicKeyShop(r.Context(), hash) })
		if domain.ErrorCode(err) == domain.CodeNotFound {
			return "", a.failed(r, httpapi.InvalidToken())
		}
		if err != nil {
			return "", err
		}
		if origin != "" {
			allowOrigin(w, origin) // the key, not the origin, admits the call
		}
		return shop, nil
	}
	d := r.Header.Get(HeaderShopDomain)
	if d == "" {
		return "", httpapi.InvalidParameter(HeaderShopDomain, "send X-Shop-Domain from an allowed origin, or X-Public-Key")
	}
	host := originHost(origin)
	if host == "" {
		return "", originRefused()
	}
	// An origin not (yet) on the list is looked up once more after the
	// tenancy read model caught up, so an origin added an instant ago
	// is admitted on its first request.
	shop, err := FindFresh(r.Context(), a, func() (string, error) {
		s, allowed, err := shops.ShopCORS(r.Context(), d)
		if err != nil {
			return "", err
		}
		if host != domain.NormalizeDomain(d) && !contains(allowed, host) {
			return "", domain.NotFound("allowed origin")
		}
		return s, nil
	})
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return "", originRefused() // do not reveal which shops exist
	}
	if err != nil {
		return "", err
	}
	allowOrigin(w, origin)
	return shop, nil
}

// Preflight answers CORS preflight requests of the public surface: an
// origin that is a shop's domain or on a shop's allow-list may call it.
func (a *Authenticator) Preflight(shops PublicShops, methods string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		host := originHost(origin)
		ok := false
		if host != "" {
			_, err := FindFresh(r.Context(), a, func() (bool, error) {
				allowed, err := shops.OriginAllowed(r.Context(), host)
				if err == nil && !allowed {
					err = domain.NotFound("allowed origin")
				}
				return allowed, err
			})
			if err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
				httpapi.WriteError(w, r, err)
				return
			}
			ok = err == nil
		}
		if !ok {
			httpapi.WriteError(w, r, originRefused())
			return
		}
		allowOrigin(w, origin)
		w.Header().Set("Access-Control-Allow-Methods", methods)
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type, X-Shop-Domain, X-Public-Key")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}

func originRefused() error {
	return &httpapi.Error{Status: http.StatusForbidden, Code: httpapi.CodeForbidden,
		Message: "this origin may not call the shop's public endpoints; use X-Public-Key for headless storefronts"}
}

func allowOrigin(w http.ResponseWriter, origin string) {
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Set("Access-Control-Expose-Headers", "X-Request-Id, X-Event-Position")
}

// originHost returns the lowercased host of an Origin header that may be
// admitted, "" otherwise: the public surface's one origin rule,
// domain.OriginHost (https, a bare host, no port but 443), shared with
// the allow-list's additions.
func originHost(origin string) string { return domain.OriginHost(origin) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
