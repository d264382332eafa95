package customers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "customers"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE customers (
	customer_id         TEXT PRIMARY KEY,
	shop_id             TEXT NOT NULL,
	external_id         TEXT NOT NULL,
	email               TEXT,
	first_name          TEXT,
	last_name           TEXT,
	phone               TEXT,
	accepts_marketing   INTEGER NOT NULL DEFAULT 0,
	state               TEXT NOT NULL DEFAULT '',
	currency            TEXT NOT NULL DEFAULT '',
	orders_count        INTEGER NOT NULL DEFAULT 0,
	total_spent         INTEGER NOT NULL DEFAULT 0,
	last_order_at       INTEGER NOT NULL DEFAULT 0,
	tags                TEXT NOT NULL DEFAULT '[]',
	platform_tags       TEXT NOT NULL DEFAULT '[]',
	platform_created_at INTEGER NOT NULL DEFAULT 0,
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	redacted            INTEGER NOT NULL DEFAULT 0,
	version             INTEGER NOT NULL
);
CREATE INDEX customers_shop_created ON customers (shop_id, created_at, customer_id);
CREATE INDEX customers_shop_last_order ON customers (shop_id, last_order_at, customer_id);
CREATE INDEX customers_shop_spent ON customers (shop_id, total_spent, customer_id);
`}, {Version: 2, SQL: `
-- The orders and refunds of each customer, from which its order count,
-- total spent and last order are computed once the service has received
-- any of its orders; before that the profile's own figures stand.
CREATE TABLE customer_orders (
	order_id    TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	customer_id TEXT NOT NULL,
	total       INTEGER NOT NULL,
	refunded    INTEGER NOT NULL DEFAULT 0,
	cancelled   INTEGER NOT NULL DEFAULT 0,
	ordered_at  INTEGER NOT NULL,
	version     INTEGER NOT NULL
);
CREATE INDEX customer_orders_customer ON customer_orders (customer_id);
CREATE TABLE customer_refunds (
	refund_id TEXT PRIMARY KEY,
	order_id  TEXT NOT NULL,
	amount    INTEGER NOT NULL
);
CREATE INDEX customer_refunds_order ON customer_refunds (order_id);
ALTER TABLE customers ADD COLUMN profile_orders_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE customers ADD COLUMN profile_total_spent INTEGER NOT NULL DEFAULT 0;
UPDATE customers SET profile_orders_count = orders_count, profile_total_spent = total_spent;
`}, {Version: 3, SQL: `
-- The lifecycle stage as of the last change or the last upkeep (at most
-- projections.DefaultUpkeepEvery ago), so a stage filter walks an index
-- in the order asked; queries still check the exact condition at their
-- own instant.
ALTER TABLE customers ADD COLUMN stage TEXT NOT NULL DEFAULT '';
UPDATE customers SET stage = ` + stageExpr("orders_count", "last_order_at",
	"(CAST(strftime('%s', 'now') AS INTEGER) - 7776000) * 1000000",
	"(CAST(strftime('%s', 'now') AS INTEGER) - 15552000) * 1000000") + `;
