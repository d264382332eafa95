package marketplaces

import (
	"context"
	"database/sql"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "marketplaces"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE marketplace_connections (
	marketplace   TEXT NOT NULL,
	account_id    TEXT NOT NULL,
	connection_id TEXT NOT NULL,
	shop_id       TEXT NOT NULL,
	secret        TEXT NOT NULL,
	app_key       TEXT NOT NULL DEFAULT '',
	connected_at  INTEGER NOT NULL,
	rotated_at    INTEGER NOT NULL DEFAULT 0,
	version       INTEGER NOT NULL,
	PRIMARY KEY (marketplace, account_id)
);
CREATE INDEX marketplace_connections_shop ON marketplace_connections (shop_id);
CREATE TABLE marketplace_orders (
	order_id             TEXT PRIMARY KEY,
	shop_id              TEXT NOT NULL,
	marketplace          TEXT NOT NULL,
	account_id           TEXT NOT NULL,
	marketplace_order_id TEXT NOT NULL,
	status               TEXT NOT NULL,
	kind                 TEXT NOT NULL,
	total                INTEGER,          -- NULL: never reported
	currency             TEXT NOT NULL DEFAULT '',
	first_seen_at        INTEGER NOT NULL,
	occurred_at          INTEGER NOT NULL, -- of the update the status is from
	updates              INTEGER NOT NULL,
	version              INTEGER NOT NULL
);
CREATE INDEX marketplace_orders_shop ON marketplace_orders (shop_id, first_seen_at, order_id);
CREATE TABLE marketplace_notifications (
	event_id    TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	marketplace TEXT NOT NULL,
	account_id  TEXT NOT NULL,
	kind        TEXT NOT NULL,
	resource_id TEXT NOT NULL DEFAULT '',
	occurred_at INTEGER NOT NULL,
	position    INTEGER NOT NULL
);
CREATE INDEX marketplace_notifications_shop ON marketplace_notifications (shop_id, position);
`}}

// Projector returns the marketplaces projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.Sealing(codec, SecretLabel, projections.WrapErrors("marketplaces", apply))
		}),
	}
}

// cases fold each event type.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID,
			readmodel.ShopRows("marketplace_connections"), readmodel.ShopRows("marketplace_orders"),
			readmodel.ShopRows("marketplace_notifications"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MarketplaceConnected, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO marketplace_connections
	(marketplace, account_id, connection_id, shop_id, secret, app_key, connected_at, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (marketplace, account_id) DO NOTHING`,
			ev.Marketplace, ev.AccountID, ev.ConnectionID, ev.ShopID, ev.Secret, ev.AppKey, ev.ConnectedAt.UnixMicro(), e.Position)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MarketplaceSecretRotated, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE marketplace_connections SET secret = ?, app_key = ?, rotated_at = ?, version = ?
WHERE marketplace = ? AND account_id = ? AND shop_id = ? AND version < ?`,
			ev.Secret, ev.AppKey, ev.RotatedAt.UnixMicro(), e.Position, ev.Marketplace, ev.AccountID, ev.ShopID, e.Position)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MarketplaceOrderRecorded, e *projections.DecodedEvent) error {
		return upsertOrder(ctx, tx, ev, &e.Event)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MarketplaceNotificationReceived, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO marketplace_notifications
	(event_id, shop_id, marketplace, account_id, kind, resource_id, occurred_at, position)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
			e.ID.String(), ev.ShopID, ev.Marketplace, ev.AccountID, ev.Kind, ev.ResourceID, ev.OccurredAt.UnixMicro(), e.Position)
		return err
	}),
)

// upsertOrder folds an order update. Deliveries can arrive out of order:
// the status (and kind) are those of the latest occurred_at, a total or
// currency is kept from the latest update that has one.
func upsertOrder(ctx context.Context, tx *sql.Tx, ev *domain.MarketplaceOrderRecorded, e *eventlog.Event) error {
	var total any
	if ev.Total != nil {
		total = int64(*ev.Total)
	}
	at := ev.OccurredAt.UnixMicro()
	_, err := tx.ExecContext(ctx, `
INSERT INTO marketplace_orders (order_id, shop_id, marketplace, account_id, marketplace_order_id, status, kind,
	total, currency, first_seen_at, occurred_at, updates, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)
ON CONFLICT (order_id) DO UPDATE SET
	status = CASE WHEN excluded.occurred_at >= marketplace_orders.occurred_at THEN excluded.status ELSE marketplace_orders.status END,
	kind = CASE WHEN excluded.occurred_at >= marketplace_orders.occurred_at THEN excluded.kind ELSE marketplace_orders.kind END,
	total = CASE WHEN excluded.occurred_at >= marketplace_orders.occurred_at
		THEN COALESCE(excluded.total, marketplace_orders.total) ELSE COALESCE(marketplace_orders.total, excluded.total) END,
	currency = CASE WHEN excluded.currency <> '' AND (excluded.occurred_at >= marketplace_orders.occurred_at OR marketplace_orders.currency = '')
		THEN excluded.currency ELSE marketplace_orders.currency END,
	first_seen_at = MIN(marketplace_orders.first_seen_at, excluded.first_seen_at),
	occurred_at = MAX(marketplace_orders.occurred_at, excluded.occurred_at),
	updates = marketplace_orders.updates + 1,
	version = excluded.version
WHERE marketplace_orders.version < excluded.version AND marketplace_orders.shop_id = excluded.shop_id`,
		ev.OrderID, ev.ShopID, ev.Marketplace, ev.AccountID, ev.MarketplaceOrderID, ev.Status, ev.Kind,
		total, ev.Currency, at, at, e.Position)
	return err
}

// SecretLabel binds the sealed secrets of marketplace_connections.secret
// (envelope.Codec.SealSecret): the secret the queries return is sealed,
// and the receiver opens it with the same label and the shop id.
const SecretLabel = "marketplace_connections.secret"
