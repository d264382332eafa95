package writeapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/readapi"
)

// Storefront serves the changes of the shop's storefront access settings
// (issue 20, point 4): origins added to and removed from the CORS
// allow-list, public keys created, rotated and revoked. Every change is
// an event; the scope is the shop settings' (readapi.ScopeShopSettings).
type Storefront struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	now  func() time.Time
}

// NewStorefront returns the storefront settings' write handler.
func NewStorefront(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, now func() time.Time) *Storefront {
	return &Storefront{cmds: cmds, auth: a, idem: idem, now: now}
}

// Routes registers the writes (beta).
func (s *Storefront) Routes(r *mux.Router) {
	write := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(s.auth.Require(readapi.ScopeShopSettings, s.idem(h)))
	}
	r.Handle("/api/v1/shop/allowed-origins", write(s.handleOriginAdd)).Methods(http.MethodPost)
	r.Handle("/api/v1/shop/allowed-origins/{host}", write(s.handleOriginRemove)).Methods(http.MethodDelete)
	r.Handle("/api/v1/public-keys", write(s.handlePublicKeyCreate)).Methods(http.MethodPost)
	r.Handle("/api/v1/public-keys/{id}/rotate", write(s.handlePublicKeyRotate)).Methods(http.MethodPost)
	r.Handle("/api/v1/public-keys/{id}", write(s.handlePublicKeyRevoke)).Methods(http.MethodDelete)
}

type originBody struct {
	Origin *string `json:"origin"`
}

// handleOriginAdd adds an origin: 201 when the list changed, 200 when the
// origin was already on it; 422 (field origin) for an origin the public
// surface would never admit.
func (s *Storefront) handleOriginAdd(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body originBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.Origin == nil || *body.Origin == "" {
		httpapi.WriteError(w, r, httpapi.ValidationFailed("origin", "origin is required, such as https://shop.example.com"))
		return
	}
	res, err := s.cmds.AllowOrigin(r.Context(), commands.AllowOrigin{ShopID: p.ShopID, Origin: *body.Origin}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Changed {
		status = http.StatusCreated
		w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	}
	w.Header().Set("Location", "/api/v1/shop/allowed-origins/"+res.Host)
	httpapi.WriteResource(w, r, status, readapi.AllowedOriginResource(res.Host))
}

// handleOriginRemove takes an origin off the list by its host: 204; one
// not on the list is not found.
func (s *Storefront) handleOriginRemove(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	res, err := s.cmds.RemoveOrigin(r.Context(), commands.RemoveOrigin{ShopID: p.ShopID, Origin: mux.Vars(r)["host"]}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	w.WriteHeader(http.StatusNoContent)
}

type publicKeyBody struct {
	Environment string `json:"environment"`
}

// handlePublicKeyCreate creates a public key: 201 with the key in
// data.attributes.token, shown once.
func (s *Storefront) handlePublicKeyCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body publicKeyBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.Environment == "" {
		body.Environment = domain.EnvLive
	}
	res, err := s.cmds.IssuePublicKey(r.Context(), commands.IssuePublicKey{ShopID: p.ShopID, Environment: body.Environment}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Location", "/api/v1/public-keys/"+res.ID)
	w.Header().Set("Cache-Control", "no-store")
	idempotency.SealAnswer(w)
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.PublicKeyResource(readapi.PublicKeyView{ID: res.ID, Environment: body.Environment,
		Last4: domain.CredentialLast4(res.Token), CreatedAt: s.now()}, res.Token))
}

// handlePublicKeyRotate gives a key a new secret, in
// data.attributes.token, shown once. The old secret fails from the
// commit on (at once on this server; other servers when their tenancy
// read model reaches the rotation). A revoked key is a conflict (409).
func (s *Storefront) handlePublicKeyRotate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	res, err := s.cmds.RotatePublicKey(r.Context(), commands.RotatePublicKey{ShopID: p.ShopID, KeyID: mux.Vars(r)["id"]}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	s.auth.Revoke(res.OldHash)
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Cache-Control", "no-store")
	idempotency.SealAnswer(w)
	httpapi.WriteResource(w, r, http.StatusOK, readapi.PublicKeyResource(publicKeyView(res.Key), res.Token))
}

// handlePublicKeyRevoke revokes a key for good: 200 with the key, now
// revoked (it stays listed). Revoking twice changes nothing.
func (s *Storefront) handlePublicKeyRevoke(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	res, err := s.cmds.RevokePublicKey(r.Context(), commands.RevokePublicKey{ShopID: p.ShopID, KeyID: mux.Vars(r)["id"]}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	s.auth.Revoke(res.OldHash)
	if res.Position > 0 {
		w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	}
	httpapi.WriteResource(w, r, http.StatusOK, readapi.PublicKeyResource(publicKeyView(res.Key), ""))
}

func publicKeyView(k domain.PublicKey) readapi.PublicKeyView {
	return readapi.PublicKeyView{ID: k.ID, Environment: k.Environment, Last4: k.Last4, CreatedAt: k.CreatedAt,
		RotatedAt: k.RotatedAt, RevokedAt: k.RevokedAt}
}
