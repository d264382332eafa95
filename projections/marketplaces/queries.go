package marketplaces

import (
	"context"
	"database/sql"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
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
	c, err := scanConnection(q.db.QueryRowContext(ctx, `SELECT `+connectionColumns+` FROM marketplace_connections
WHERE marketplace = ? AND account_id = ?`, marketplace, accountID))
	if err := readmodel.FindError(err, "marketplace connection"); err != nil {
		return nil, err
	}
	return &c, nil
}

// Connections lists a shop's connections by marketplace and account.
func (q *Queries) Connections(ctx context.Context, shopID string) ([]Connection, error) {
	return readmodel.List(ctx, q.db, "marketplace connections", scanConnection, `SELECT `+connectionColumns+`
FROM marketplace_connections WHERE shop_id = ? ORDER BY marketplace, account_id`, shopID)
}

func scanConnection(s readmodel.Scanner) (Connection, error) {
	var c Connection
	var connected, rotated int64
	if err := s.Scan(&c.ID, &c.ShopID, &c.Marketplace, &c.AccountID, &c.Secret, &c.AppKey, &connected, &rotated); err != nil {
		return Connection{}, err
	}
	c.ConnectedAt, c.RotatedAt = readmodel.Time(connected), readmodel.Time(rotated)
	return c, nil
}

const orderColumns = `order_id, shop_id, marketplace, account_id, marketplace_order_id, status, kind, total, currency,
	first_seen_at, occurred_at, updates`

// Order returns a shop's order by its marketplace and the marketplace's
// order id; an order of another shop is not found.
func (q *Queries) Order(ctx context.Context, shopID, marketplace, marketplaceOrderID string) (*Order, error) {
	o, err := scanOrder(q.db.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM marketplace_orders WHERE order_id = ? AND shop_id = ?`,
		domain.MarketplaceOrderID(shopID, marketplace, marketplaceOrderID), shopID))
	if err := readmodel.FindError(err, "marketplace order"); err != nil {
		return nil, err
	}
	return &o, nil
}

// Orders lists a shop's marketplace orders, first seen first.
func (q *Queries) Orders(ctx context.Context, shopID string) ([]Order, error) {
	return readmodel.List(ctx, q.db, "marketplace orders", scanOrder, `SELECT `+orderColumns+` FROM marketplace_orders
WHERE shop_id = ? ORDER BY first_seen_at, order_id`, shopID)
}

func scanOrder(s readmodel.Scanner) (Order, error) {
	var o Order
	var total sql.NullInt64
	var first, at int64
	if err := s.Scan(&o.ID, &o.ShopID, &o.Marketplace, &o.AccountID, &o.MarketplaceOrderID, &o.Status, &o.Kind,
		&total, &o.Currency, &first, &at, &o.Updates); err != nil {
		return Order{}, err
	}
	if total.Valid {
		a := domain.Amount(total.Int64)
		o.Total = &a
	}
	o.FirstSeenAt, o.OccurredAt = readmodel.Time(first), readmodel.Time(at)
	return o, nil
}

// Notifications lists a shop's notifications in the order they were
// recorded.
func (q *Queries) Notifications(ctx context.Context, shopID string) ([]Notification, error) {
	return readmodel.List(ctx, q.db, "marketplace notifications", scanNotification, `SELECT event_id, shop_id, marketplace,
	account_id, kind, resource_id, occurred_at FROM marketplace_notifications WHERE shop_id = ? ORDER BY position`, shopID)
}

func scanNotification(s readmodel.Scanner) (Notification, error) {
	var n Notification
	var at int64
	if err := s.Scan(&n.EventID, &n.ShopID, &n.Marketplace, &n.AccountID, &n.Kind, &n.ResourceID, &at); err != nil {
		return Notification{}, err
	}
	n.OccurredAt = readmodel.Time(at)
	return n, nil
}
