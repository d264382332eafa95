// Package attribution is the read model of marketing attribution per shop:
// the touchpoints of customers and pixel visitors (checkouts, orders'
// landing sites, the storefront pixel's landings), one row per order, and
// the credit each touchpoint of an order earns under the six models of the
// pure package attribution.
//
// An order's credits are computed when the order (or a refund of it) is
// folded, from the touchpoints the read model has at that moment: the
// touchpoints of the customer and of the visitors linked to the customer in
// the shop's lookback window, one per session, and the order's own
// landing. A touchpoint
// folded after its order (a late checkout snapshot, say) does not change
// the credits of orders already folded; the next snapshot or refund of the
// order does. Pixel touchpoints are kept under the visitor's anonymous id;
// identity links (links.go) tie an anonymous id to a customer, from a pixel
// event of a logged-in customer or from a cart or checkout token the pixel
// and a checkout webhook both carry, and from then on the visitor's
// touchpoints count for the customer's orders like the customer's own
// (customers/redact deletes the customer's links). The lookback window is
// the shop's (AttributionSettingsChanged, settings.go), the projector's
// default (30 days) until one is recorded; like a late touchpoint, a link
// or a new window changes an order's credits at its next snapshot or
// refund. Only pixel events that carry
// landing data (UTM parameters, a click id or an outside referrer) are kept
// as touchpoints; internal navigation is not one. Touchpoints keep no
// personal data beyond ids: no URL query besides attribution parameters,
// the referrer's host only. Everything is deterministic, so a replay gives
// equal rows.
package attribution

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	attr "github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name.
const Name = "attribution"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE touchpoints (
	touchpoint_id TEXT PRIMARY KEY,
	shop_id       TEXT NOT NULL,
	customer_id   TEXT NOT NULL DEFAULT '',
	anonymous_id  TEXT NOT NULL DEFAULT '',
	occurred_at   INTEGER NOT NULL,
	kind          TEXT NOT NULL,
	channel       TEXT NOT NULL,
	source        TEXT NOT NULL DEFAULT '',
	campaign      TEXT NOT NULL DEFAULT '',
	landing_path  TEXT NOT NULL DEFAULT '',
	referrer_host TEXT NOT NULL DEFAULT '',
	utm_source    TEXT NOT NULL DEFAULT '',
	utm_medium    TEXT NOT NULL DEFAULT '',
	utm_campaign  TEXT NOT NULL DEFAULT '',
	utm_term      TEXT NOT NULL DEFAULT '',
	utm_content   TEXT NOT NULL DEFAULT '',
	click_id_kind TEXT NOT NULL DEFAULT '',
	version       INTEGER NOT NULL
);
CREATE INDEX touchpoints_customer ON touchpoints (shop_id, customer_id, occurred_at);
CREATE INDEX touchpoints_anonymous ON touchpoints (shop_id, anonymous_id, occurred_at);
CREATE TABLE attribution_orders (
	order_id    TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	customer_id TEXT NOT NULL DEFAULT '',
	ordered_at  INTEGER NOT NULL,
	revenue     INTEGER NOT NULL DEFAULT 0,
	refunded    INTEGER NOT NULL DEFAULT 0,
	currency    TEXT NOT NULL DEFAULT '',
	version     INTEGER NOT NULL
);
CREATE INDEX attribution_orders_shop_ordered ON attribution_orders (shop_id, ordered_at, order_id);
CREATE TABLE attribution_refunds (
	refund_id TEXT PRIMARY KEY,
	shop_id   TEXT NOT NULL,
	order_id  TEXT NOT NULL,
	amount    INTEGER NOT NULL
);
CREATE INDEX attribution_refunds_order ON attribution_refunds (order_id);
CREATE TABLE attribution_credits (
	order_id      TEXT NOT NULL,
	model         TEXT NOT NULL,
	touchpoint_id TEXT NOT NULL,
	shop_id       TEXT NOT NULL,
	position      INTEGER NOT NULL,
	channel       TEXT NOT NULL,
	source        TEXT NOT NULL DEFAULT '',
	campaign      TEXT NOT NULL DEFAULT '',
	weight        REAL NOT NULL,
	revenue       INTEGER NOT NULL,
	refunded      INTEGER NOT NULL,
	PRIMARY KEY (order_id, model, touchpoint_id)
);
`}, {Version: 2, SQL: linksAndSettingsSchema}, {Version: 3, SQL: creditsByOrder}}

// creditsByOrder keeps an order's credits together, model by model, in
// touch order (a table clustered on its key, without rowid): a page of
// records or a summary reads each order's credits in one place instead of
// one b-tree lookup per credit. (position is unique per order and model.)
const creditsByOrder = `
CREATE TABLE attribution_credits_v3 (
	order_id      TEXT NOT NULL,
	model         TEXT NOT NULL,
	position      INTEGER NOT NULL,
	touchpoint_id TEXT NOT NULL,
	shop_id       TEXT NOT NULL,
	channel       TEXT NOT NULL,
	source        TEXT NOT NULL DEFAULT '',
	campaign      TEXT NOT NULL DEFAULT '',
	weight        REAL NOT NULL,
	revenue       INTEGER NOT NULL,
	refunded      INTEGER NOT NULL,
	PRIMARY KEY (order_id, model, position)
) WITHOUT ROWID;
INSERT INTO attribution_credits_v3 (order_id, model, position, touchpoint_id, shop_id, channel, source, campaign, weight, revenue, refunded)
	SELECT order_id, model, position, touchpoint_id, shop_id, channel, source, campaign, weight, revenue, refunded FROM attribution_credits;
