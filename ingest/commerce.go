package ingest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
)

// Commerce-platform webhook headers (DESIGN.md §7).
const (
	HeaderHMAC        = "X-Commerce-Hmac-Sha256"
	HeaderWebhookID   = "X-Commerce-Webhook-Id"
	HeaderTopic       = "X-Commerce-Topic"
	HeaderShopDomain  = "X-Commerce-Shop-Domain"
	HeaderTriggeredAt = "X-Commerce-Triggered-At"
)

// DefaultMaxBody is the largest webhook body accepted (413 above it).
const DefaultMaxBody = 1 << 20

// ShopFinder finds the shop a delivery is for, by its domain.
type ShopFinder interface {
	// ShopByDomain returns the shop or an error whose domain code is
	// not_found.
	ShopByDomain(ctx context.Context, domain string) (*Shop, error)
}

// Shop is what the receiver needs of a shop.
type Shop struct {
	ID            string
	WebhookSecret string
}

// Commerce receives the commerce platform's webhooks.
type Commerce struct {
	shops   ShopFinder
	rec     Recorder
	maxBody int64
}

// NewCommerce returns the commerce-platform receiver. maxBody <= 0 means
// DefaultMaxBody.
func NewCommerce(shops ShopFinder, rec Recorder, maxBody int64) *Commerce {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &Commerce{shops: shops, rec: rec, maxBody: maxBody}
}

// Routes registers POST /webhooks/events (every topic but
// app/scopes_update) and POST /webhooks/app/scopes_update. Both verify and
// process whatever topic the delivery names: a topic at the wrong receiver
// is processed and logged, never lost.
func (c *Commerce) Routes(r *mux.Router) {
	r.Handle("/webhooks/events", httpapi.Stable(http.HandlerFunc(c.handleEvents))).Methods(http.MethodPost)
	r.Handle("/webhooks/app/scopes_update", httpapi.Stable(http.HandlerFunc(c.handleEvents))).Methods(http.MethodPost)
}

func (c *Commerce) handleEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := ReadBody(w, r, c.maxBody)
	if !ok {
		return
	}
	sig := r.Header.Get(HeaderHMAC)
	if sig == "" {
		httpapi.WriteError(w, r, signatureRequired(r.Header))
		return
	}
	deliveryID := r.Header.Get(HeaderWebhookID)
	topic := r.Header.Get(HeaderTopic)
	httpapi.AddLogFields(r.Context(), "topic", clipLog(topic), "delivery_id", clipLog(deliveryID))
	if deliveryID == "" || len(deliveryID) > 200 {
		httpapi.WriteError(w, r, httpapi.InvalidParameter(HeaderWebhookID, "header "+HeaderWebhookID+" is required (at most 200 characters)"))
		return
	}
	if topic == "" || len(topic) > 100 {
		httpapi.WriteError(w, r, httpapi.InvalidParameter(HeaderTopic, "header "+HeaderTopic+" is required (at most 100 characters)"))
		return
	}
	shop, err := c.shops.ShopByDomain(r.Context(), r.Header.Get(HeaderShopDomain))
	if err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
		Fail(w, r, err)
		return
	}
	// An unknown shop and a wrong signature get the same answer, so the
	// endpoint does not reveal which shops exist.
	if shop == nil || !VerifyCommerce([]byte(shop.WebhookSecret), body, sig) {
		httpapi.WriteError(w, r, invalidSignature(r.Header, sig))
		return
	}
	if onScopesRoute := r.URL.Path == "/webhooks/app/scopes_update"; onScopesRoute != (topic == "app/scopes_update") {
		httpapi.Logger(r.Context()).Warn().Str("topic", topic).Str("route", r.URL.Path).
			Msg("commerce webhook delivered to the other receiver; processed anyway")
	}
	d := Delivery{
		Source: "commerce", ShopID: shop.ID, Topic: topic,
		EventID:     eventlog.DeterministicID("commerce", shop.ID, deliveryID),
		Body:        body,
		TriggeredAt: ParseTime(r.Header.Get(HeaderTriggeredAt)),
		Meta:        commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "webhook:" + deliveryID, Source: "webhook"},
	}
	res, err := Process(r.Context(), c.rec, d, func() (commands.Result, error) { return c.dispatch(r.Context(), d) })
	if err != nil {
		Fail(w, r, err)
		return
	}
	Acknowledge(w, res)
}

// dispatch maps a verified delivery to its command.
func (c *Commerce) dispatch(ctx context.Context, d Delivery) (commands.Result, error) {
	m, ok := topicMappers[d.Topic]
	if !ok {
		return commands.Result{}, ErrUnhandled
	}
	return m(ctx, c.rec, d)
}

// VerifyCommerce reports whether sig is the base64 HMAC-SHA256 of body
// keyed with secret, compared in constant time.
func VerifyCommerce(secret, body []byte, sig string) bool {
	got, err := base64.StdEncoding.Strict().DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got)
}

// SignCommerce returns the signature the platform sends for body.
func SignCommerce(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
