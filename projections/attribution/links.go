package attribution

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
)

// linksAndSettingsSchema is the read model's second migration: identity
// links, the keys that make them, and the shops' attribution settings.
//
// identity_keys holds what each side reported of a shared key (a cart's
// crt_… id, a checkout token's ctk_… id): the pixel's anonymous ids on one
// side ("visitor"), the checkout webhooks' customers on the other
// ("customer"). identity_links holds the pairs: an anonymous id and a
// customer id that met on a key, or that a pixel event of a logged-in
// customer named together. Both sides may arrive in either order; the link
// is made when the second does, so the result does not depend on the order.
// version is the position of the event that made the row.
const linksAndSettingsSchema = `
CREATE TABLE identity_keys (
	shop_id   TEXT NOT NULL,
	link_key  TEXT NOT NULL,
	side      TEXT NOT NULL,
	holder_id TEXT NOT NULL,
	version   INTEGER NOT NULL,
	PRIMARY KEY (shop_id, link_key, side, holder_id)
);
CREATE INDEX identity_keys_holder ON identity_keys (shop_id, side, holder_id);
CREATE TABLE identity_links (
	shop_id      TEXT NOT NULL,
	customer_id  TEXT NOT NULL,
	anonymous_id TEXT NOT NULL,
	version      INTEGER NOT NULL,
	PRIMARY KEY (shop_id, customer_id, anonymous_id)
);
CREATE INDEX identity_links_anonymous ON identity_links (shop_id, anonymous_id);
CREATE TABLE attribution_settings (
	shop_id          TEXT PRIMARY KEY,
	lookback_seconds INTEGER NOT NULL,
	changed_at       INTEGER NOT NULL,
	version          INTEGER NOT NULL
);
`

// Sides of an identity key.
const (
	sideVisitor  = "visitor"
	sideCustomer = "customer"
)

// linkVisitor records what a pixel event says of its visitor: a direct
// link when a customer is logged in, and the visitor's side of its cart
// and checkout keys.
func linkVisitor(ctx context.Context, tx *sql.Tx, ev *domain.StorefrontEventRecorded, pos int64) error {
	if ev.AnonymousID == "" {
		return nil
	}
	if ev.CustomerID != "" {
		if err := insertLink(ctx, tx, ev.ShopID, ev.CustomerID, ev.AnonymousID, pos); err != nil {
			return err
		}
	}
	for _, key := range []string{ev.CartID, ev.CheckoutTokenID} {
		if err := addKey(ctx, tx, ev.ShopID, key, sideVisitor, ev.AnonymousID, pos); err != nil {
			return err
		}
	}
	return nil
}

// linkCheckout records the customer's side of a checkout's cart and token
// keys. A guest checkout links nobody.
func linkCheckout(ctx context.Context, tx *sql.Tx, ev *domain.CheckoutRecorded, pos int64) error {
	if ev.CustomerID == "" {
		return nil
	}
	for _, key := range []string{ev.CartID, ev.TokenID} {
		if err := addKey(ctx, tx, ev.ShopID, key, sideCustomer, ev.CustomerID, pos); err != nil {
			return err
		}
	}
	return nil
}

// addKey stores one side of a key and links it with every holder of the
// other side already stored. A side stored before adds nothing.
func addKey(ctx context.Context, tx *sql.Tx, shop, key, side, holder string, pos int64) error {
	if key == "" || holder == "" {
		return nil
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO identity_keys (shop_id, link_key, side, holder_id, version) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (shop_id, link_key, side, holder_id) DO NOTHING`, shop, key, side, holder, pos)
	if err != nil {
		return fmt.Errorf("identity key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	// holder is one column of the new links, the other side's holders the
	// other.
	other, customerCol, anonymousCol := sideCustomer, "holder_id", "?"
	if side == sideCustomer {
		other, customerCol, anonymousCol = sideVisitor, "?", "holder_id"
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO identity_links (shop_id, customer_id, anonymous_id, version)
		SELECT shop_id, `+customerCol+`, `+anonymousCol+`, ? FROM identity_keys WHERE shop_id = ? AND link_key = ? AND side = ?
		ON CONFLICT (shop_id, customer_id, anonymous_id) DO NOTHING`, holder, pos, shop, key, other)
	if err != nil {
		return fmt.Errorf("identity links of a key: %w", err)
	}
	return nil
}

func insertLink(ctx context.Context, tx *sql.Tx, shop, customer, anonymous string, pos int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO identity_links (shop_id, customer_id, anonymous_id, version) VALUES (?, ?, ?, ?)
		ON CONFLICT (shop_id, customer_id, anonymous_id) DO NOTHING`, shop, customer, anonymous, pos)
	if err != nil {
		return fmt.Errorf("identity link: %w", err)
	}
	return nil
}

// unlinkCustomer deletes a customer's identity links and keys
// (customers/redact: the specification's "identity links deleted"). The
// visitor's touchpoints stay, anonymous; credits already computed change at
// the order's next snapshot or refund, like any late fact.
func unlinkCustomer(ctx context.Context, tx *sql.Tx, shop, customer string) error {
	if customer == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM identity_links WHERE shop_id = ? AND customer_id = ?`, shop, customer); err != nil {
		return fmt.Errorf("delete identity links: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM identity_keys WHERE shop_id = ? AND side = ? AND holder_id = ?`,
		shop, sideCustomer, customer); err != nil {
		return fmt.Errorf("delete identity keys: %w", err)
	}
	return nil
}
