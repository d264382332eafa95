package ingest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// maxPixelBody bounds a storefront pixel request.
const maxPixelBody = 16 << 10

// Pixel receives the storefront pixel: POST /api/public/events.
type Pixel struct {
	auth  *auth.Authenticator
	shops auth.PublicShops
	cmds  *commands.Handler
}

// NewPixel returns the storefront pixel receiver.
func NewPixel(a *auth.Authenticator, shops auth.PublicShops, cmds *commands.Handler) *Pixel {
	return &Pixel{auth: a, shops: shops, cmds: cmds}
}

// Routes registers the pixel and its CORS preflight.
func (p *Pixel) Routes(r *mux.Router) {
	r.Handle("/api/public/events", httpapi.Beta(p.auth.Public(p.shops, http.HandlerFunc(p.handlePixelEvent)))).Methods(http.MethodPost)
	r.Handle("/api/public/events", httpapi.Beta(p.auth.Preflight(p.shops, "POST"))).Methods(http.MethodOptions)
}

type pixelEvent struct {
	Type        string    `json:"type"`
	URL         string    `json:"url"`
	Referrer    string    `json:"referrer"`
	AnonymousID string    `json:"anonymous_id"`
	OccurredAt  time.Time `json:"occurred_at"`
	// Identity links, all optional: the logged-in customer's platform id
	// and the tokens of the visitor's cart and checkout.
	CustomerID    string `json:"customer_id"`
	CartToken     string `json:"cart_token"`
	CheckoutToken string `json:"checkout_token"`
}

func (p *Pixel) handlePixelEvent(w http.ResponseWriter, r *http.Request) {
	shop, _ := auth.PublicShopFromContext(r.Context())
	var body pixelEvent
	if err := httpapi.DecodeData(w, r, maxPixelBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := p.cmds.RecordStorefrontEvent(r.Context(), commands.RecordStorefrontEvent{ShopID: shop, Event: domain.StorefrontEvent{
		Type: body.Type, URL: body.URL, Referrer: body.Referrer, AnonymousID: body.AnonymousID, OccurredAt: body.OccurredAt,
		CustomerID: body.CustomerID, CartToken: body.CartToken, CheckoutToken: body.CheckoutToken,
	}}, commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "storefront", Source: "api"})
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusAccepted, httpapi.Resource{ID: res.ID, Type: "storefront_event",
		Attributes: map[string]any{"shop_id": shop, "type": body.Type}})
}
