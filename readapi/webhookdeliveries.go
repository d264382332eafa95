package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/webhooks"
)

// WebhookDeliveries serves a webhook subscription's attempt log from the
// delivery store.
type WebhookDeliveries struct {
	svc     *webhooks.Service
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
}

// NewWebhookDeliveries returns the delivery reads.
func NewWebhookDeliveries(svc *webhooks.Service, a *auth.Authenticator, cursors *httpapi.CursorCodec) *WebhookDeliveries {
	return &WebhookDeliveries{svc: svc, auth: a, cursors: cursors}
}

// Routes registers the delivery reads.
func (d *WebhookDeliveries) Routes(r *mux.Router) {
	r.Handle("/api/v1/webhook-subscriptions/{id}/deliveries", httpapi.Beta(httpapi.Compressed(d.auth.Require(domain.ScopeWebhooksRead,
		http.HandlerFunc(d.handleList))))).Methods(http.MethodGet)
}

// DeliveryListSpec is the allow-list of a subscription's delivery list;
// created_at sorts in log order.
func DeliveryListSpec(subscriptionID string) httpapi.ListSpec {
	return httpapi.ListSpec{
		Resource: "webhook_deliveries:" + subscriptionID,
		Filters: map[string]httpapi.FilterKind{"state": httpapi.EnumFilter(webhooks.StatePending, webhooks.StateSucceeded,
			webhooks.StateFailed, webhooks.StateHeld)},
		Sorts:       []string{"created_at"},
		DefaultSort: "-created_at",
	}
}

func (d *WebhookDeliveries) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeKeyset(w, r, d.cursors, d.svc, webhooks.FanoutName, DeliveryListSpec(id), func(params httpapi.ListParams, after *webhooks.Key) ([]httpapi.Resource, *webhooks.Key, error) {
		if err := KnownSubscription(r.Context(), d.svc, p.ShopID, id); err != nil {
			return nil, nil, err
		}
		rows, next, err := d.svc.Queries.Deliveries(r.Context(), webhooks.ListQuery{Shop: p.ShopID, Subscription: id,
			State: params.Filters["state"], Desc: params.Sort.Desc, After: after, Limit: params.Limit})
		items := make([]httpapi.Resource, len(rows))
		for i := range rows {
			items[i] = DeliveryResource(&rows[i])
		}
		return items, next, err
	})
}

// KnownSubscription is nil when the delivery side knows subscription id
// of shop, not found otherwise (another shop's subscription too).
func KnownSubscription(ctx context.Context, svc *webhooks.Service, shop, id string) error {
	ok, err := svc.Knows(ctx, shop, id)
	if err != nil {
		return err
	}
	if !ok {
		return domain.NotFound("webhook subscription")
	}
	return nil
}

// DeliveryAttempt is one attempt in a delivery's attributes.
type DeliveryAttempt struct {
	Attempt       int        `json:"attempt"`
	At            time.Time  `json:"at"`
	Status        *int       `json:"response_status"`
	Reason        *string    `json:"failure_reason"`
	LatencyMS     int64      `json:"latency_ms"`
	ResponseBody  string     `json:"response_body"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
}

// DeliveryAttributes are a delivery's attributes in the admin API.
type DeliveryAttributes struct {
	SubscriptionID string            `json:"subscription_id"`
	EventID        string            `json:"event_id"`
	EventType      string            `json:"event_type"`
	State          string            `json:"state"`
	AttemptCount   int               `json:"attempt_count"`
	CreatedAt      time.Time         `json:"created_at"`
	NextAttemptAt  *time.Time        `json:"next_attempt_at"`
	LastAttemptAt  *time.Time        `json:"last_attempt_at"`
	LastStatus     *int              `json:"last_response_status"`
	LastReason     *string           `json:"last_failure_reason"`
	SucceededAt    *time.Time        `json:"succeeded_at"`
	Attempts       []DeliveryAttempt `json:"attempts"`
}

// DeliveryResource renders a delivery.
func DeliveryResource(d *webhooks.Delivery) httpapi.Resource {
	a := DeliveryAttributes{SubscriptionID: d.SubscriptionID, EventID: d.EventID, EventType: d.EventType, State: d.State,
		AttemptCount: d.Attempts, CreatedAt: d.CreatedAt, NextAttemptAt: timeOrNil(d.NextAttemptAt),
		LastAttemptAt: timeOrNil(d.LastAttemptAt), SucceededAt: timeOrNil(d.SucceededAt), Attempts: make([]DeliveryAttempt, len(d.Log))}
	if d.Attempts > 0 {
		a.LastStatus, a.LastReason = statusOrNil(d.LastStatus), stringOrNil(d.LastReason)
	}
	for i, at := range d.Log {
		a.Attempts[i] = DeliveryAttempt{Attempt: at.N, At: at.At, Status: statusOrNil(at.Status), Reason: stringOrNil(at.Reason),
			LatencyMS: at.LatencyMS, ResponseBody: at.ResponseBody, NextAttemptAt: timeOrNil(at.NextAttemptAt)}
	}
	return httpapi.Resource{ID: d.ID, Type: "webhook_delivery", Attributes: a}
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func statusOrNil(s int) *int {
	if s == 0 {
		return nil
	}
	return &s
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
