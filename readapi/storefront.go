package readapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// Storefront serves the reads of the shop's storefront access settings
// (issue 20, point 4): its CORS allow-list and its public keys. Both are
// settings of the shop, read and changed with the shop settings' scope
// (ScopeShopSettings).
type Storefront struct {
	q    *tenancy.Queries
	auth *auth.Authenticator
	wait Waiter
}

// NewStorefront returns the storefront settings' read handler, over the
// tenancy read model.
func NewStorefront(q *tenancy.Queries, a *auth.Authenticator, wait Waiter) *Storefront {
	return &Storefront{q: q, auth: a, wait: wait}
}

// Routes registers GET /api/v1/shop/allowed-origins and GET
// /api/v1/public-keys (beta).
func (s *Storefront) Routes(r *mux.Router) {
	read := func(h http.HandlerFunc) http.Handler { return httpapi.Beta(s.auth.Require(ScopeShopSettings, h)) }
	r.Handle("/api/v1/shop/allowed-origins", read(s.handleOrigins)).Methods(http.MethodGet)
	r.Handle("/api/v1/public-keys", read(s.handlePublicKeys)).Methods(http.MethodGet)
}

// handleOrigins lists the allow-list in the order the origins were added
// (one page: it holds at most domain.MaxAllowedOrigins).
func (s *Storefront) handleOrigins(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	if err := WaitForPosition(r, s.wait, tenancy.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	hosts, err := s.q.AllowedOrigins(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	items := make([]httpapi.Resource, len(hosts))
	for i, h := range hosts {
		items[i] = AllowedOriginResource(h)
	}
	httpapi.WriteList(w, r, items, httpapi.Page{})
}

// handlePublicKeys lists the shop's public keys, revoked ones too, oldest
// first (one page): never a key itself.
func (s *Storefront) handlePublicKeys(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	if err := WaitForPosition(r, s.wait, tenancy.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	keys, err := s.q.PublicKeys(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	items := make([]httpapi.Resource, len(keys))
	for i, k := range keys {
		items[i] = PublicKeyResource(PublicKeyView{ID: k.ID, Environment: k.Environment, Last4: k.Last4,
			CreatedAt: k.CreatedAt, RotatedAt: k.RotatedAt, RevokedAt: k.RevokedAt}, "")
	}
	httpapi.WriteList(w, r, items, httpapi.Page{})
}

// AllowedOriginAttributes are an allowed origin's attributes: the origin
// as a browser sends it and its host (the resource's id).
type AllowedOriginAttributes struct {
	Origin string `json:"origin"`
	Host   string `json:"host"`
}

// AllowedOriginResource renders an allowed origin (by its host).
func AllowedOriginResource(host string) httpapi.Resource {
	return httpapi.Resource{ID: host, Type: "allowed_origin", Attributes: AllowedOriginAttributes{Origin: "https://" + host, Host: host}}
}

// PublicKeyView is a public key as the API shows it.
type PublicKeyView struct {
	ID, Environment, Last4          string
	CreatedAt, RotatedAt, RevokedAt time.Time // zero: not rotated, not revoked
}

// PublicKeyAttributes are a public key's attributes. Token is set only in
// the answers of a creation and a rotation: it is never shown again.
type PublicKeyAttributes struct {
	Environment string     `json:"environment"`
	Status      string     `json:"status"`
	Last4       *string    `json:"last4"`
	CreatedAt   time.Time  `json:"created_at"`
	RotatedAt   *time.Time `json:"rotated_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	Token       string     `json:"token,omitempty"`
}

// PublicKeyResource renders a public key; token is shown when not empty
// (creation and rotation only).
func PublicKeyResource(k PublicKeyView, token string) httpapi.Resource {
	status := "active"
	if !k.RevokedAt.IsZero() {
		status = "revoked"
	}
	return httpapi.Resource{ID: k.ID, Type: "public_key", Attributes: PublicKeyAttributes{Environment: k.Environment, Status: status,
		Last4: optional(k.Last4), CreatedAt: k.CreatedAt.UTC(), RotatedAt: zeroTimeAsNull(k.RotatedAt.UTC()),
		RevokedAt: zeroTimeAsNull(k.RevokedAt.UTC()), Token: token}}
}