CREATE INDEX customers_shop_stage_created ON customers (shop_id, stage, created_at, customer_id);
CREATE INDEX customers_shop_stage_last_order ON customers (shop_id, stage, last_order_at, customer_id);
CREATE INDEX customers_shop_stage_spent ON customers (shop_id, stage, total_spent, customer_id);
`}}

// stageExpr is domain.LifecycleStage as an SQL expression over an order
// count and a last-order time (microseconds, 0 when unknown), given the
// at-risk and churned boundaries (last orders before them are at risk,
// respectively churned).
func stageExpr(count, last, atRisk, churned string) string {
	return fmt.Sprintf(`CASE WHEN %[1]s <= 0 THEN '%[5]s'
	WHEN %[2]s <> 0 AND %[2]s < %[4]s THEN '%[6]s'
	WHEN %[2]s <> 0 AND %[2]s < %[3]s THEN '%[7]s'
	WHEN %[1]s >= %[8]d THEN '%[9]s' WHEN %[1]s = 1 THEN '%[10]s' ELSE '%[11]s' END`,
		count, last, atRisk, churned, domain.StageProspect, domain.StageChurned, domain.StageAtRisk,
		domain.LoyalMinOrders, domain.StageLoyal, domain.StageNew, domain.StageActive)
}

// bounds are the at-risk and churned boundaries at now, in microseconds.
func bounds(now time.Time) (atRisk, churned int64) {
	return now.Add(-domain.AtRiskAfter).UnixMicro(), now.Add(-domain.ChurnedAfter).UnixMicro()
}

var handledTypes = []string{"ShopErased", "CustomerErased", "CustomerCreated", "CustomerUpdated", "CustomerTagsSet", "OrderRecorded", "RefundRecorded"}

// Projector returns the customers projector. now is the clock lifecycle
// stages are computed at (nil: time.Now); its Upkeep moves the stages of
// customers whose last order aged past a threshold.
func Projector(codec *envelope.Codec, now func() time.Time) projections.Projector {
	if now == nil {
		now = time.Now
	}
	p := &projector{now: now}
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      handledTypes,
		Handle:     projections.Decoding(codec, handledTypes, p.apply),
		Upkeep:     func(ctx context.Context, tx *sql.Tx, _ time.Time) error { return AgeStages(ctx, tx, p.now()) },
		// The list pages' indexes; the fold finds customers and their
		// orders by key.
		QueryIndexes: []string{"customers_shop_created", "customers_shop_last_order", "customers_shop_spent",
			"customers_shop_stage_created", "customers_shop_stage_last_order", "customers_shop_stage_spent"},
	}
}

type projector struct {
	now func() time.Time
}

func (p *projector) apply(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
	atRisk, churned := bounds(p.now())
	t := totals{atRisk: atRisk, churned: churned}
	at := e.OccurredAt.UnixMicro()
	redacted := len(d.Redacted) > 0
	switch ev := d.Event.(type) {
	case *domain.ShopErased:
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID,
			readmodel.ChildRows("customer_refunds", "order_id", "customer_orders", "order_id"),
			readmodel.ShopRows("customer_orders"), readmodel.ShopRows("customers"))
	case *domain.CustomerErased:
		return eraseCustomer(ctx, tx, ev, int64(e.Position))
	case *domain.CustomerCreated:
		return t.upsertProfile(ctx, tx, ev.CustomerID, ev.ShopID, &ev.CustomerProfile, redacted, at, e.Position)
	case *domain.CustomerUpdated:
		if ev.Stale {
			return nil // kept in the log, older than the profile shown
		}
		return t.upsertProfile(ctx, tx, ev.CustomerID, ev.ShopID, &ev.CustomerProfile, redacted, at, e.Position)
	case *domain.OrderRecorded:
		return t.applyOrder(ctx, tx, ev, e.Position)
	case *domain.RefundRecorded:
		return t.applyRefund(ctx, tx, ev)
	case *domain.CustomerTagsSet:
		tags, _ := json.Marshal(ev.Tags)
		_, err := tx.ExecContext(ctx, `UPDATE customers SET tags = ?, updated_at = ?, version = ?
			WHERE customer_id = ? AND shop_id = ? AND version < ?`,
			string(tags), at, e.Position, ev.CustomerID, ev.ShopID, e.Position)
		if err != nil {
			return fmt.Errorf("set tags: %w", err)
		}
	}
	return nil
}

func (t totals) upsertProfile(ctx context.Context, tx *sql.Tx, id, shop string, p *domain.CustomerProfile, redacted bool, at int64, pos eventlog.Position) error {
	platformTags, _ := json.Marshal(nonNil(p.PlatformTags))
	// created_at is when the customer was created on the platform when it
	// says so, else when the service first heard of it; it never changes
	// afterwards, so cursors over it are stable.
	var platformCreated int64
	created := at
	if !p.PlatformCreated.IsZero() {
		platformCreated = p.PlatformCreated.UnixMicro()
		created = platformCreated
	}
	// tags start as the platform's tags; afterwards only the admin API
	// changes them, so an update keeps the existing tags.
	_, err := tx.ExecContext(ctx, `
