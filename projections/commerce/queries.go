package commerce

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the commerce read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Order is a row of the orders read model.
type Order struct {
	ID, ShopID, ExternalID, CustomerID, Name string
	Email                                    *string
	FinancialStatus, FulfillmentStatus       string
	Currency                                 string
	TotalPrice, SubtotalPrice, TotalTax      domain.Amount
	TotalDiscounts, Refunded                 domain.Amount
	Lines                                    []domain.OrderLine
	SourceName                               string
	DiscountCodes, Tags                      []string
	domain.Attribution
	CreatedAt, UpdatedAt, ProcessedAt, CancelledAt time.Time
	LastTopic                                      string
	Snapshots                                      int
	Redacted                                       bool
	Version                                        uint64
	// Actions are the order's actions taken through the admin API, oldest
	// first (filled by Order and ListOrders).
	Actions []OrderAction
}

// Order returns an order of a shop with its actions.
func (q *Queries) Order(ctx context.Context, shop, id string) (*Order, error) {
	o, err := scanOrder(q.db.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id = ? AND shop_id = ?`, id, shop))
	if err := readmodel.FindError(err, "order"); err != nil {
		return nil, err
	}
	one := []Order{o}
	if err := q.attachActions(ctx, shop, one); err != nil {
		return nil, err
	}
	return &one[0], nil
}

// Product is a row of the products read model.
type Product struct {
	ID, ShopID, ExternalID, Title, Handle, Status, Vendor, ProductType string
	Tags                                                               []string
	Variants                                                           []domain.Variant
	CreatedAt, UpdatedAt, DeletedAt                                    time.Time
}

// Product returns a product of a shop (a deleted one too: DeletedAt says
// so).
func (q *Queries) Product(ctx context.Context, shop, id string) (*Product, error) {
	var p Product
	var tags, variants string
	var created, updated, deleted int64
	err := q.db.QueryRowContext(ctx, `SELECT product_id, shop_id, external_id, title, handle, status, vendor, product_type, tags,
		variants, created_at, updated_at, deleted_at FROM products WHERE product_id = ? AND shop_id = ?`, id, shop).Scan(
		&p.ID, &p.ShopID, &p.ExternalID, &p.Title, &p.Handle, &p.Status, &p.Vendor, &p.ProductType, &tags, &variants,
		&created, &updated, &deleted)
	if err := readmodel.FindError(err, "product"); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt, p.DeletedAt = readmodel.Time(created), readmodel.Time(updated), readmodel.Time(deleted)
	return &p, unmarshalAll(col{tags, &p.Tags}, col{variants, &p.Variants})
}

// VariantSKU returns the SKU of the variant holding an inventory item ("" if
// no live product has it).
func (q *Queries) VariantSKU(ctx context.Context, shop, inventoryItemID string) (string, error) {
	var sku string
	err := q.db.QueryRowContext(ctx, `SELECT sku FROM product_variants WHERE shop_id = ? AND inventory_item_id = ?`, shop, inventoryItemID).Scan(&sku)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return sku, err
}

// InventoryLevel is an item's stock at a location.
type InventoryLevel struct {
	InventoryItemID, LocationID string
	Available                   *int // nil: not tracked
	UpdatedAt                   time.Time
}

// InventoryLevel returns an item's level at a location.
func (q *Queries) InventoryLevel(ctx context.Context, shop, itemID, locationID string) (*InventoryLevel, error) {
	var l InventoryLevel
	var available sql.NullInt64
	var updated int64
	err := q.db.QueryRowContext(ctx, `SELECT inventory_item_id, location_id, available, updated_at FROM inventory_levels
		WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?`, shop, itemID, locationID).
		Scan(&l.InventoryItemID, &l.LocationID, &available, &updated)
	if err := readmodel.FindError(err, "inventory level"); err != nil {
		return nil, err
	}
	if available.Valid {
		n := int(available.Int64)
		l.Available = &n
	}
	l.UpdatedAt = readmodel.Time(updated)
	return &l, nil
}

// Cart is a tracked storefront cart.
type Cart struct {
	ID                   string
	Lines                []domain.CartLine
	Total                domain.Amount
	CreatedAt, UpdatedAt time.Time
}

// Cart returns a cart of a shop.
func (q *Queries) Cart(ctx context.Context, shop, id string) (*Cart, error) {
	var c Cart
	var lines string
	var total, created, updated int64
	err := q.db.QueryRowContext(ctx, `SELECT cart_id, lines, total, created_at, updated_at FROM carts WHERE cart_id = ? AND shop_id = ?`,
		id, shop).Scan(&c.ID, &lines, &total, &created, &updated)
	if err := readmodel.FindError(err, "cart"); err != nil {
		return nil, err
	}
	c.Total, c.CreatedAt, c.UpdatedAt = domain.Amount(total), readmodel.Time(created), readmodel.Time(updated)
	return &c, unmarshalAll(col{lines, &c.Lines})
}

// Checkout is a checkout: a pre-purchase attribution touchpoint.
type Checkout struct {
	ID, CustomerID, CartID string
	Email                  *string
	TotalPrice             domain.Amount
	Currency               string
	domain.Attribution
	CreatedAt, UpdatedAt, CompletedAt time.Time
	Redacted                          bool
}

// Checkout returns a checkout of a shop.
func (q *Queries) Checkout(ctx context.Context, shop, id string) (*Checkout, error) {
	var c Checkout
	var utm, clicks string
	var total, created, updated, completed int64
	err := q.db.QueryRowContext(ctx, `SELECT checkout_id, customer_id, cart_id, email, total_price, currency, landing_site,
		referring_site, utm, click_ids, created_at, updated_at, completed_at, redacted FROM checkouts WHERE checkout_id = ? AND shop_id = ?`,
		id, shop).Scan(&c.ID, &c.CustomerID, &c.CartID, &c.Email, &total, &c.Currency, &c.LandingSite, &c.ReferringSite, &utm, &clicks,
		&created, &updated, &completed, &c.Redacted)
	if err := readmodel.FindError(err, "checkout"); err != nil {
		return nil, err
	}
	c.TotalPrice = domain.Amount(total)
	c.CreatedAt, c.UpdatedAt, c.CompletedAt = readmodel.Time(created), readmodel.Time(updated), readmodel.Time(completed)
	return &c, unmarshalAll(col{utm, &c.UTM}, col{clicks, &c.ClickIDs})
}

// Subscription is a subscription contract with its billing state.
type Subscription struct {
	ID, ExternalID, CustomerID, Status string
	Interval                           string
	IntervalCount                      int
	Currency, OriginOrderID            string
	DunningState                       string
	FailedAttempts                     int
	// RecognisedRevenue is the total of the orders its successful billing
	// attempts created (those orders received so far).
	RecognisedRevenue                       domain.Amount
	LastAttemptAt, LastBilledAt, ChurnedAt  time.Time
	SuccessfulAttempts, FailedAttemptsTotal int
}

// Subscription returns a subscription contract of a shop.
func (q *Queries) Subscription(ctx context.Context, shop, id string) (*Subscription, error) {
	var s Subscription
	var revenue, lastAttempt, lastBilled, churned int64
	err := q.db.QueryRowContext(ctx, `SELECT c.subscription_id, c.external_id, c.customer_id, c.status, c.interval, c.interval_count,
		c.currency, c.origin_order_id, c.dunning_state, c.failed_attempts, c.last_attempt_at, c.last_billed_at, c.churned_at,
		(SELECT COALESCE(SUM(o.total_price), 0) FROM billing_attempts a JOIN orders o ON o.order_id = a.order_id
			WHERE a.subscription_id = c.subscription_id AND a.success = 1),
		(SELECT COUNT(*) FROM billing_attempts a WHERE a.subscription_id = c.subscription_id AND a.success = 1),
		(SELECT COUNT(*) FROM billing_attempts a WHERE a.subscription_id = c.subscription_id AND a.success = 0)
		FROM subscription_contracts c WHERE c.subscription_id = ? AND c.shop_id = ?`, id, shop).Scan(
		&s.ID, &s.ExternalID, &s.CustomerID, &s.Status, &s.Interval, &s.IntervalCount, &s.Currency, &s.OriginOrderID,
		&s.DunningState, &s.FailedAttempts, &lastAttempt, &lastBilled, &churned, &revenue, &s.SuccessfulAttempts, &s.FailedAttemptsTotal)
	if err := readmodel.FindError(err, "subscription contract"); err != nil {
		return nil, err
	}
	s.RecognisedRevenue = domain.Amount(revenue)
	s.LastAttemptAt, s.LastBilledAt, s.ChurnedAt = readmodel.Time(lastAttempt), readmodel.Time(lastBilled), readmodel.Time(churned)
	return &s, nil
}

// Theme is the shop's live theme as last published or edited.
type Theme struct {
	ID, ExternalID, Name, Role, LastTopic string
	PublishedAt, UpdatedAt                time.Time
	Changes                               int
}

// Themes lists the themes kept for a shop (main-role only), most recently
// changed first.
func (q *Queries) Themes(ctx context.Context, shop string) ([]Theme, error) {
	return readmodel.List(ctx, q.db, "themes", scanTheme, `SELECT theme_id, external_id, name, role, last_topic,
		published_at, updated_at, changes FROM themes WHERE shop_id = ? ORDER BY updated_at DESC, theme_id`, shop)
}

func scanTheme(s readmodel.Scanner) (Theme, error) {
	var t Theme
	var published, updated int64
	if err := s.Scan(&t.ID, &t.ExternalID, &t.Name, &t.Role, &t.LastTopic, &published, &updated, &t.Changes); err != nil {
		return Theme{}, err
	}
	t.PublishedAt, t.UpdatedAt = readmodel.Time(published), readmodel.Time(updated)
	return t, nil
}

// ThemeChanges lists every publish and edit of a shop's main theme with
// its time, oldest first.
func (q *Queries) ThemeChanges(ctx context.Context, shop string) ([]domain.ThemeChange, error) {
	return readmodel.List(ctx, q.db, "theme changes", func(s readmodel.Scanner) (domain.ThemeChange, error) {
		var c domain.ThemeChange
		var at int64
		err := s.Scan(&c.ID, &c.ThemeID, &c.ExternalID, &c.Name, &c.Topic, &at)
		c.At = readmodel.Time(at)
		return c, err
	}, `SELECT change_id, theme_id, external_id, name, topic, changed_at FROM theme_changes WHERE shop_id = ?
		ORDER BY changed_at, change_id`, shop)
}

// PrivacyRequest is a GDPR request received from the platform.
type PrivacyRequest struct {
	EventID, Kind, CustomerID, RequestID, Status string
	Orders                                       []string
	ReceivedAt                                   time.Time
}

// PrivacyRequests lists a shop's privacy requests in the order received.
func (q *Queries) PrivacyRequests(ctx context.Context, shop string) ([]PrivacyRequest, error) {
	return readmodel.List(ctx, q.db, "privacy requests", scanPrivacyRequest, `SELECT event_id, kind, customer_id, request_id,
		status, orders, received_at FROM privacy_requests WHERE shop_id = ? ORDER BY version`, shop)
}

func scanPrivacyRequest(s readmodel.Scanner) (PrivacyRequest, error) {
	var r PrivacyRequest
	var orders string
	var received int64
	if err := s.Scan(&r.EventID, &r.Kind, &r.CustomerID, &r.RequestID, &r.Status, &orders, &received); err != nil {
		return PrivacyRequest{}, err
	}
	if err := json.Unmarshal([]byte(orders), &r.Orders); err != nil {
		return PrivacyRequest{}, err
	}
	r.ReceivedAt = readmodel.Time(received)
	return r, nil
}

// col is a JSON column's text and where to decode it.
type col struct {
	text string
	dst  any
}

// unmarshalAll decodes JSON columns.
func unmarshalAll(cols ...col) error {
	for _, c := range cols {
		if err := json.Unmarshal([]byte(c.text), c.dst); err != nil {
			return fmt.Errorf("decode column: %w", err)
		}
	}
	return nil
}
