package app

// The CLI's webhook subscription commands (`cgp webhooks …`): the
// subscriptions API's twins, with the CLI as actor.

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/webhooksubs"
	"github.com/cgp-platform/cgp/readapi"
)

// WebhookSubscription is one subscription as the CLI prints it: the API's
// attributes, with the secret only in the answer of a creation or a
// rotation, and the position of the change when there was one.
type WebhookSubscription struct {
	ID     string `json:"id"`
	ShopID string `json:"shop_id"`
	readapi.WebhookSubscriptionAttributes
	Position uint64 `json:"position,omitempty"`
}

func cliWebhookMeta() commands.Meta { return commands.Meta{Actor: "cli", Source: "cli"} }

func shownSubscription(s *webhooksubs.Subscription, secret string, pos uint64) WebhookSubscription {
	return WebhookSubscription{ID: s.ID, ShopID: s.ShopID, Position: pos,
		WebhookSubscriptionAttributes: readapi.WebhookSubscriptionResource(s, secret).Attributes.(readapi.WebhookSubscriptionAttributes)}
}

// CreateWebhookSubscription subscribes an endpoint of a shop; the answer
// holds the secret, shown this once.
func CreateWebhookSubscription(ctx context.Context, c *Core, cmd commands.CreateWebhookSubscription) (WebhookSubscription, error) {
	res, err := c.Commands.CreateWebhookSubscription(ctx, cmd, cliWebhookMeta())
	if err != nil {
		return WebhookSubscription{}, err
	}
	return shownSubscription(webhooksubs.FromCreated(res.Event.(*domain.WebhookSubscriptionCreated)), res.Secret, res.Position), nil
}

// UpdateWebhookSubscription changes a subscription; the answer is the
// subscription's settings as its stream tells them after the change.
func UpdateWebhookSubscription(ctx context.Context, c *Core, cmd commands.UpdateWebhookSubscription) (WebhookSubscription, error) {
	res, err := c.Commands.UpdateWebhookSubscription(ctx, cmd, cliWebhookMeta())
	if err != nil {
		return WebhookSubscription{}, err
	}
	w := domain.WebhookSubscriptions{ShopID: cmd.ShopID}
	if err := foldStream(ctx, c, domain.WebhookSubscriptionsStream(cmd.ShopID), w.Apply); err != nil {
		return WebhookSubscription{}, err
	}
	s := w.Subs[cmd.SubscriptionID]
	if s == nil { // deleted meanwhile
		return WebhookSubscription{}, domain.NotFound("webhook subscription")
	}
	out := WebhookSubscription{ID: s.ID, ShopID: cmd.ShopID, Position: res.Position}
	out.URL, out.EventTypes, out.Description, out.Enabled = s.Endpoint.URL, s.Endpoint.EventTypes, s.Endpoint.Description, s.Enabled
	if s.DisabledReason != "" {
		out.DisabledReason = &s.DisabledReason
	}
	return out, nil
}

// WebhookSecretRotation is the answer of a rotation: the new secret,
// shown this once, and until when the previous one still signs (null:
// it stopped at once).
type WebhookSecretRotation struct {
	ID                       string     `json:"id"`
	ShopID                   string     `json:"shop_id"`
	Secret                   string     `json:"secret"`
	PreviousSecretValidUntil *time.Time `json:"previous_secret_valid_until"`
	Position                 uint64     `json:"position"`
}

// RotateWebhookSecret gives a subscription a new secret.
func RotateWebhookSecret(ctx context.Context, c *Core, cmd commands.RotateWebhookSecret) (WebhookSecretRotation, error) {
	res, err := c.Commands.RotateWebhookSecret(ctx, cmd, cliWebhookMeta())
	if err != nil {
		return WebhookSecretRotation{}, err
	}
	out := WebhookSecretRotation{ID: cmd.SubscriptionID, ShopID: cmd.ShopID, Secret: res.Secret, Position: res.Position}
	if !res.PreviousValidUntil.IsZero() {
		out.PreviousSecretValidUntil = &res.PreviousValidUntil
	}
	return out, nil
}

// DeleteWebhookSubscription deletes a subscription; the answer is the
// deletion's position.
func DeleteWebhookSubscription(ctx context.Context, c *Core, cmd commands.DeleteWebhookSubscription) (uint64, error) {
	res, err := c.Commands.DeleteWebhookSubscription(ctx, cmd, cliWebhookMeta())
	return res.Position, err
}

// WebhookSubscriptions are a shop's subscriptions, newest first, as the
// live read model keeps them (none when the server never ran this
// version).
func WebhookSubscriptions(ctx context.Context, cfg Config, shop string) ([]WebhookSubscription, error) {
	store, err := cfg.OpenReadModels()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	q := webhooksubs.NewQueries(store.DB())
	rows := []WebhookSubscription{}
	if built, err := q.Built(ctx); err != nil || !built {
		return rows, err
	}
	var after *webhooksubs.Key
	for {
		page, next, err := q.Subscriptions(ctx, webhooksubs.ListQuery{Shop: shop, Desc: true, After: after, Limit: 100})
		if err != nil {
			return nil, err
		}
		for i := range page {
			rows = append(rows, shownSubscription(&page[i], "", 0))
		}
		if next == nil {
			return rows, nil
		}
		after = next
	}
}
