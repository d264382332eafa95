package customers

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
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
`}, {Version: 4, SQL: `
-- Marketing consent per customer and channel: the most recent decision,
-- the platform's (from the customer snapshots) or the service's own
-- (CustomerConsentChanged). decided_at is in microseconds.
CREATE TABLE customer_consents (
	customer_id TEXT NOT NULL,
	channel     TEXT NOT NULL,
	shop_id     TEXT NOT NULL,
	state       TEXT NOT NULL,
	source      TEXT NOT NULL,
	message_id  TEXT NOT NULL DEFAULT '',
	decided_at  INTEGER NOT NULL,
	version     INTEGER NOT NULL,
	PRIMARY KEY (customer_id, channel)
) WITHOUT ROWID;
CREATE INDEX customer_consents_shop_channel ON customer_consents (shop_id, channel, customer_id, state, decided_at);
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

// Projector returns the customers projector. now is the clock lifecycle
// stages are computed at (nil: time.Now); its Upkeep moves the stages of
// customers whose last order aged past a threshold.
func Projector(codec *envelope.Codec, now func() time.Time) projections.Projector {
	if now == nil {
		now = time.Now
	}
	p := &projector{now: now}
	batch := projections.DecodingBatch(codec, handledTypes, p.applyBatch)
	return projections.Projector{
		Name:        Name,
		Migrations:  migrations,
		Types:       handledTypes,
		Handle:      projections.OneByOne(batch),
		HandleBatch: batch,
		Upkeep:      func(ctx context.Context, tx *sql.Tx, _ time.Time) error { return AgeStages(ctx, tx, p.now()) },
		// The list pages' indexes; the fold finds customers and their
		// orders by key.
		QueryIndexes: []string{"customers_shop_created", "customers_shop_last_order", "customers_shop_spent",
			"customers_shop_stage_created", "customers_shop_stage_last_order", "customers_shop_stage_spent",
			"customer_consents_shop_channel"},
	}
}

type projector struct {
	now func() time.Time
}

// applyBatch folds events in memory (fold) and writes each row they
// change once; a ShopErased, which deletes rows by shop, is applied on its
// own between the folds of the events before and after it.
func (p *projector) applyBatch(ctx context.Context, tx *sql.Tx, events []projections.DecodedEvent) error {
	atRisk, churned := bounds(p.now())
	for len(events) > 0 {
		n := 0
		for n < len(events) {
			if _, ok := events[n].Decoded.Event.(*domain.ShopErased); ok {
				break
			}
			n++
		}
		if n > 0 {
			r, err := load(ctx, tx, keys(events[:n]))
			if err != nil {
				return err
			}
			if err := write(ctx, tx, fold(r, events[:n], atRisk, churned)); err != nil {
				return err
			}
		}
		if n < len(events) {
			ev := events[n].Decoded.Event.(*domain.ShopErased)
			if err := readmodel.DeleteShopRows(ctx, tx, ev.ShopID,
				readmodel.ChildRows("customer_refunds", "order_id", "customer_orders", "order_id"),
				readmodel.ShopRows("customer_orders"), readmodel.ShopRows("customers"), readmodel.ShopRows("customer_consents")); err != nil {
				return err
			}
			n++
		}
		events = events[n:]
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
