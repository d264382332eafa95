package commands

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/outbound"
)

// The outbound webhook subscriptions' commands. Every one runs on the
// shop's subscriptions stream (domain.WebhookSubscriptionsStream), so the
// limit on their number holds when two are created at once.

// CreateWebhookSubscription subscribes an endpoint of a shop to event
// types.
type CreateWebhookSubscription struct {
	ShopID      string
	URL         string
	EventTypes  []string
	Description string
	// AllowPrivate is the operator's --outbound-allow-private: private
	// addresses and plain http are admitted.
	AllowPrivate bool
}

// WebhookSubscriptionSecret is the result of a command that sets a
// subscription's secret: shown to the caller once.
type WebhookSubscriptionSecret struct {
	Result
	Secret string
	// PreviousValidUntil is when the previous secret stops signing (zero:
	// at once, or no previous secret).
	PreviousValidUntil time.Time
	// Event is the event recorded (WebhookSubscriptionCreated or
	// WebhookSecretRotated), as decided.
	Event domain.Event
}

// CreateWebhookSubscription runs the command.
func (h *Handler) CreateWebhookSubscription(ctx context.Context, cmd CreateWebhookSubscription, meta Meta) (WebhookSubscriptionSecret, error) {
	ep, err := webhookEndpoint(cmd.URL, cmd.EventTypes, cmd.Description, cmd.AllowPrivate)
	if err != nil {
		return WebhookSubscriptionSecret{}, err
	}
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return WebhookSubscriptionSecret{}, err
	}
	secret, err := outbound.NewSecret()
	if err != nil {
		return WebhookSubscriptionSecret{}, err
	}
	id := domain.NewID(domain.PrefixWebhookSubscription)
	var ev domain.Event
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		e, err := w.Create(&shop, id, ep, secret, h.now())
		ev = e
		return []domain.Event{e}, err
	}, meta)
	res.ID = id
	return WebhookSubscriptionSecret{Result: res, Secret: secret, Event: ev}, err
}

// webhookEndpoint validates settings, then asks the outbound guard
// whether the service may post to the URL.
func webhookEndpoint(url string, types []string, description string, allowPrivate bool) (domain.WebhookEndpoint, error) {
	ep, err := domain.NewWebhookEndpoint(url, types, description)
	if err != nil {
		return domain.WebhookEndpoint{}, err
	}
	if err := outbound.CheckURL(ep.URL, allowPrivate); err != nil {
		return domain.WebhookEndpoint{}, domain.Invalid("url", "%s", err.Error())
	}
	return ep, nil
}

// UpdateWebhookSubscription changes a subscription's settings, or
// enables or disables it.
type UpdateWebhookSubscription struct {
	ShopID, SubscriptionID string
	Patch                  domain.WebhookPatch
	AllowPrivate           bool
}

// UpdateWebhookSubscription runs the command. A patch that changes
// nothing records nothing.
func (h *Handler) UpdateWebhookSubscription(ctx context.Context, cmd UpdateWebhookSubscription, meta Meta) (Result, error) {
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		cur, err := w.Endpoint(cmd.SubscriptionID)
		if err != nil {
			return nil, err
		}
		url, types, desc := cur.URL, cur.EventTypes, cur.Description
		if cmd.Patch.URL != nil {
			url = *cmd.Patch.URL
		}
		if cmd.Patch.EventTypes != nil {
			types = cmd.Patch.EventTypes
		}
		if cmd.Patch.Description != nil {
			desc = *cmd.Patch.Description
		}
		merged := cur
		if cmd.Patch.URL != nil || cmd.Patch.EventTypes != nil || cmd.Patch.Description != nil {
			if merged, err = webhookEndpoint(url, types, desc, cmd.AllowPrivate); err != nil {
				return nil, err
			}
		}
		return w.Update(cmd.SubscriptionID, merged, cmd.Patch.Enabled, h.now())
	}, meta)
	res.ID = cmd.SubscriptionID
	return res, err
}

// DeleteWebhookSubscription deletes a subscription.
type DeleteWebhookSubscription struct{ ShopID, SubscriptionID string }

// DeleteWebhookSubscription runs the command.
func (h *Handler) DeleteWebhookSubscription(ctx context.Context, cmd DeleteWebhookSubscription, meta Meta) (Result, error) {
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		ev, err := w.Delete(cmd.SubscriptionID, h.now())
		return []domain.Event{ev}, err
	}, meta)
	res.ID = cmd.SubscriptionID
	return res, err
}

// RotateWebhookSecret gives a subscription a new secret.
type RotateWebhookSecret struct {
	ShopID, SubscriptionID string
	// Overlap is how long the previous secret keeps signing; nil:
	// domain.DefaultWebhookSecretOverlap.
	Overlap *time.Duration
}

// RotateWebhookSecret runs the command.
func (h *Handler) RotateWebhookSecret(ctx context.Context, cmd RotateWebhookSecret, meta Meta) (WebhookSubscriptionSecret, error) {
	secret, err := outbound.NewSecret()
	if err != nil {
		return WebhookSubscriptionSecret{}, err
	}
	overlap := domain.DefaultWebhookSecretOverlap
	if cmd.Overlap != nil {
		overlap = *cmd.Overlap
	}
	var rotated *domain.WebhookSecretRotated
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		ev, err := w.RotateSecret(cmd.SubscriptionID, secret, overlap, h.now())
		if err != nil {
			return nil, err
		}
		rotated = ev.(*domain.WebhookSecretRotated)
		return []domain.Event{ev}, nil
	}, meta)
	res.ID = cmd.SubscriptionID
	if err != nil {
		return WebhookSubscriptionSecret{Result: res}, err
	}
	return WebhookSubscriptionSecret{Result: res, Secret: secret, PreviousValidUntil: rotated.PreviousValidUntil, Event: rotated}, nil
}

