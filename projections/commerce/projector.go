// Package commerce is the read model of the commerce platform's state per
// shop: orders and refunds, products and inventory levels, carts and
// checkouts (attribution touchpoints), subscription contracts with their
// billing attempts and dunning state, the live theme with the history of
// its publishes and edits, and privacy requests.
package commerce

import (
	"context"
	"database/sql"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name.
const Name = "commerce"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE orders (
	order_id           TEXT PRIMARY KEY,
	shop_id            TEXT NOT NULL,
	external_id        TEXT NOT NULL,
	customer_id        TEXT NOT NULL DEFAULT '',
	name               TEXT NOT NULL DEFAULT '',
	email              TEXT,
	financial_status   TEXT NOT NULL DEFAULT '',
	fulfillment_status TEXT NOT NULL DEFAULT '',
	currency           TEXT NOT NULL DEFAULT '',
	total_price        INTEGER NOT NULL DEFAULT 0,
	subtotal_price     INTEGER NOT NULL DEFAULT 0,
	total_tax          INTEGER NOT NULL DEFAULT 0,
	total_discounts    INTEGER NOT NULL DEFAULT 0,
	refunded           INTEGER NOT NULL DEFAULT 0,
	lines              TEXT NOT NULL DEFAULT '[]',
	source_name        TEXT NOT NULL DEFAULT '',
	discount_codes     TEXT NOT NULL DEFAULT '[]',
	tags               TEXT NOT NULL DEFAULT '[]',
	landing_site       TEXT NOT NULL DEFAULT '',
	referring_site     TEXT NOT NULL DEFAULT '',
	utm                TEXT NOT NULL DEFAULT '{}',
	click_ids          TEXT NOT NULL DEFAULT '{}',
	created_at         INTEGER NOT NULL DEFAULT 0,
	updated_at         INTEGER NOT NULL DEFAULT 0,
	processed_at       INTEGER NOT NULL DEFAULT 0,
	cancelled_at       INTEGER NOT NULL DEFAULT 0,
	last_topic         TEXT NOT NULL DEFAULT '',
	snapshots          INTEGER NOT NULL DEFAULT 0,
	redacted           INTEGER NOT NULL DEFAULT 0,
	version            INTEGER NOT NULL
);
CREATE INDEX orders_shop_created ON orders (shop_id, created_at, order_id);
CREATE INDEX orders_customer ON orders (shop_id, customer_id, created_at);
CREATE TABLE refunds (
	refund_id  TEXT PRIMARY KEY,
	shop_id    TEXT NOT NULL,
	order_id   TEXT NOT NULL,
	amount     INTEGER NOT NULL,
	currency   TEXT NOT NULL DEFAULT '',
	lines      TEXT NOT NULL DEFAULT '[]',
	created_at INTEGER NOT NULL DEFAULT 0,
	version    INTEGER NOT NULL
);
CREATE INDEX refunds_order ON refunds (order_id);
CREATE TABLE products (
	product_id   TEXT PRIMARY KEY,
	shop_id      TEXT NOT NULL,
	external_id  TEXT NOT NULL,
	title        TEXT NOT NULL DEFAULT '',
	handle       TEXT NOT NULL DEFAULT '',
	status       TEXT NOT NULL DEFAULT '',
	vendor       TEXT NOT NULL DEFAULT '',
	product_type TEXT NOT NULL DEFAULT '',
	tags         TEXT NOT NULL DEFAULT '[]',
	variants     TEXT NOT NULL DEFAULT '[]',
	created_at   INTEGER NOT NULL DEFAULT 0,
	updated_at   INTEGER NOT NULL DEFAULT 0,
	deleted_at   INTEGER NOT NULL DEFAULT 0,
	version      INTEGER NOT NULL
);
CREATE INDEX products_shop_created ON products (shop_id, created_at, product_id);
CREATE TABLE product_variants (
	shop_id            TEXT NOT NULL,
	variant_id         TEXT NOT NULL,
	product_id         TEXT NOT NULL,
	sku                TEXT NOT NULL DEFAULT '',
	price              INTEGER NOT NULL DEFAULT 0,
	inventory_item_id  TEXT NOT NULL DEFAULT '',
	inventory_quantity INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (shop_id, variant_id)
);
CREATE INDEX product_variants_product ON product_variants (product_id);
CREATE INDEX product_variants_item ON product_variants (shop_id, inventory_item_id);
CREATE INDEX product_variants_sku ON product_variants (shop_id, sku);
CREATE TABLE inventory_levels (
	level_id          TEXT PRIMARY KEY,
	shop_id           TEXT NOT NULL,
	inventory_item_id TEXT NOT NULL,
	location_id       TEXT NOT NULL,
	available         INTEGER,
	updated_at        INTEGER NOT NULL DEFAULT 0,
	version           INTEGER NOT NULL
);
CREATE INDEX inventory_levels_item ON inventory_levels (shop_id, inventory_item_id, location_id);
CREATE TABLE carts (
	cart_id    TEXT PRIMARY KEY,
	shop_id    TEXT NOT NULL,
	lines      TEXT NOT NULL DEFAULT '[]',
	line_count INTEGER NOT NULL DEFAULT 0,
	total      INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL DEFAULT 0,
	updated_at INTEGER NOT NULL DEFAULT 0,
	version    INTEGER NOT NULL
);
CREATE INDEX carts_shop_updated ON carts (shop_id, updated_at);
CREATE TABLE checkouts (
	checkout_id    TEXT PRIMARY KEY,
	shop_id        TEXT NOT NULL,
	customer_id    TEXT NOT NULL DEFAULT '',
	cart_id        TEXT NOT NULL DEFAULT '',
	email          TEXT,
	total_price    INTEGER NOT NULL DEFAULT 0,
	currency       TEXT NOT NULL DEFAULT '',
	landing_site   TEXT NOT NULL DEFAULT '',
	referring_site TEXT NOT NULL DEFAULT '',
	utm            TEXT NOT NULL DEFAULT '{}',
	click_ids      TEXT NOT NULL DEFAULT '{}',
	created_at     INTEGER NOT NULL DEFAULT 0,
	updated_at     INTEGER NOT NULL DEFAULT 0,
	completed_at   INTEGER NOT NULL DEFAULT 0,
	redacted       INTEGER NOT NULL DEFAULT 0,
	version        INTEGER NOT NULL
);
CREATE INDEX checkouts_shop_created ON checkouts (shop_id, created_at);
CREATE INDEX checkouts_customer ON checkouts (shop_id, customer_id, created_at);
CREATE TABLE subscription_contracts (
	subscription_id TEXT PRIMARY KEY,
	shop_id         TEXT NOT NULL,
	external_id     TEXT NOT NULL,
	customer_id     TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL DEFAULT '',
	interval        TEXT NOT NULL DEFAULT '',
	interval_count  INTEGER NOT NULL DEFAULT 0,
	currency        TEXT NOT NULL DEFAULT '',
	origin_order_id TEXT NOT NULL DEFAULT '',
	dunning_state   TEXT NOT NULL DEFAULT 'current',
	failed_attempts INTEGER NOT NULL DEFAULT 0,
	last_attempt_at INTEGER NOT NULL DEFAULT 0,
	last_billed_at  INTEGER NOT NULL DEFAULT 0,
	churned_at      INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL DEFAULT 0,
	updated_at      INTEGER NOT NULL DEFAULT 0,
	version         INTEGER NOT NULL
);
CREATE INDEX subscription_contracts_shop ON subscription_contracts (shop_id, status);
CREATE TABLE billing_attempts (
	subscription_id TEXT NOT NULL,
	attempt_id      TEXT NOT NULL,
	shop_id         TEXT NOT NULL,
	success         INTEGER NOT NULL,
	order_id        TEXT NOT NULL DEFAULT '',
	error_code      TEXT NOT NULL DEFAULT '',
	error_message   TEXT NOT NULL DEFAULT '',
	attempted_at    INTEGER NOT NULL,
	PRIMARY KEY (subscription_id, attempt_id)
);
CREATE TABLE themes (
	theme_id     TEXT PRIMARY KEY,
	shop_id      TEXT NOT NULL,
	external_id  TEXT NOT NULL,
	name         TEXT NOT NULL DEFAULT '',
	role         TEXT NOT NULL DEFAULT '',
	last_topic   TEXT NOT NULL DEFAULT '',
	published_at INTEGER NOT NULL DEFAULT 0,
	updated_at   INTEGER NOT NULL DEFAULT 0,
	changes      INTEGER NOT NULL DEFAULT 0,
	version      INTEGER NOT NULL
);
CREATE INDEX themes_shop ON themes (shop_id, updated_at);
CREATE TABLE privacy_requests (
	event_id    TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	kind        TEXT NOT NULL,
	customer_id TEXT NOT NULL DEFAULT '',
	request_id  TEXT NOT NULL DEFAULT '',
	orders      TEXT NOT NULL DEFAULT '[]',
	status      TEXT NOT NULL DEFAULT 'received',
	received_at INTEGER NOT NULL,
	version     INTEGER NOT NULL
);
CREATE INDEX privacy_requests_shop ON privacy_requests (shop_id, received_at);
`}, {Version: 2, SQL: ordersListIndexes}, {Version: 3, SQL: catalogIndexes}, {Version: 4, SQL: `
-- orders_shop_customer_created (migration 2) serves every query this one
-- did; one index fewer to update per order.
DROP INDEX IF EXISTS orders_customer;
`}, {Version: 5, SQL: themeChangesSQL}, {Version: 6, SQL: orderActionsTable}, {Version: 7, SQL: billingAttemptsIndexSQL}}

// themeChangesSQL keeps every publish and edit of the main theme with its
// time (the theme regression incident view). A data directory made before
// it starts the history with each theme's last change; a replay rebuilds
// the whole history.
const themeChangesSQL = `
CREATE TABLE theme_changes (
	change_id   TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	theme_id    TEXT NOT NULL,
	external_id TEXT NOT NULL,
	name        TEXT NOT NULL DEFAULT '',
	topic       TEXT NOT NULL,
	changed_at  INTEGER NOT NULL,
	version     INTEGER NOT NULL
);
CREATE INDEX theme_changes_shop ON theme_changes (shop_id, changed_at);
INSERT INTO theme_changes (change_id, shop_id, theme_id, external_id, name, topic, changed_at, version)
	SELECT 'last_' || theme_id, shop_id, theme_id, external_id, name, last_topic, updated_at, version FROM themes;
`

// billingAttemptsIndexSQL: the subscription summary reads a shop's
// billing attempts of a window.
const billingAttemptsIndexSQL = `
CREATE INDEX billing_attempts_shop_attempted ON billing_attempts (shop_id, attempted_at);
`

// cases are the commerce projector's dispatch: the event types it folds
// are read from them (Projector.Types).
var cases = projections.NewTxCases(append([]projections.TxCase{
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID,
			readmodel.ShopRows("orders"), readmodel.ShopRows("refunds"), readmodel.ShopRows("products"),
			readmodel.ShopRows("product_variants"), readmodel.ShopRows("inventory_levels"), readmodel.ShopRows("carts"),
			readmodel.ShopRows("checkouts"), readmodel.ShopRows("subscription_contracts"),
			readmodel.ShopRows("billing_attempts"), readmodel.ShopRows("themes"), readmodel.ShopRows("theme_changes"),
			readmodel.ShopRows("privacy_requests"), readmodel.ShopRows("order_actions"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
		return eraseCustomer(ctx, tx, ev)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.OrderRecorded, e *projections.DecodedEvent) error {
		if err := applyOrder(ctx, tx, ev, len(e.Redacted) > 0, int64(e.Position)); err != nil {
			return err
		}
		return confirmCancellation(ctx, tx, ev, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.RefundRecorded, e *projections.DecodedEvent) error {
		if err := applyRefund(ctx, tx, ev, int64(e.Position)); err != nil {
			return err
		}
		return confirmRefund(ctx, tx, ev, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ProductRecorded, e *projections.DecodedEvent) error {
		return applyProduct(ctx, tx, ev, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ProductDeleted, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		_, err := tx.ExecContext(ctx, `UPDATE products SET deleted_at = ?, version = ? WHERE product_id = ? AND version < ?`,
			readmodel.Micros(ev.DeletedAt), pos, ev.ProductID, pos)
		if err == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM product_variants WHERE product_id = ?`, ev.ProductID)
		}
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.InventoryLevelUpdated, e *projections.DecodedEvent) error {
		if ev.Stale {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO inventory_levels (level_id, shop_id, inventory_item_id, location_id, available, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (level_id) DO UPDATE SET available = excluded.available,
			updated_at = excluded.updated_at, version = excluded.version WHERE inventory_levels.version < excluded.version`,
			ev.LevelID, ev.ShopID, ev.InventoryItemID, ev.LocationID, ev.Available, readmodel.Micros(ev.UpdatedAt), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CartRecorded, e *projections.DecodedEvent) error {
		if ev.Stale {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO carts (cart_id, shop_id, lines, line_count, total, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cart_id) DO UPDATE SET lines = excluded.lines, line_count = excluded.line_count,
			total = excluded.total, updated_at = excluded.updated_at, version = excluded.version WHERE carts.version < excluded.version`,
			ev.CartID, ev.ShopID, readmodel.JSONText(ev.Lines, "[]"), len(ev.Lines), int64(ev.Total), readmodel.Micros(ev.CreatedAt),
			readmodel.Micros(ev.UpdatedAt), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CheckoutRecorded, e *projections.DecodedEvent) error {
		return applyCheckout(ctx, tx, ev, len(e.Redacted) > 0, int64(e.Position))
	}),
	// A contract first known from a billing attempt (created_at 0) takes
	// its start from its first snapshot.
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.SubscriptionContractRecorded, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO subscription_contracts (subscription_id, shop_id, external_id, customer_id, status,
			interval, interval_count, currency, origin_order_id, churned_at, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (subscription_id) DO UPDATE SET customer_id = excluded.customer_id,
			status = excluded.status, interval = excluded.interval, interval_count = excluded.interval_count, currency = excluded.currency,
			origin_order_id = excluded.origin_order_id,
			created_at = CASE WHEN subscription_contracts.created_at = 0 THEN excluded.created_at ELSE subscription_contracts.created_at END,
			churned_at = CASE WHEN excluded.churned_at > 0 THEN excluded.churned_at WHEN excluded.status IN ('cancelled', 'expired', 'failed')
				THEN subscription_contracts.churned_at ELSE 0 END,
			updated_at = excluded.updated_at, version = excluded.version WHERE subscription_contracts.version < excluded.version`,
			ev.SubscriptionID, ev.ShopID, ev.ExternalID, ev.CustomerID, ev.Status, ev.Interval, ev.IntervalCount, ev.Currency,
			ev.OriginOrderID, readmodel.Micros(ev.ChurnedAt), readmodel.Micros(ev.RecordedAt), readmodel.Micros(ev.RecordedAt), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.BillingAttemptRecorded, e *projections.DecodedEvent) error {
		return applyBillingAttempt(ctx, tx, ev, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ThemeRecorded, e *projections.DecodedEvent) error {
		published := int64(0)
		if ev.Topic == "themes/publish" {
			published = readmodel.Micros(ev.UpdatedAt)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO themes (theme_id, shop_id, external_id, name, role, last_topic, published_at, updated_at, changes, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT (theme_id) DO UPDATE SET name = excluded.name, role = excluded.role,
			last_topic = excluded.last_topic, published_at = MAX(themes.published_at, excluded.published_at),
			updated_at = MAX(themes.updated_at, excluded.updated_at), changes = themes.changes + 1, version = excluded.version
			WHERE themes.version < excluded.version`,
			ev.ThemeID, ev.ShopID, ev.ExternalID, ev.Name, ev.Role, ev.Topic, published, readmodel.Micros(ev.UpdatedAt), int64(e.Position))
		if err != nil {
			return err
		}
		// The change's time: the payload's updated_at, or when the
		// platform sent it when the payload has none.
		at := ev.UpdatedAt
		if at.IsZero() {
			at = e.OccurredAt
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO theme_changes (change_id, shop_id, theme_id, external_id, name, topic, changed_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (change_id) DO NOTHING`,
			e.ID.String(), ev.ShopID, ev.ThemeID, ev.ExternalID, ev.Name, ev.Topic, readmodel.Micros(at), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerDataRequested, e *projections.DecodedEvent) error {
		return insertPrivacyRequest(ctx, tx, &e.Event, ev.ShopID, "customers/data_request", ev.CustomerID, ev.RequestID, ev.OrdersRequested)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerRedactRequested, e *projections.DecodedEvent) error {
		return insertPrivacyRequest(ctx, tx, &e.Event, ev.ShopID, "customers/redact", ev.CustomerID, "", ev.OrdersToRedact)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopRedactRequested, e *projections.DecodedEvent) error {
		return insertPrivacyRequest(ctx, tx, &e.Event, ev.ShopID, "shop/redact", "", "", nil)
	}),
}, append(catalogCases, orderActionCases...)...)...)

// Projector returns the commerce projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.WrapErrors("commerce", apply)
		}),
		// The order lists' indexes and the subscription summary's; the
		// fold finds orders and attempts by key.
		QueryIndexes: []string{"orders_shop_created", "orders_shop_updated", "orders_shop_total", "orders_shop_customer_created",
			"orders_shop_financial_created", "orders_shop_fulfillment_created", "billing_attempts_shop_attempted"},
	}
}

func applyOrder(ctx context.Context, tx *sql.Tx, ev *domain.OrderRecorded, redacted bool, pos int64) error {
	if ev.Stale {
		return nil
	}
	_, err := tx.ExecContext(ctx, `
INSERT INTO orders (order_id, shop_id, external_id, customer_id, name, email, financial_status, fulfillment_status, currency,
	total_price, subtotal_price, total_tax, total_discounts, refunded, lines, source_name, discount_codes, tags,
	landing_site, referring_site, utm, click_ids, created_at, updated_at, processed_at, cancelled_at, last_topic, snapshots,
	redacted, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE order_id = ?),
	?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
ON CONFLICT (order_id) DO UPDATE SET customer_id = excluded.customer_id, name = excluded.name, email = excluded.email,
	financial_status = excluded.financial_status, fulfillment_status = excluded.fulfillment_status, currency = excluded.currency,
	total_price = excluded.total_price, subtotal_price = excluded.subtotal_price, total_tax = excluded.total_tax,
	total_discounts = excluded.total_discounts, lines = excluded.lines, source_name = excluded.source_name,
	discount_codes = excluded.discount_codes, tags = excluded.tags, landing_site = excluded.landing_site,
	referring_site = excluded.referring_site, utm = excluded.utm, click_ids = excluded.click_ids,
	created_at = excluded.created_at, updated_at = excluded.updated_at, processed_at = excluded.processed_at,
	cancelled_at = excluded.cancelled_at, last_topic = excluded.last_topic, snapshots = orders.snapshots + 1,
	redacted = MAX(orders.redacted, excluded.redacted), version = excluded.version
WHERE orders.version < excluded.version`,
		ev.OrderID, ev.ShopID, ev.ExternalID, ev.CustomerID, ev.Name, readmodel.NullIfEmpty(ev.Email), ev.FinancialStatus, ev.FulfillmentStatus, ev.Currency,
		int64(ev.TotalPrice), int64(ev.SubtotalPrice), int64(ev.TotalTax), int64(ev.TotalDiscounts), ev.OrderID,
		readmodel.JSONText(ev.Lines, "[]"), ev.SourceName, readmodel.JSONText(ev.DiscountCodes, "[]"), readmodel.JSONText(ev.Tags, "[]"),
		ev.LandingSite, ev.ReferringSite, readmodel.JSONText(ev.UTM, "{}"), readmodel.JSONText(ev.ClickIDs, "{}"),
		readmodel.Micros(ev.CreatedAt), readmodel.Micros(ev.UpdatedAt), readmodel.Micros(ev.ProcessedAt), readmodel.Micros(ev.CancelledAt), ev.Topic, redacted, pos)
	return err
}

func applyRefund(ctx context.Context, tx *sql.Tx, ev *domain.RefundRecorded, pos int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO refunds (refund_id, shop_id, order_id, amount, currency, lines, created_at, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (refund_id) DO NOTHING`,
		ev.RefundID, ev.ShopID, ev.OrderID, int64(ev.Amount), ev.Currency, readmodel.JSONText(ev.Lines, "[]"), readmodel.Micros(ev.CreatedAt), pos); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE orders SET refunded = (SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE order_id = ?1)
		WHERE order_id = ?1`, ev.OrderID)
	return err
}

func applyProduct(ctx context.Context, tx *sql.Tx, ev *domain.ProductRecorded, pos int64) error {
	if ev.Stale {
		return nil
	}
	res, err := tx.ExecContext(ctx, `
INSERT INTO products (product_id, shop_id, external_id, title, handle, status, vendor, product_type, tags, variants,
	created_at, updated_at, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (product_id) DO UPDATE SET title = excluded.title, handle = excluded.handle, status = excluded.status,
	vendor = excluded.vendor, product_type = excluded.product_type, tags = excluded.tags, variants = excluded.variants,
	created_at = excluded.created_at, updated_at = excluded.updated_at, version = excluded.version
WHERE products.version < excluded.version AND products.deleted_at = 0`,
		ev.ProductID, ev.ShopID, ev.ExternalID, ev.Title, ev.Handle, ev.Status, ev.Vendor, ev.ProductType,
		readmodel.JSONText(ev.Tags, "[]"), readmodel.JSONText(ev.Variants, "[]"), readmodel.Micros(ev.CreatedAt), readmodel.Micros(ev.UpdatedAt), pos)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // an older event replayed, or the product is deleted
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM product_variants WHERE product_id = ?`, ev.ProductID); err != nil {
		return err
	}
	for _, v := range ev.Variants {
		if _, err := tx.ExecContext(ctx, `INSERT INTO product_variants (shop_id, variant_id, product_id, sku, price, inventory_item_id,
			inventory_quantity) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, variant_id) DO UPDATE SET product_id = excluded.product_id,
			sku = excluded.sku, price = excluded.price, inventory_item_id = excluded.inventory_item_id,
			inventory_quantity = excluded.inventory_quantity`,
			ev.ShopID, v.VariantID, ev.ProductID, v.SKU, int64(v.Price), v.InventoryItemID, v.InventoryQuantity); err != nil {
			return err
		}
	}
	return nil
}

func applyCheckout(ctx context.Context, tx *sql.Tx, ev *domain.CheckoutRecorded, redacted bool, pos int64) error {
	if ev.Stale {
		return nil
	}
	_, err := tx.ExecContext(ctx, `
INSERT INTO checkouts (checkout_id, shop_id, customer_id, cart_id, email, total_price, currency, landing_site, referring_site,
	utm, click_ids, created_at, updated_at, completed_at, redacted, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (checkout_id) DO UPDATE SET customer_id = excluded.customer_id, cart_id = excluded.cart_id, email = excluded.email,
	total_price = excluded.total_price, currency = excluded.currency, landing_site = excluded.landing_site,
	referring_site = excluded.referring_site, utm = excluded.utm, click_ids = excluded.click_ids,
	updated_at = excluded.updated_at, completed_at = excluded.completed_at,
	redacted = MAX(checkouts.redacted, excluded.redacted), version = excluded.version
WHERE checkouts.version < excluded.version`,
		ev.CheckoutID, ev.ShopID, ev.CustomerID, ev.CartID, readmodel.NullIfEmpty(ev.Email), int64(ev.TotalPrice), ev.Currency, ev.LandingSite,
		ev.ReferringSite, readmodel.JSONText(ev.UTM, "{}"), readmodel.JSONText(ev.ClickIDs, "{}"), readmodel.Micros(ev.CreatedAt), readmodel.Micros(ev.UpdatedAt),
		readmodel.Micros(ev.CompletedAt), redacted, pos)
	return err
}

func applyBillingAttempt(ctx context.Context, tx *sql.Tx, ev *domain.BillingAttemptRecorded, pos int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO billing_attempts (subscription_id, attempt_id, shop_id, success, order_id,
		error_code, error_message, attempted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		ev.SubscriptionID, ev.AttemptID, ev.ShopID, ev.Success, ev.OrderID, ev.ErrorCode, ev.ErrorMessage, readmodel.Micros(ev.AttemptedAt)); err != nil {
		return err
	}
	billed := int64(0)
	if ev.Success {
		billed = readmodel.Micros(ev.AttemptedAt)
	}
	// A contract the platform has not described yet gets a row of its own
	// from its first attempt; its snapshot fills the rest.
	_, err := tx.ExecContext(ctx, `
INSERT INTO subscription_contracts (subscription_id, shop_id, external_id, dunning_state, failed_attempts, last_attempt_at,
	last_billed_at, version)
VALUES (?, ?, '', ?, ?, ?, ?, ?)
ON CONFLICT (subscription_id) DO UPDATE SET dunning_state = excluded.dunning_state, failed_attempts = excluded.failed_attempts,
	last_attempt_at = MAX(subscription_contracts.last_attempt_at, excluded.last_attempt_at),
	last_billed_at = MAX(subscription_contracts.last_billed_at, excluded.last_billed_at), version = excluded.version
WHERE subscription_contracts.version < excluded.version`,
		ev.SubscriptionID, ev.ShopID, ev.DunningState, ev.FailedAttempts, readmodel.Micros(ev.AttemptedAt), billed, pos)
	return err
}

func insertPrivacyRequest(ctx context.Context, tx *sql.Tx, e *eventlog.Event, shop, kind, customer, requestID string, orders []string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO privacy_requests (event_id, shop_id, kind, customer_id, request_id, orders, received_at, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
		e.ID.String(), shop, kind, customer, requestID, readmodel.JSONText(orders, "[]"), readmodel.Micros(e.OccurredAt), int64(e.Position))
	return err
}
