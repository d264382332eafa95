package writeapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/projections/webhooksubs"
	"github.com/cgp-platform/cgp/readapi"
)

// Webhooks serves the webhook subscription writes.
type Webhooks struct {
	idem         func(http.Handler) http.Handler
	cmds         *commands.Handler
	auth         *auth.Authenticator
	q            *webhooksubs.Queries
	wait         readapi.Waiter
	allowPrivate bool
}

// NewWebhooks returns the webhook subscription write handlers. idem wraps
// every POST and PATCH in Idempotency-Key handling; q and wait answer a
// change with the subscription as the read model shows it once caught up;
// allowPrivate is the operator's --outbound-allow-private (subscription
// URLs may name private addresses and use plain http).
func NewWebhooks(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *webhooksubs.Queries,
	wait readapi.Waiter, allowPrivate bool) *Webhooks {
	return &Webhooks{cmds: cmds, auth: a, idem: idem, q: q, wait: wait, allowPrivate: allowPrivate}
}

// Routes registers the writes (beta).
func (wh *Webhooks) Routes(r *mux.Router) {
	write := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(wh.auth.Require(domain.ScopeWebhooksWrite, wh.idem(h)))
	}
	r.Handle("/api/v1/webhook-subscriptions", write(wh.handleCreate)).Methods(http.MethodPost)
	r.Handle("/api/v1/webhook-subscriptions/{id}", write(wh.handlePatch)).Methods(http.MethodPatch)
	r.Handle("/api/v1/webhook-subscriptions/{id}", httpapi.Beta(wh.auth.Require(domain.ScopeWebhooksWrite, http.HandlerFunc(wh.handleDelete)))).
		Methods(http.MethodDelete)
	r.Handle("/api/v1/webhook-subscriptions/{id}/rotate-secret", write(wh.handleRotate)).Methods(http.MethodPost)
}

type webhookCreateBody struct {
	URL         string   `json:"url"`
	EventTypes  []string `json:"event_types"`
	Description string   `json:"description"`
}

// handleCreate subscribes an endpoint and answers 201 with the
// subscription and its secret, shown this once.
func (wh *Webhooks) handleCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body webhookCreateBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := wh.cmds.CreateWebhookSubscription(r.Context(), commands.CreateWebhookSubscription{ShopID: p.ShopID, URL: body.URL,
		EventTypes: body.EventTypes, Description: body.Description, AllowPrivate: wh.allowPrivate}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	created := res.Event.(*domain.WebhookSubscriptionCreated)
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Location", readapi.WebhookSubscriptionPath(res.ID))
	w.Header().Set("Cache-Control", "no-store")
	idempotency.SealAnswer(w)
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.WebhookSubscriptionResource(webhooksubs.FromCreated(created), res.Secret))
}

// webhookPatchBody is a partial change: an absent (or null) member stays
// as it is. An unknown member is a 422 naming it (httpapi.DecodeData).
type webhookPatchBody struct {
	URL         *string   `json:"url"`
	EventTypes  *[]string `json:"event_types"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// handlePatch changes a subscription's settings, or enables or disables
// it, and answers 200 with the subscription (no secret).
func (wh *Webhooks) handlePatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	var body webhookPatchBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	patch := domain.WebhookPatch{URL: body.URL, Description: body.Description, Enabled: body.Enabled}
	if body.EventTypes != nil {
		patch.EventTypes = append([]string{}, *body.EventTypes...) // [] is a change (refused), not "unchanged"
	}
	res, err := wh.cmds.UpdateWebhookSubscription(r.Context(), commands.UpdateWebhookSubscription{ShopID: p.ShopID, SubscriptionID: id,
		Patch: patch, AllowPrivate: wh.allowPrivate}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	// When the read model is slow, the patch is shown as asked; the
	// command normalised it, the row will show it normalised.
	wh.serve(w, r, p.ShopID, id, res, "", func(s *webhooksubs.Subscription) {
		if body.URL != nil {
			s.URL = *body.URL
		}
		if body.EventTypes != nil {
			s.EventTypes = *body.EventTypes
		}
		if body.Description != nil {
			s.Description = *body.Description
		}
		if body.Enabled != nil && *body.Enabled != s.Enabled {
			s.Enabled = *body.Enabled
			s.DisabledReason, s.DisabledAt = "", time.Time{}
			if !s.Enabled {
				s.DisabledReason, s.DisabledAt = domain.WebhookDisabledByMerchant, time.Now().UTC()
			}
		}
	})
}

// handleDelete deletes a subscription: 204.
func (wh *Webhooks) handleDelete(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	res, err := wh.cmds.DeleteWebhookSubscription(r.Context(), commands.DeleteWebhookSubscription{ShopID: p.ShopID,
		SubscriptionID: mux.Vars(r)["id"]}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	w.WriteHeader(http.StatusNoContent)
}

type webhookRotateBody struct {
	OverlapSeconds *int64 `json:"overlap_seconds"`
}

// handleRotate gives a subscription a new secret and answers 200 with the
// subscription and the new secret, shown this once. The body is optional:
// without overlap_seconds the previous secret keeps signing for
// domain.DefaultWebhookSecretOverlap.
func (wh *Webhooks) handleRotate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	var body webhookRotateBody
	if err := decodeOptionalData(w, r, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cmd := commands.RotateWebhookSecret{ShopID: p.ShopID, SubscriptionID: id}
	if s := body.OverlapSeconds; s != nil {
		if *s < 0 || *s > int64(domain.MaxWebhookSecretOverlap/time.Second) {
			httpapi.WriteError(w, r, domain.Invalid("overlap_seconds", "overlap_seconds must be between 0 and %d (7 days)",
				int64(domain.MaxWebhookSecretOverlap/time.Second)))
			return
		}
		overlap := time.Duration(*s) * time.Second
		cmd.Overlap = &overlap
	}
	res, err := wh.cmds.RotateWebhookSecret(r.Context(), cmd, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	rotated := res.Event.(*domain.WebhookSecretRotated)
	w.Header().Set("Cache-Control", "no-store")
	idempotency.SealAnswer(w)
	wh.serve(w, r, p.ShopID, id, res.Result, res.Secret, func(s *webhooksubs.Subscription) {
		s.SecretRotatedAt, s.PreviousSecretValidUntil, s.UpdatedAt = rotated.RotatedAt, rotated.PreviousValidUntil, rotated.RotatedAt
	})
}

// serve answers a subscription write with the subscription read back once
// the read model reached the command (bounded), else with pending
// applied; secret is shown when not empty.
func (wh *Webhooks) serve(w http.ResponseWriter, r *http.Request, shop, id string, res commands.Result, secret string,
	pending func(*webhooksubs.Subscription)) {
	readapi.ServeWritten(w, r, wh.wait, webhooksubs.Name, res.Position, http.StatusOK,
		func(ctx context.Context) (*webhooksubs.Subscription, error) { return wh.q.Subscription(ctx, shop, id) },
		pending, func(s *webhooksubs.Subscription) httpapi.Resource {
			return readapi.WebhookSubscriptionResource(s, secret)
		})
}

// decodeOptionalData is httpapi.DecodeData for a body that may be absent:
// an empty body leaves dst as it is.
func decodeOptionalData(w http.ResponseWriter, r *http.Request, dst any) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return httpapi.PayloadTooLarge(MaxBody)
		}
		return httpapi.ValidationFailed("data", "the request body could not be read")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	return httpapi.DecodeData(w, r, MaxBody, dst)
}