DROP TABLE attribution_credits;
ALTER TABLE attribution_credits_v3 RENAME TO attribution_credits;
`

// Projector returns the attribution projector with the default settings
// (attribution.Config's defaults).
func Projector(codec *envelope.Codec) projections.Projector {
	return ProjectorWith(codec, attr.Config{})
}

// ProjectorWith returns the attribution projector with cfg.
func ProjectorWith(codec *envelope.Codec, cfg attr.Config) projections.Projector {
	p := &projector{cfg: cfg.WithDefaults()}
	cases := p.cases()
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.WrapErrors("attribution", apply)
		}),
		// The records page's index; the fold finds orders by key.
		QueryIndexes: []string{"attribution_orders_shop_ordered"},
	}
}

type projector struct{ cfg attr.Config }

// cases are the projector's dispatch: the event types it folds are read
// from them (Projector.Types).
func (p *projector) cases() projections.TxCases {
	return projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID,
				readmodel.ShopRows("identity_keys"), readmodel.ShopRows("identity_links"),
				readmodel.ShopRows("attribution_settings"), readmodel.ShopRows("touchpoints"),
				readmodel.ShopRows("attribution_orders"), readmodel.ShopRows("attribution_refunds"),
				readmodel.ShopRows("attribution_credits"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
			return unlinkCustomer(ctx, tx, ev.ShopID, ev.CustomerID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CheckoutRecorded, e *projections.DecodedEvent) error {
			pos := int64(e.Position)
			if tp, ok := attr.FromCheckout(ev); ok {
				if err := upsertTouchpoint(ctx, tx, &tp, pos); err != nil {
					return err
				}
			}
			return linkCheckout(ctx, tx, ev, pos)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.StorefrontEventRecorded, e *projections.DecodedEvent) error {
			pos := int64(e.Position)
			tp := attr.FromStorefrontEvent(e.ID.String(), ev)
			if tp.UTM != (attr.UTM{}) || tp.ClickIDs != (attr.ClickIDs{}) || tp.ReferrerHost != "" {
				if err := upsertTouchpoint(ctx, tx, &tp, pos); err != nil {
					return err
				}
			}
			return linkVisitor(ctx, tx, ev, pos)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.OrderRecorded, e *projections.DecodedEvent) error {
			return p.applyOrder(ctx, tx, ev, int64(e.Position))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.RefundRecorded, _ *projections.DecodedEvent) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO attribution_refunds (refund_id, shop_id, order_id, amount) VALUES (?, ?, ?, ?)
				ON CONFLICT (refund_id) DO NOTHING`, ev.RefundID, ev.ShopID, ev.OrderID, int64(ev.Amount)); err != nil {
				return err
			}
			return p.recompute(ctx, tx, ev.OrderID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AttributionSettingsChanged, e *projections.DecodedEvent) error {
			return saveSettings(ctx, tx, ev, int64(e.Position))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerRedactRequested, _ *projections.DecodedEvent) error {
			return unlinkCustomer(ctx, tx, ev.ShopID, ev.CustomerID)
		}),
	)
}

