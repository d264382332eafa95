package reviews

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "reviews"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE reviews (
	review_id    TEXT PRIMARY KEY,
	shop_id      TEXT NOT NULL,
	customer_id  TEXT NOT NULL,
	product_id   TEXT NOT NULL,
	order_id     TEXT NOT NULL DEFAULT '',
	verified     INTEGER NOT NULL,
	status       TEXT NOT NULL,
	rating       INTEGER NOT NULL,
	title        TEXT,
	body         TEXT,
	author_name  TEXT,
	reply        TEXT,
	replied_at   INTEGER NOT NULL DEFAULT 0,
	reason       TEXT NOT NULL DEFAULT '',
	redacted     INTEGER NOT NULL DEFAULT 0,
	submitted_at INTEGER NOT NULL,
	position     INTEGER NOT NULL,
	version      INTEGER NOT NULL
);
CREATE INDEX reviews_product_new ON reviews (shop_id, product_id, status, position);
CREATE INDEX reviews_product_rating ON reviews (shop_id, product_id, status, rating, position);
CREATE INDEX reviews_shop_new ON reviews (shop_id, status, position);
CREATE INDEX reviews_shop_rating ON reviews (shop_id, status, rating, position);
CREATE INDEX reviews_customer ON reviews (shop_id, customer_id);
CREATE TABLE review_settings (
	shop_id          TEXT PRIMARY KEY,
	enabled          INTEGER NOT NULL,
	require_verified INTEGER NOT NULL,
	min_rating       INTEGER NOT NULL,
	set_at           INTEGER NOT NULL,
	version          INTEGER NOT NULL
);
`}, {Version: 2, SQL: `
ALTER TABLE reviews ADD COLUMN helpful_count INTEGER NOT NULL DEFAULT 0;
CREATE INDEX reviews_product_helpful ON reviews (shop_id, product_id, status, helpful_count, position);
CREATE INDEX reviews_shop_helpful ON reviews (shop_id, status, helpful_count, position);
`}}

// Projector returns the reviews projector.
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

// cases fold each event type. Every write is idempotent: a row carries the
// position of the event that last changed it (version) and only a later
// position changes it.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("reviews"), readmodel.ShopRows("review_settings"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
		// The rating, status and verified badge stay: they are not the
		// person's, and the shop's summary keeps counting them.
		return exec(ctx, tx, `UPDATE reviews SET title = NULL, body = NULL, author_name = NULL, redacted = 1
			WHERE shop_id = ? AND customer_id = ?`, ev.ShopID, ev.CustomerID)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ReviewSubmitted, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		redacted := len(e.Redacted) > 0
		return exec(ctx, tx, `INSERT INTO reviews (review_id, shop_id, customer_id, product_id, order_id, verified, status, rating,
			title, body, author_name, redacted, submitted_at, position, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (review_id) DO NOTHING`,
			ev.ReviewID, ev.ShopID, ev.CustomerID, ev.ProductID, ev.OrderID, ev.Verified, domain.ReviewStatusPending, ev.Rating,
			nullUnless(ev.Title, !redacted), nullUnless(ev.Body, !redacted), nullUnless(ev.AuthorName, !redacted), redacted,
			ev.SubmittedAt.UnixMicro(), pos, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ReviewPublished, e *projections.DecodedEvent) error {
		return setStatus(ctx, tx, ev.ShopID, ev.ReviewID, domain.ReviewStatusPublished, "", int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ReviewRejected, e *projections.DecodedEvent) error {
		return setStatus(ctx, tx, ev.ShopID, ev.ReviewID, domain.ReviewStatusRejected, ev.Reason, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ReviewRuleSet, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		return exec(ctx, tx, `INSERT INTO review_settings (shop_id, enabled, require_verified, min_rating, set_at, version)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id) DO UPDATE SET enabled = excluded.enabled,
			require_verified = excluded.require_verified, min_rating = excluded.min_rating, set_at = excluded.set_at,
			version = excluded.version WHERE review_settings.version < excluded.version`,
			ev.ShopID, ev.Enabled, ev.RequireVerified, ev.MinRating, ev.SetAt.UnixMicro(), pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ReviewMarkedHelpful, e *projections.DecodedEvent) error {
		// Each vote is its own stream's only event: counted once, as the
		// row's version only moves forward.
		pos := int64(e.Position)
		return exec(ctx, tx, `UPDATE reviews SET helpful_count = helpful_count + 1, version = ? WHERE review_id = ? AND shop_id = ?
			AND version < ?`, pos, ev.ReviewID, ev.ShopID, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ReviewReplied, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		return exec(ctx, tx, `UPDATE reviews SET reply = ?, replied_at = ?, version = ? WHERE review_id = ? AND shop_id = ? AND version < ?`,
			ev.Reply, ev.RepliedAt.UnixMicro(), pos, ev.ReviewID, ev.ShopID, pos)
	}),
)

func setStatus(ctx context.Context, tx *sql.Tx, shop, id, status, reason string, pos int64) error {
	return exec(ctx, tx, `UPDATE reviews SET status = ?, reason = ?, version = ? WHERE review_id = ? AND shop_id = ? AND version < ?`,
		status, reason, pos, id, shop, pos)
}

// nullUnless is s, or NULL when keep is false or s is empty.
func nullUnless(s string, keep bool) any {
	if !keep || s == "" {
		return nil
	}
	return s
}

func exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("reviews: %w", err)
	}
	return nil
}
