package ingest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/ingest/shopify"
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

// TriggeredAtWindow is how old a destructive delivery (customers/redact,
// shop/redact, app/uninstalled) may be, by its X-Commerce-Triggered-At:
// the platform retries a delivery for 48 hours, so an older one is a
// replay. A destructive delivery without the header, older than the
// window or more than TriggeredAtSkew in the future is recorded as
// refused and changes nothing.
const TriggeredAtWindow = 48 * time.Hour

// TriggeredAtSkew is how far in the future a destructive delivery's
// X-Commerce-Triggered-At may be (the platform's clock against ours).
const TriggeredAtSkew = 5 * time.Minute

// destructive lists the topics that erase or start erasing data.
var destructive = map[string]bool{
	shopify.TopicCustomersRedact: true,
	shopify.TopicShopRedact:      true,
	shopify.TopicAppUninstalled:  true,
}

// scopesUpdatePath is the receiver of app/scopes_update, and of that topic
// only; every other topic goes to /webhooks/events.
const scopesUpdatePath = "/webhooks/app/scopes_update"

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
	now     func() time.Time
}

// NewCommerce returns the commerce-platform receiver. maxBody <= 0 means
// DefaultMaxBody.
func NewCommerce(shops ShopFinder, rec Recorder, maxBody int64) *Commerce {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &Commerce{shops: shops, rec: rec, maxBody: maxBody, now: time.Now}
}

// WithClock sets the clock the triggered-at window is measured with
// (time.Now by default) and returns c.
func (c *Commerce) WithClock(now func() time.Time) *Commerce {
	c.now = now
	return c
}

// Routes registers POST /webhooks/events (every topic but
// app/scopes_update) and POST /webhooks/app/scopes_update (that topic
// only). A verified delivery whose topic belongs to the other receiver is
// answered 422 validation_failed (details.field X-Commerce-Topic) and
// changes nothing.
func (c *Commerce) Routes(r *mux.Router) {
	r.Handle("/webhooks/events", httpapi.Stable(http.HandlerFunc(c.handleEvents))).Methods(http.MethodPost)
	r.Handle(scopesUpdatePath, httpapi.Stable(http.HandlerFunc(c.handleEvents))).Methods(http.MethodPost)
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
	if onScopesRoute := r.URL.Path == scopesUpdatePath; onScopesRoute != (topic == shopify.TopicAppScopesUpdate) {
		want := "/webhooks/events"
		if topic == shopify.TopicAppScopesUpdate {
			want = scopesUpdatePath
		}
		httpapi.WriteError(w, r, httpapi.ValidationFailed(HeaderTopic, "this receiver does not take the topic of "+HeaderTopic+"; send it to "+want))
		return
	}
	d := Delivery{
		Source: "commerce", ShopID: shop.ID, Topic: topic, DeliveryID: deliveryID,
		EventID:     eventlog.DeterministicID("commerce", shop.ID, deliveryID),
		Body:        body,
		TriggeredAt: ParseTime(r.Header.Get(HeaderTriggeredAt)),
		Meta:        commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "webhook:" + deliveryID, Source: "webhook"},
	}
	shopDomain := domain.NormalizeDomain(r.Header.Get(HeaderShopDomain))
	res, err := Process(r.Context(), c.rec, d, func() (commands.Result, error) {
		if err := c.admit(d, shopDomain); err != nil {
			return commands.Result{}, err
		}
		return c.dispatch(r.Context(), d)
	})
	if err != nil {
		Fail(w, r, err)
		return
	}
	Acknowledge(w, res)
}

// admit decides whether a verified delivery may reach its mapper, since
// the signature covers the body but not the topic header nor the
// triggered-at: the body must have its topic's shape (shopify.CheckShape;
// a validation error, so recorded as unprocessable), name the shop whose
// secret verified it where the topic carries the shop's domain, and, for a
// destructive topic, carry a recent X-Commerce-Triggered-At (Refuse).
func (c *Commerce) admit(d Delivery, shopDomain string) error {
	named, err := shopify.CheckShape(d.Topic, d.Body)
	if err != nil {
		return err
	}
	if named != "" && named != shopDomain {
		return Refuse{Detail: "the body names another shop than the one whose secret verified it"}
	}
	if !destructive[d.Topic] {
		return nil
	}
	now := c.now()
	switch {
	case d.TriggeredAt.IsZero():
		return Refuse{Detail: "destructive topic without a valid " + HeaderTriggeredAt}
	case now.Sub(d.TriggeredAt) > TriggeredAtWindow:
		return Refuse{Detail: fmt.Sprintf("%s older than %v: a replay", HeaderTriggeredAt, TriggeredAtWindow)}
	case d.TriggeredAt.Sub(now) > TriggeredAtSkew:
		return Refuse{Detail: fmt.Sprintf("%s more than %v in the future", HeaderTriggeredAt, TriggeredAtSkew)}
	}
	return nil
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
