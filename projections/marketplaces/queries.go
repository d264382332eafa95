package marketplaces

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// Connection is a seller account's connection. Secret is what the
// receiver verifies with: never print or log it.
type Connection struct {
	ID          string
	ShopID      string
	Marketplace string
	AccountID   string
	Secret      string
	AppKey      string
	ConnectedAt time.Time
	RotatedAt   time.Time // zero when never rotated
}

// Order is a marketplace order of a shop, as last reported.
type Order struct {
	ID                 string // mpo_…
	ShopID             string
	Marketplace        string
	AccountID          string
	MarketplaceOrderID string
	Status             string
	Kind               string
	Total              *domain.Amount // nil when never reported
	Currency           string
	FirstSeenAt        time.Time
	OccurredAt         time.Time
	Updates            int
}

// Notification is a marketplace notification of a shop.
type Notification struct {
	EventID     string
	ShopID      string
	Marketplace string
	AccountID   string
	Kind        string
	ResourceID  string
	OccurredAt  time.Time
}

// Queries reads the marketplaces read model.
type Queries struct {
	db *sql.DB
}

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

const connectionColumns = `connection_id, shop_id, marketplace, account_id, secret, app_key, connected_at, rotated_at`

// Connection returns the connection of a seller account on a marketplace.
func (q *Queries) Connection(ctx context.Context, marketplace, accountID string) (*Connection, error) {
	row := q.db.QueryRowContext(ctx, `SELECT `+connectionColumns+` FROM marketplace_connections
WHERE marketplace = ? AND account_id = ?`, marketplace, accountID)
	c, err := scanConnection(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("marketplace connection")
	}
	return c, err
}

// Connections lists a shop's connections by marketplace and account.
func (q *Queries) Connections(ctx context.Context, shopID string) ([]Connection, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT `+connectionColumns+` FROM marketplace_connections
WHERE shop_id = ? ORDER BY marketplace, account_id`, shopID)
	if err != nil {
		return nil, fmt.Errorf("list marketplace connections: %w", err)
	}
	defer rows.Close()
	var out []Connection
	for rows.Next() {
		c, err := scanConnection(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *c)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(dest ...any) error }

func scanConnection(s scanner) (*Connection, error) {
	var c Connection
	var connected, rotated int64
	if err := s.Scan(&c.ID, &c.ShopID, &c.Marketplace, &c.AccountID, &c.Secret, &c.AppKey, &connected, &rotated); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("read marketplace connection: %w", err)
	}
	c.ConnectedAt = time.UnixMicro(connected).UTC()
	if rotated != 0 {
		c.RotatedAt = time.UnixMicro(rotated).UTC()
	}
	return &c, nil
}

const orderColumns = `order_id, shop_id, marketplace, account_id, marketplace_order_id, status, kind, total, currency,
	first_seen_at, occurred_at, updates`

// Order returns a shop's order by its marketplace and the marketplace's
// order id; an order of another shop is not found.
func (q *Queries) Order(ctx context.Context, shopID, marketplace, marketplaceOrderID string) (*Order, error) {
	row := q.db.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM marketplace_orders WHERE order_id = ? AND shop_id = ?`,
		domain.MarketplaceOrderID(shopID, marketplace, marketplaceOrderID), shopID)
	o, err := scanOrder(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("marketplace order")
	}
	return o, err
}

// Orders lists a shop's marketplace orders, first seen first.
func (q *Queries) Orders(ctx context.Context, shopID string) ([]Order, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT `+orderColumns+` FROM marketplace_orders
WHERE shop_id = ? ORDER BY first_seen_at, order_id`, shopID)
	if err != nil {
		return nil, fmt.Errorf("list marketplace orders: %w", err)
	}
	defer rows.Close()
	var out []Order
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *o)
	}
	return out, rows.Err()
}

func scanOrder(s scanner) (*Order, error) {
	var o Order
	var total sql.NullInt64
	var first, at int64
	if err := s.Scan(&o.ID, &o.ShopID, &o.Marketplace, &o.AccountID, &o.MarketplaceOrderID, &o.Status, &o.Kind,
		&total, &o.Currency, &first, &at, &o.Updates); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("read marketplace order: %w", err)
	}
	if total.Valid {
		a := domain.Amount(total.Int64)
		o.Total = &a
	}
	o.FirstSeenAt, o.OccurredAt = time.UnixMicro(first).UTC(), time.UnixMicro(at).UTC()
	return &o, nil
}

// Notifications lists a shop's notifications in the order they were
// recorded.
func (q *Queries) Notifications(ctx context.Context, shopID string) ([]Notification, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT event_id, shop_id, marketplace, account_id, kind, resource_id, occurred_at
FROM marketplace_notifications WHERE shop_id = ? ORDER BY position`, shopID)
	if err != nil {
		return nil, fmt.Errorf("list marketplace notifications: %w", err)
	}
	defer rows.Close()
	var out []Notification
	for rows.Next() {
		var n Notification
		var at int64
		if err := rows.Scan(&n.EventID, &n.ShopID, &n.Marketplace, &n.AccountID, &n.Kind, &n.ResourceID, &at); err != nil {
			return nil, fmt.Errorf("read marketplace notification: %w", err)
		}
		n.OccurredAt = time.UnixMicro(at).UTC()
		out = append(out, n)
	}
	return out, rows.Err()
}