INSERT INTO customers (customer_id, shop_id, external_id, email, first_name, last_name, phone,
	accepts_marketing, state, currency, profile_orders_count, profile_total_spent, tags, platform_tags,
	platform_created_at, created_at, updated_at, redacted, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (customer_id) DO UPDATE SET
	email = excluded.email, first_name = excluded.first_name, last_name = excluded.last_name,
	phone = excluded.phone, accepts_marketing = excluded.accepts_marketing, state = excluded.state,
	currency = excluded.currency, profile_orders_count = excluded.profile_orders_count,
	profile_total_spent = excluded.profile_total_spent,
	platform_tags = excluded.platform_tags, platform_created_at = excluded.platform_created_at,
	updated_at = excluded.updated_at, redacted = MAX(customers.redacted, excluded.redacted),
	version = excluded.version
WHERE customers.version < excluded.version`,
		id, shop, p.ExternalID, p.Email, p.FirstName, p.LastName, p.Phone,
		p.AcceptsMarketing, p.State, p.Currency, p.OrdersCount, int64(p.TotalSpent), string(platformTags), string(platformTags),
		platformCreated, created, at, redacted, pos)
	if err != nil {
		return fmt.Errorf("upsert customer: %w", err)
	}
	return t.refresh(ctx, tx, id)
}

// applyOrder keeps an order of a customer and refreshes the customer's
// figures (and those of a customer the order moved away from).
func (t totals) applyOrder(ctx context.Context, tx *sql.Tx, ev *domain.OrderRecorded, pos eventlog.Position) error {
	if ev.Stale {
		return nil
	}
	var previous string
	err := tx.QueryRowContext(ctx, `SELECT customer_id FROM customer_orders WHERE order_id = ?`, ev.OrderID).Scan(&previous)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("order owner: %w", err)
	}
	if ev.CustomerID == "" && previous == "" {
		return nil // a guest order: no customer to count it for
	}
	orderedAt := ev.CreatedAt
	if orderedAt.IsZero() {
		orderedAt = ev.ProcessedAt
	}
	_, err = tx.ExecContext(ctx, `
INSERT INTO customer_orders (order_id, shop_id, customer_id, total, refunded, cancelled, ordered_at, version)
VALUES (?, ?, ?, ?, (SELECT COALESCE(SUM(amount), 0) FROM customer_refunds WHERE order_id = ?), ?, ?, ?)
ON CONFLICT (order_id) DO UPDATE SET customer_id = excluded.customer_id, total = excluded.total,
	cancelled = excluded.cancelled, ordered_at = excluded.ordered_at, version = excluded.version
WHERE customer_orders.version < excluded.version`,
		ev.OrderID, ev.ShopID, ev.CustomerID, int64(ev.TotalPrice), ev.OrderID, !ev.CancelledAt.IsZero(), orderedAt.UnixMicro(), pos)
	if err != nil {
		return fmt.Errorf("customer order: %w", err)
	}
	if previous != "" && previous != ev.CustomerID {
		if err := t.refresh(ctx, tx, previous); err != nil {
			return err
		}
	}
	return t.refresh(ctx, tx, ev.CustomerID)
}

// applyRefund keeps a refund and lowers its customer's total spent.
func (t totals) applyRefund(ctx context.Context, tx *sql.Tx, ev *domain.RefundRecorded) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO customer_refunds (refund_id, order_id, amount) VALUES (?, ?, ?)
		ON CONFLICT (refund_id) DO NOTHING`, ev.RefundID, ev.OrderID, int64(ev.Amount)); err != nil {
		return fmt.Errorf("customer refund: %w", err)
	}
	var customer string
	err := tx.QueryRowContext(ctx, `UPDATE customer_orders
		SET refunded = (SELECT COALESCE(SUM(amount), 0) FROM customer_refunds WHERE order_id = ?)
		WHERE order_id = ? RETURNING customer_id`, ev.OrderID, ev.OrderID).Scan(&customer)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the order is not here yet (or is a guest's): it picks the refund up when it comes
	}
	if err != nil {
		return fmt.Errorf("refund order: %w", err)
	}
	return t.refresh(ctx, tx, customer)
}

