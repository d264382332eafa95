package webhooksubs

import (
	"context"
	"database/sql"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "webhook_subscriptions"

// Times are Unix microseconds, 0 when unset (readmodel.Micros). position
// is the log position of the subscription's creation: lists are in log
// order.
var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE webhook_subscriptions (
	subscription_id             TEXT PRIMARY KEY,
	shop_id                     TEXT NOT NULL,
	url                         TEXT NOT NULL,
	event_types                 TEXT NOT NULL DEFAULT '[]',
	description                 TEXT NOT NULL DEFAULT '',
	enabled                     INTEGER NOT NULL DEFAULT 1,
	disabled_reason             TEXT NOT NULL DEFAULT '',
	disabled_at                 INTEGER NOT NULL DEFAULT 0,
	failing_since               INTEGER NOT NULL DEFAULT 0,
	failing_level               INTEGER NOT NULL DEFAULT 0,
	disable_at                  INTEGER NOT NULL DEFAULT 0,
	secret_rotated_at           INTEGER NOT NULL DEFAULT 0,
	previous_secret_valid_until INTEGER NOT NULL DEFAULT 0,
	created_at                  INTEGER NOT NULL,
	updated_at                  INTEGER NOT NULL,
	position                    INTEGER NOT NULL
);
CREATE INDEX webhook_subscriptions_shop_position ON webhook_subscriptions (shop_id, position);
`}}

// Projector returns the webhook subscriptions projector, a read model
// only (it issues no command; a replay may rebuild it).
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.WrapErrors(Name, apply)
		}),
	}
}

// cases fold each event type. Every event of a shop's subscriptions is on
// one stream, so they come in the order they were decided; each case sets
// values (nothing counts), so an event applied twice changes nothing.
// updated_at follows the merchant's and the delivery side's decisions
// (change, enable, disable, rotate), not the failing warnings.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("webhook_subscriptions"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionCreated, e *projections.DecodedEvent) error {
		at := readmodel.Micros(ev.CreatedAt)
		_, err := tx.ExecContext(ctx, `INSERT INTO webhook_subscriptions (subscription_id, shop_id, url, event_types, description,
	enabled, created_at, updated_at, position) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?) ON CONFLICT (subscription_id) DO NOTHING`,
			ev.SubscriptionID, ev.ShopID, ev.URL, readmodel.JSONText(ev.EventTypes, "[]"), ev.Description, at, at, int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionUpdated, _ *projections.DecodedEvent) error {
		return update(ctx, tx, ev.ShopID, ev.SubscriptionID, `url = ?, event_types = ?, description = ?, updated_at = ?,
	failing_since = 0, failing_level = 0, disable_at = 0`,
			ev.URL, readmodel.JSONText(ev.EventTypes, "[]"), ev.Description, readmodel.Micros(ev.UpdatedAt))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionDisabled, _ *projections.DecodedEvent) error {
		at := readmodel.Micros(ev.DisabledAt)
		return update(ctx, tx, ev.ShopID, ev.SubscriptionID, `enabled = 0, disabled_reason = ?, disabled_at = ?, updated_at = ?`,
			ev.Reason, at, at)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionEnabled, _ *projections.DecodedEvent) error {
		return update(ctx, tx, ev.ShopID, ev.SubscriptionID, `enabled = 1, disabled_reason = '', disabled_at = 0, updated_at = ?,
	failing_since = 0, failing_level = 0, disable_at = 0`, readmodel.Micros(ev.EnabledAt))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionFailing, _ *projections.DecodedEvent) error {
		return update(ctx, tx, ev.ShopID, ev.SubscriptionID, `failing_since = ?, failing_level = ?, disable_at = ?`,
			readmodel.Micros(ev.FailingSince), ev.Level, readmodel.Micros(ev.DisableAt))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionRecovered, _ *projections.DecodedEvent) error {
		return update(ctx, tx, ev.ShopID, ev.SubscriptionID, `failing_since = 0, failing_level = 0, disable_at = 0`)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSecretRotated, _ *projections.DecodedEvent) error {
		at := readmodel.Micros(ev.RotatedAt)
		return update(ctx, tx, ev.ShopID, ev.SubscriptionID, `secret_rotated_at = ?, previous_secret_valid_until = ?, updated_at = ?`,
			at, readmodel.Micros(ev.PreviousValidUntil), at)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionDeleted, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM webhook_subscriptions WHERE subscription_id = ? AND shop_id = ?`, ev.SubscriptionID, ev.ShopID)
		return err
	}),
)

// update sets columns (an SQL assignment list with its args) on a shop's
// subscription.
func update(ctx context.Context, tx *sql.Tx, shop, id, set string, args ...any) error {
	_, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET `+set+` WHERE subscription_id = ? AND shop_id = ?`,
		append(args, id, shop)...)
	return err
}
