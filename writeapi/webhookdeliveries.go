package writeapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/webhooks"
)

// PingWait bounds how long POST …/test waits for the ping's attempt
// before answering 202 with the delivery still pending.
const PingWait = 20 * time.Second

// WebhookDeliveries serves the merchant's actions on deliveries: retry
// one, recover every failed or undelivered one since a time, send a test.
type WebhookDeliveries struct {
	cmds *commands.Handler
	svc  *webhooks.Service
	auth *auth.Authenticator
	idem func(http.Handler) http.Handler
	now  func() time.Time
}

// NewWebhookDeliveries returns the delivery actions.
func NewWebhookDeliveries(cmds *commands.Handler, svc *webhooks.Service, a *auth.Authenticator, idem func(http.Handler) http.Handler,
	now func() time.Time) *WebhookDeliveries {
	return &WebhookDeliveries{cmds: cmds, svc: svc, auth: a, idem: idem, now: now}
}

// Routes registers the delivery actions.
func (d *WebhookDeliveries) Routes(r *mux.Router) {
	for path, h := range map[string]http.HandlerFunc{
		"/api/v1/webhook-subscriptions/{id}/deliveries/{delivery_id}/retry": d.handleRetry,
		"/api/v1/webhook-subscriptions/{id}/recover":                        d.handleRecover,
		"/api/v1/webhook-subscriptions/{id}/test":                           d.handleTest,
	} {
		r.Handle(path, httpapi.Beta(d.auth.Require(domain.ScopeWebhooksWrite, d.idem(h)))).Methods(http.MethodPost)
	}
}

func (d *WebhookDeliveries) handleRetry(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id, deliveryID := mux.Vars(r)["id"], mux.Vars(r)["delivery_id"]
	if err := readapi.KnownSubscription(r.Context(), d.svc, p.ShopID, id); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if _, err := d.svc.Queries.Delivery(r.Context(), p.ShopID, id, deliveryID); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := d.cmds.RedeliverWebhooks(r.Context(), commands.RedeliverWebhooks{ShopID: p.ShopID, SubscriptionID: id,
		DeliveryID: deliveryID}, meta(r, p))
	if err == nil {
		err = d.svc.WaitFor(r.Context(), res.Position)
	}
	var dl *webhooks.Delivery
	if err == nil {
		dl, err = d.svc.Queries.Delivery(r.Context(), p.ShopID, id, deliveryID)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusAccepted, readapi.DeliveryResource(dl))
}

type recoverBody struct {
	Since *time.Time `json:"since"`
}

func (d *WebhookDeliveries) handleRecover(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	var body recoverBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.Since == nil {
		httpapi.WriteError(w, r, httpapi.ValidationFailed("since", "since is required: an RFC 3339 time, e.g. 2026-11-27T00:00:00Z"))
		return
	}
	res, err := d.cmds.RedeliverWebhooks(r.Context(), commands.RedeliverWebhooks{ShopID: p.ShopID, SubscriptionID: id,
		Since: *body.Since}, meta(r, p))
	if err == nil {
		err = d.svc.WaitFor(r.Context(), res.Position)
	}
	queued := 0
	if err == nil {
		queued, err = d.svc.Queries.Pending(r.Context(), id, *body.Since)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusAccepted, httpapi.Resource{ID: id, Type: "webhook_recovery", Attributes: map[string]any{
		"subscription_id": id, "since": body.Since.UTC(), "queued": queued}})
}

// handleTest records a ping for the subscription and waits (PingWait at
// most) for its attempt: 200 with the attempted delivery, or 202 with it
// still pending.
func (d *WebhookDeliveries) handleTest(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	res, err := d.cmds.PingWebhookSubscription(r.Context(), commands.PingWebhookSubscription{ShopID: p.ShopID, SubscriptionID: id}, meta(r, p))
	if err == nil {
		err = d.svc.WaitFor(r.Context(), res.Position)
	}
	var dl *webhooks.Delivery
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), PingWait)
		werr := d.svc.WaitAttempted(ctx, func() (bool, error) {
			var err error
			dl, err = d.svc.Queries.DeliveryOfEvent(r.Context(), p.ShopID, id, res.ID)
			return dl != nil && dl.Attempts > 0, err
		})
		cancel()
		if werr != nil && r.Context().Err() == nil && ctx.Err() == nil {
			err = werr
		}
		if err == nil && dl == nil {
			dl, err = d.svc.Queries.DeliveryOfEvent(r.Context(), p.ShopID, id, res.ID)
		}
		if err == nil && dl == nil {
			err = fmt.Errorf("ping %s: the fan-out reached it and recorded no delivery", res.ID)
		}
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	status := http.StatusOK
	if dl.Attempts == 0 {
		status = http.StatusAccepted
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, status, readapi.DeliveryResource(dl))
}