// DisableWebhookSubscription is the delivery side's disabling of a
// subscription (410 Gone, or failing for the whole auto-disable period).
type DisableWebhookSubscription struct {
	ShopID, SubscriptionID, Reason string
	// Status is the HTTP status that caused it, 0 when none.
	Status int
}

// DisableWebhookSubscription runs the command; a subscription already
// disabled or deleted records nothing.
func (h *Handler) DisableWebhookSubscription(ctx context.Context, cmd DisableWebhookSubscription, meta Meta) (Result, error) {
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		return w.Disable(cmd.SubscriptionID, cmd.Reason, cmd.Status, h.now()), nil
	}, meta)
	res.ID = cmd.SubscriptionID
	return res, err
}

// WarnWebhookSubscription records that a subscription's deliveries have
// been failing (a warning before the auto-disable).
type WarnWebhookSubscription struct {
	ShopID, SubscriptionID string
	Level                  int
	FailingSince           time.Time
	DisableAt              time.Time
	LastReason             string
}

// WarnWebhookSubscription runs the command; a warning of that level
// already recorded in this failing period records nothing.
func (h *Handler) WarnWebhookSubscription(ctx context.Context, cmd WarnWebhookSubscription, meta Meta) (Result, error) {
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		return w.Warn(cmd.SubscriptionID, cmd.Level, cmd.FailingSince, cmd.DisableAt, cmd.LastReason, h.now()), nil
	}, meta)
	res.ID = cmd.SubscriptionID
	return res, err
}

// PingWebhookSubscription asks for a test delivery.
type PingWebhookSubscription struct{ ShopID, SubscriptionID string }

// PingWebhookSubscription runs the command; Result.ID is the ping's
// outbound event id (evt_…).
func (h *Handler) PingWebhookSubscription(ctx context.Context, cmd PingWebhookSubscription, meta Meta) (Result, error) {
	ping := domain.NewID(domain.PrefixEvent)
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		ev, err := w.Ping(cmd.SubscriptionID, ping, h.now())
		return []domain.Event{ev}, err
	}, meta)
	res.ID = ping
	return res, err
}

// RedeliverWebhooks asks for one delivery again (DeliveryID) or for every
// failed or undelivered event of the subscription since Since (recover).
type RedeliverWebhooks struct {
	ShopID, SubscriptionID string
	DeliveryID             string
	Since                  time.Time
}

// RedeliverWebhooks runs the command. That the delivery exists is the
// caller's check (deliveries are the delivery side's records, not the
// stream's).
func (h *Handler) RedeliverWebhooks(ctx context.Context, cmd RedeliverWebhooks, meta Meta) (Result, error) {
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		ev, err := w.Redeliver(cmd.SubscriptionID, cmd.DeliveryID, cmd.Since, h.now())
		return []domain.Event{ev}, err
	}, meta)
	res.ID = cmd.SubscriptionID
	return res, err
}

// onWebhooks runs decide on the shop's subscriptions stream. No event
// decided appends nothing and answers the stream's current revision.
func (h *Handler) onWebhooks(ctx context.Context, shopID string, decide func(*domain.WebhookSubscriptions) ([]domain.Event, error), meta Meta) (Result, error) {
	return execute(ctx, h, shopID, domain.WebhookSubscriptionsStream(shopID),
		func() *domain.WebhookSubscriptions { return &domain.WebhookSubscriptions{ShopID: shopID} },
		func(w *domain.WebhookSubscriptions) (decision, error) {
			evs, err := decide(w)
			if err != nil {
				return decision{}, err
			}
			return decision{events: evs}, nil
		}, meta)
}

// RecoverWebhookSubscription records that a warned subscription's
// deliveries succeed again (the failing period that began at
// FailingSince ended).
type RecoverWebhookSubscription struct {
	ShopID, SubscriptionID string
	FailingSince           time.Time
}

// RecoverWebhookSubscription runs the command; a period without a warning
// on record, or already ended, records nothing.
func (h *Handler) RecoverWebhookSubscription(ctx context.Context, cmd RecoverWebhookSubscription, meta Meta) (Result, error) {
	res, err := h.onWebhooks(ctx, cmd.ShopID, func(w *domain.WebhookSubscriptions) ([]domain.Event, error) {
		return w.Recover(cmd.SubscriptionID, cmd.FailingSince, h.now()), nil
	}, meta)
	res.ID = cmd.SubscriptionID
	return res, err
}

// RecordWebhookAttempts records the outcomes of a batch of attempts to
// deliver one shop's outbound events (WebhookAttemptsRecorded on the
// shop's attempts stream, under an id derived from the attempts): the
// same batch recorded again (a dispatcher retrying an append whose answer
// it lost) is recorded once.
type RecordWebhookAttempts struct {
	ShopID   string
	Attempts []domain.WebhookAttempt
}

// RecordWebhookAttempts runs the command.
func (h *Handler) RecordWebhookAttempts(ctx context.Context, cmd RecordWebhookAttempts, meta Meta) (Result, error) {
	ev, err := domain.RecordWebhookAttempts(cmd.ShopID, cmd.Attempts)
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("webhook-attempts", ev.BatchID)
	return h.appendOne(ctx, cmd.ShopID, domain.WebhookAttemptsStream(cmd.ShopID), eventlog.Any(), id, ev, h.now(), meta)
}