// clickIDKind names the first click id a landing carries.
func clickIDKind(c attr.ClickIDs) string {
	for _, kv := range [...][2]string{{"gclid", c.GCLID}, {"gbraid", c.GBRAID}, {"wbraid", c.WBRAID}, {"fbclid", c.FBCLID},
		{"ttclid", c.TTCLID}, {"msclkid", c.MSCLKID}, {"li_fat_id", c.LiFatID}} {
		if kv[1] != "" {
			return kv[0]
		}
	}
	return ""
}

// upsertTouchpoint stores a touchpoint; a later snapshot of the same one
// (a checkout's) may add its customer.
func upsertTouchpoint(ctx context.Context, tx *sql.Tx, tp *attr.Touchpoint, pos int64) error {
	class := attr.Classify(tp.Landing)
	_, err := tx.ExecContext(ctx, `
INSERT INTO touchpoints (touchpoint_id, shop_id, customer_id, anonymous_id, occurred_at, kind, channel, source, campaign,
	landing_path, referrer_host, utm_source, utm_medium, utm_campaign, utm_term, utm_content, click_id_kind, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (touchpoint_id) DO UPDATE SET
	customer_id = CASE WHEN excluded.customer_id <> '' THEN excluded.customer_id ELSE touchpoints.customer_id END,
	version = excluded.version
WHERE touchpoints.version < excluded.version`,
		tp.ID, tp.ShopID, tp.CustomerID, tp.AnonymousID, readmodel.Micros(tp.OccurredAt), string(tp.Kind), string(class.Channel),
		class.Source, class.Campaign, tp.Path, tp.ReferrerHost, tp.UTM.Source, tp.UTM.Medium, tp.UTM.Campaign, tp.UTM.Term,
		tp.UTM.Content, clickIDKind(tp.ClickIDs), pos)
	return err
}

