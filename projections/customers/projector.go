package customers

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

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
`}}

// Projector returns the customers projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Handle:     projections.Decoding(codec, []string{"CustomerCreated", "CustomerUpdated", "CustomerTagsSet"}, apply),
	}
}

func apply(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
	at := e.OccurredAt.UnixMicro()
	redacted := len(d.Redacted) > 0
	switch ev := d.Event.(type) {
	case *domain.CustomerCreated:
		return upsertProfile(ctx, tx, ev.CustomerID, ev.ShopID, &ev.CustomerProfile, redacted, at, e.Position)
	case *domain.CustomerUpdated:
		return upsertProfile(ctx, tx, ev.CustomerID, ev.ShopID, &ev.CustomerProfile, redacted, at, e.Position)
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

func upsertProfile(ctx context.Context, tx *sql.Tx, id, shop string, p *domain.CustomerProfile, redacted bool, at int64, pos eventlog.Position) error {
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
	accepts_marketing, state, currency, orders_count, total_spent, tags, platform_tags,
	platform_created_at, created_at, updated_at, redacted, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (customer_id) DO UPDATE SET
	email = excluded.email, first_name = excluded.first_name, last_name = excluded.last_name,
	phone = excluded.phone, accepts_marketing = excluded.accepts_marketing, state = excluded.state,
	currency = excluded.currency, orders_count = excluded.orders_count, total_spent = excluded.total_spent,
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
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
