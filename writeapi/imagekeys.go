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

// ImageKeyListing is one image-API key of a shop in the key list: its
// stored scope state, never its secret nor its hash.
type ImageKeyListing struct {
	ID        string
	Scopes    domain.ImageScopes
	Imported  bool
	CreatedAt time.Time
	RevokedAt time.Time // zero: active
}

// ImageKeyLister lists a shop's image-API keys, the newest first.
type ImageKeyLister interface {
	ShopImageKeys(ctx context.Context, shopID string) ([]ImageKeyListing, error)
}

// ImageKeys serves the image-operations API keys of a shop under
// /api/v1/image-keys: the list, the mint (specification, image-API
// scopes, rule 6) and the revocation. Each needs a shop token (or an
// admin session) with "*": a key is a credential of the shop.
type ImageKeys struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	list ImageKeyLister
	now  func() time.Time
}

// NewImageKeys returns the image-key handlers.
func NewImageKeys(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, list ImageKeyLister, now func() time.Time) *ImageKeys {
	return &ImageKeys{cmds: cmds, auth: a, idem: idem, list: list, now: now}
}

// Routes registers GET and POST /api/v1/image-keys (beta).
func (k *ImageKeys) Routes(r *mux.Router) {
	r.Handle("/api/v1/image-keys", httpapi.Beta(k.auth.Require(domain.ScopeAll, http.HandlerFunc(k.handleImageKeyList)))).Methods(http.MethodGet)
	r.Handle("/api/v1/image-keys", httpapi.Beta(k.auth.Require(domain.ScopeAll, k.idem(http.HandlerFunc(k.handleImageKeyMint))))).Methods(http.MethodPost)
	r.Handle("/api/v1/image-keys/{id}", httpapi.Beta(k.auth.Require(domain.ScopeAll, k.idem(http.HandlerFunc(k.handleImageKeyRevoke))))).Methods(http.MethodDelete)
}

// handleImageKeyRevoke stops a key of the shop for good (204; a revoked
// key again is also 204). It fails in this process at once, on the other
// servers when their read model has the revocation.
func (k *ImageKeys) handleImageKeyRevoke(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	res, err := k.cmds.RevokeImageKey(r.Context(), commands.RevokeImageKey{ShopID: p.ShopID, KeyID: mux.Vars(r)["id"]}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if res.Hash != "" {
		k.auth.Revoke(res.Hash)
	}
	if res.Position > 0 {
		w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(uint64(res.Position), 10))
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleImageKeyList lists the shop's image-API keys with their stored
// scopes: null and scopes_recorded false for a key of the system before
// scopes (unrestricted), [] for an inert key.
func (k *ImageKeys) handleImageKeyList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	keys, err := k.list.ShopImageKeys(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	out := make([]httpapi.Resource, 0, len(keys))
	for _, key := range keys {
		out = append(out, httpapi.Resource{ID: key.ID, Type: "image_key", Attributes: map[string]any{
			"shop_id": p.ShopID, "scopes": key.Scopes, "scopes_recorded": key.Scopes.Recorded,
			"imported": key.Imported, "created_at": key.CreatedAt, "revoked_at": timeOrNil(key.RevokedAt)}})
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteList(w, r, out, httpapi.Page{})
}

type imageKeyMint struct {
	// Scopes absent or null: the read-only default; [] an inert key.
	Scopes []string `json:"scopes"`
}

// handleImageKeyMint mints a key: 201 with the raw key in
// data.attributes.token, shown once, and a warning when a scope lets the
// key spend the shop's AI credits. An unknown scope is 422 (field
// scopes).
func (k *ImageKeys) handleImageKeyMint(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body imageKeyMint
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := k.cmds.MintImageKey(r.Context(), commands.MintImageKey{ShopID: p.ShopID, Scopes: body.Scopes}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	var warning any
	for _, s := range res.Scopes {
		if domain.ImageScopeMutating(s) {
			warning = "scope " + string(s) + " lets this key run image operations that spend the shop's AI credits"
			break
		}
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Cache-Control", "no-store")
	idempotency.SealAnswer(w)
	httpapi.WriteResource(w, r, http.StatusCreated, httpapi.Resource{ID: res.ID, Type: "image_key", Attributes: map[string]any{
		"shop_id": p.ShopID, "scopes": res.Scopes, "scopes_recorded": true, "imported": false,
		"created_at": k.now().UTC(), "token": res.Token, "warning": warning}})
}