func (p *projector) applyOrder(ctx context.Context, tx *sql.Tx, ev *domain.OrderRecorded, pos int64) error {
	if ev.Stale {
		return nil
	}
	if tp, ok := attr.FromOrder(ev); ok {
		if err := upsertTouchpoint(ctx, tx, &tp, pos); err != nil {
			return err
		}
	}
	o := attr.NewOrder(ev)
	// The row as written (its refunds are summed when it is first
	// written, kept by each refund afterwards) and the shop's window, read
	// along: no row when an older snapshot was replayed.
	var row orderRow
	err := tx.QueryRowContext(ctx, `
INSERT INTO attribution_orders (order_id, shop_id, customer_id, ordered_at, revenue, refunded, currency, version)
VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(SUM(amount), 0) FROM attribution_refunds WHERE order_id = ?), ?, ?)
ON CONFLICT (order_id) DO UPDATE SET customer_id = excluded.customer_id, ordered_at = excluded.ordered_at,
	revenue = excluded.revenue, currency = excluded.currency, version = excluded.version
WHERE attribution_orders.version < excluded.version
RETURNING shop_id, customer_id, ordered_at, revenue, refunded`,
		ev.OrderID, ev.ShopID, ev.CustomerID, readmodel.Micros(o.At), int64(o.Revenue), ev.OrderID, ev.Currency, pos).
		Scan(&row.shop, &row.customer, &row.at, &row.revenue, &row.refunded)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // an older snapshot replayed
	}
	if err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT lookback_seconds FROM attribution_settings WHERE shop_id = ?`, row.shop).
		Scan(&row.lookback); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return p.credit(ctx, tx, ev.OrderID, row)
}

// orderRow is what the credits of an order are computed from.
type orderRow struct {
	shop, customer        string
	at, revenue, refunded int64
	lookback              sql.NullInt64 // the shop's window
}

// recompute replaces the credits of an order (nothing when the order is
// not folded yet: its refunds wait for it) from its row, its refunds and
// the touchpoints of its customer.
func (p *projector) recompute(ctx context.Context, tx *sql.Tx, orderID string) error {
	var row orderRow
	err := tx.QueryRowContext(ctx, `SELECT shop_id, customer_id, ordered_at, revenue,
		(SELECT lookback_seconds FROM attribution_settings s WHERE s.shop_id = o.shop_id)
		FROM attribution_orders o WHERE order_id = ?`, orderID).Scan(&row.shop, &row.customer, &row.at, &row.revenue, &row.lookback)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `UPDATE attribution_orders SET refunded = (SELECT COALESCE(SUM(amount), 0) FROM attribution_refunds WHERE order_id = ?1)
		WHERE order_id = ?1 RETURNING refunded`, orderID).Scan(&row.refunded); err != nil {
		return err
	}
	return p.credit(ctx, tx, orderID, row)
}

// credit replaces the credits of an order from row and the touchpoints of
// its customer.
func (p *projector) credit(ctx context.Context, tx *sql.Tx, orderID string, row orderRow) error {
	shop, customer, at, revenue, refunded, lookback := row.shop, row.customer, row.at, row.revenue, row.refunded, row.lookback
	order := attr.Order{ID: orderID, At: readmodel.Time(at), Revenue: domain.Amount(revenue), Refunded: domain.Amount(refunded)}
	cfg := p.shopConfig(lookback)
	from := readmodel.Micros(order.At.Add(-cfg.Lookback))
	// The order's own landing, the customer's touchpoints and those of the
	// anonymous visitors linked to the customer, each branch on an index;
	// the landing is the customer's too, so rows are deduplicated by id.
	q := `SELECT ` + touchpointColumns + ` FROM touchpoints
		WHERE touchpoint_id = ? AND shop_id = ? AND occurred_at >= ? AND occurred_at <= ?`
	args := []any{orderID, shop, from, at}
	if customer != "" {
		q += ` UNION ALL SELECT ` + touchpointColumns + ` FROM touchpoints
		WHERE shop_id = ? AND customer_id = ? AND occurred_at >= ? AND occurred_at <= ?
		UNION ALL SELECT ` + touchpointColumns + ` FROM touchpoints
		WHERE shop_id = ? AND anonymous_id IN (SELECT anonymous_id FROM identity_links WHERE shop_id = ? AND customer_id = ?)
			AND occurred_at >= ? AND occurred_at <= ?`
		args = append(args, shop, customer, from, at, shop, shop, customer, from, at)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	var tps []attr.Touchpoint
	seen := map[string]bool{}
	for rows.Next() {
		t, err := scanTouchpoint(rows)
		if err != nil {
			rows.Close()
			return err
		}
		if !seen[t.ID] {
			seen[t.ID] = true
			tps = append(tps, t.touchpoint())
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	result := attr.Attribute(cfg, order, attr.Landings(attr.Sessionize(tps, cfg.SessionTimeout)))
	if _, err := tx.ExecContext(ctx, `DELETE FROM attribution_credits WHERE order_id = ?`, orderID); err != nil {
		return err
	}
	// The credits of the order, up to creditsPerStatement in one statement.
	const columns, creditsPerStatement = 11, 200
	vals := make([]any, 0, min(len(result.Touches)*len(attr.Models()), creditsPerStatement)*columns)
	flush := func() error {
		if len(vals) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO attribution_credits (order_id, model, touchpoint_id, shop_id, position,
		channel, source, campaign, weight, revenue, refunded) VALUES `+
			strings.Repeat(",(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", len(vals)/columns)[1:], vals...)
		vals = vals[:0]
		return err
	}
	for i, touch := range result.Touches {
		for _, m := range attr.Models() {
			c := touch.Credit(m)
			vals = append(vals, orderID, m.String(), touch.Touchpoint.ID, shop, i, string(touch.Class.Channel), touch.Class.Source,
				touch.Class.Campaign, c.Weight, int64(c.Revenue), int64(c.Refunded))
			if len(vals) == creditsPerStatement*columns {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}