// totals refreshes customers' figures at the boundaries of one instant.
type totals struct {
	atRisk, churned int64
}

// refreshSQL sets a customer's order count, total spent, last order and
// lifecycle stage from the orders received (cancelled orders do not count;
// refunds lower the total), or from its profile when no order of it was
// received. ?1 is the customer, ?2 and ?3 the at-risk and churned
// boundaries.
var refreshSQL = `
WITH s AS (
	SELECT COUNT(*) AS seen,
		COALESCE(SUM(CASE WHEN cancelled = 0 THEN 1 ELSE 0 END), 0) AS live,
		COALESCE(SUM(CASE WHEN cancelled = 0 THEN total - refunded ELSE 0 END), 0) AS spent,
		COALESCE(MAX(CASE WHEN cancelled = 0 THEN ordered_at END), 0) AS last
	FROM customer_orders WHERE customer_id = ?1),
n AS (
	SELECT CASE WHEN s.seen > 0 THEN s.live ELSE c.profile_orders_count END AS orders,
		CASE WHEN s.seen > 0 THEN s.spent ELSE c.profile_total_spent END AS spent,
		s.last AS last
	FROM s, customers c WHERE c.customer_id = ?1)
UPDATE customers SET
	orders_count  = n.orders,
	total_spent   = n.spent,
	last_order_at = n.last,
	stage         = ` + stageExpr("n.orders", "n.last", "?2", "?3") + `
FROM n WHERE customer_id = ?1`

func (t totals) refresh(ctx context.Context, tx *sql.Tx, customer string) error {
	if customer == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, refreshSQL, customer, t.atRisk, t.churned); err != nil {
		return fmt.Errorf("customer totals: %w", err)
	}
	return nil
}

// AgeStages moves the lifecycle stage of every customer whose last order
// has aged past the at-risk or churned threshold at now (the only way a
// stage changes without an event). It walks the stage indexes shop by
// shop, so it touches only the customers that change.
func AgeStages(ctx context.Context, tx *sql.Tx, now time.Time) error {
	atRisk, churned := bounds(now)
	shop := ""
	for {
		var next sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT MIN(shop_id) FROM customers WHERE shop_id > ?`, shop).Scan(&next); err != nil {
			return fmt.Errorf("age stages: %w", err)
		}
		if !next.Valid {
			return nil
		}
		shop = next.String
		for _, from := range []string{domain.StageNew, domain.StageActive, domain.StageLoyal, domain.StageAtRisk} {
			// Recent customers change once their last order is older than
			// the at-risk boundary; at-risk ones once it is older than the
			// churned one.
			older := atRisk
			if from == domain.StageAtRisk {
				older = churned
			}
			if _, err := tx.ExecContext(ctx, `UPDATE customers
				SET stage = CASE WHEN last_order_at < ?4 THEN ?5 ELSE ?6 END
				WHERE shop_id = ?1 AND stage = ?2 AND last_order_at > 0 AND last_order_at < ?3`,
				shop, from, older, churned, domain.StageChurned, domain.StageAtRisk); err != nil {
				return fmt.Errorf("age stages of %s: %w", shop, err)
			}
		}
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
