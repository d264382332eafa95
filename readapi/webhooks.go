package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/webhooksubs"
)

// WebhookCatalogueVersion dates the outbound event catalogue of
// GET /api/v1/webhook-event-types (meta.catalogue_version): it changes
// whenever a type is added or a type's version changes.
const WebhookCatalogueVersion = "2026-11-27"

// Webhooks serves the webhook subscription reads and the event-type
// catalogue, from the webhook subscriptions read model.
type Webhooks struct {
	q       *webhooksubs.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewWebhooks returns the webhook subscription read handlers.
func NewWebhooks(q *webhooksubs.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Webhooks {
	return &Webhooks{q: q, auth: a, cursors: cursors, wait: wait}
}

// WebhookSubscriptionListSpec is the allow-list of the subscription list:
// created_at sorts in log order (the order they were created).
var WebhookSubscriptionListSpec = httpapi.ListSpec{
	Resource:    "webhook_subscriptions",
	Sorts:       []string{"created_at"},
	DefaultSort: "-created_at",
}

// Routes registers the reads (beta).
func (wh *Webhooks) Routes(r *mux.Router) {
	read := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(httpapi.Compressed(wh.auth.Require(domain.ScopeWebhooksRead, h)))
	}
	r.Handle("/api/v1/webhook-subscriptions", read(wh.handleList)).Methods(http.MethodGet)
	r.Handle("/api/v1/webhook-subscriptions/{id}", read(wh.handleGet)).Methods(http.MethodGet)
	r.Handle("/api/v1/webhook-event-types", read(wh.handleEventTypes)).Methods(http.MethodGet)
}

func (wh *Webhooks) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, wh.cursors, wh.wait, webhooksubs.Name, WebhookSubscriptionListSpec,
		func(params httpapi.ListParams, after *webhooksubs.Key) ([]httpapi.Resource, *webhooksubs.Key, error) {
			rows, next, err := wh.q.Subscriptions(r.Context(), webhooksubs.ListQuery{Shop: p.ShopID, Desc: params.Sort.Desc,
				After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = WebhookSubscriptionResource(&rows[i], "")
			}
			return items, next, err
		})
}

// handleGet answers one subscription of the caller's shop; another
// shop's is not found.
func (wh *Webhooks) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, wh.wait, webhooksubs.Name, p.ShopID, func(ctx context.Context, shop string) (*webhooksubs.Subscription, error) {
		return wh.q.Subscription(ctx, shop, id)
	}, func(s *webhooksubs.Subscription) httpapi.Resource { return WebhookSubscriptionResource(s, "") })
}

// handleEventTypes lists the catalogue of event types, sorted by name
// (one page: it is small and fixed).
func (wh *Webhooks) handleEventTypes(w http.ResponseWriter, r *http.Request) {
	types := domain.WebhookEventTypes()
	items := make([]httpapi.Resource, len(types))
	for i, t := range types {
		items[i] = httpapi.Resource{ID: t.Name, Type: "webhook_event_type",
			Attributes: WebhookEventTypeAttributes{Description: t.Description, Version: t.Version}}
	}
	httpapi.WriteList(w, r, items, httpapi.Page{Meta: map[string]any{"catalogue_version": WebhookCatalogueVersion}})
}

// WebhookEventTypeAttributes are an event type's attributes.
type WebhookEventTypeAttributes struct {
	Description string `json:"description"`
	// Version is the version of the payload's data.
	Version int `json:"version"`
}

// WebhookSubscriptionAttributes are a webhook subscription's attributes
// in the admin API. Secret is set only in the answers of a creation and
// a rotation: it is never shown again.
type WebhookSubscriptionAttributes struct {
	URL         string   `json:"url"`
	EventTypes  []string `json:"event_types"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason (merchant, gone, failing) and DisabledAt are set
	// while the subscription is disabled, else null.
	DisabledReason *string    `json:"disabled_reason"`
	DisabledAt     *time.Time `json:"disabled_at"`
	// FailingSince, FailingLevel and DisableAt tell that deliveries have
	// been failing and when the subscription is disabled unless one
	// succeeds (null and 0 when they are not).
	FailingSince *time.Time `json:"failing_since"`
	FailingLevel int        `json:"failing_level"`
	DisableAt    *time.Time `json:"disable_at"`
	// SecretRotatedAt is the last rotation; PreviousSecretValidUntil is
	// until when deliveries are also signed with the secret before it.
	SecretRotatedAt          *time.Time `json:"secret_rotated_at"`
	PreviousSecretValidUntil *time.Time `json:"previous_secret_valid_until"`
	CreatedAt                time.Time  `json:"created_at"`
	UpdatedAt                time.Time  `json:"updated_at"`
	Secret                   string     `json:"secret,omitempty"`
}

// WebhookSubscriptionResource renders a subscription; secret is shown
// when not empty (creation and rotation only).
func WebhookSubscriptionResource(s *webhooksubs.Subscription, secret string) httpapi.Resource {
	a := WebhookSubscriptionAttributes{URL: s.URL, EventTypes: s.EventTypes, Description: s.Description, Enabled: s.Enabled,
		DisabledReason: optional(s.DisabledReason), DisabledAt: zeroTimeAsNull(s.DisabledAt),
		FailingSince: zeroTimeAsNull(s.FailingSince), FailingLevel: s.FailingLevel, DisableAt: zeroTimeAsNull(s.DisableAt),
		SecretRotatedAt: zeroTimeAsNull(s.SecretRotatedAt), PreviousSecretValidUntil: zeroTimeAsNull(s.PreviousSecretValidUntil),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Secret: secret}
	if a.EventTypes == nil {
		a.EventTypes = []string{}
	}
	return httpapi.Resource{ID: s.ID, Type: "webhook_subscription", Attributes: a}
}

// WebhookSubscriptionPath is the path of a subscription (Location).
func WebhookSubscriptionPath(id string) string { return "/api/v1/webhook-subscriptions/" + id }
