package domain

import (
	"crypto/sha256"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// marketplaceEvents lists the marketplaces' event types.
func marketplaceEvents() []EventSpec {
	return []EventSpec{
		{Name: "MarketplaceConnected", Version: 1, New: func() Event { return &MarketplaceConnected{} }},
		{Name: "MarketplaceSecretRotated", Version: 1, New: func() Event { return &MarketplaceSecretRotated{} }},
		{Name: "MarketplaceOrderRecorded", Version: 1, New: func() Event { return &MarketplaceOrderRecorded{} }},
		{Name: "MarketplaceNotificationReceived", Version: 1, New: func() Event { return &MarketplaceNotificationReceived{} }},
	}
}

// Marketplaces a shop can connect. Each has a webhook contract of its own
// (ingest/marketplace); generic is for marketplaces without one.
const (
	MarketplaceEtsy       = "etsy"
	MarketplaceTikTokShop = "tiktok_shop"
	MarketplaceGeneric    = "generic"
)

// Marketplaces lists the marketplace names, in a stable order.
func Marketplaces() []string {
	return []string{MarketplaceEtsy, MarketplaceTikTokShop, MarketplaceGeneric}
}

// IsMarketplace reports whether name is a marketplace of Marketplaces.
func IsMarketplace(name string) bool {
	for _, m := range Marketplaces() {
		if m == name {
			return true
		}
	}
	return false
}

// Id prefixes of the marketplace area.
const (
	PrefixMarketplaceConnection = "mpc_"
	PrefixMarketplaceOrder      = "mpo_"
)

// Limits of what a marketplace may send or a merchant may configure.
const (
	MaxMarketplaceIDLength = 200 // account ids, order ids, resource ids, app keys
	MaxMarketplaceKind     = 200 // an event type as sent
	MaxMarketplaceStatus   = 100
	MinMarketplaceSecret   = 16
	MaxMarketplaceSecret   = 512
)

// MarketplaceConnectionID derives the id of the connection of a seller
// account on a marketplace. It does not depend on the shop: the pair
// (marketplace, account) has one connection, claimed by one shop.
func MarketplaceConnectionID(marketplace, accountID string) string {
	return derivedID(PrefixMarketplaceConnection, "marketplace-connection", marketplace, accountID)
}

// MarketplaceOrderID derives the id of a marketplace order of a shop, so
// every delivery about the order reaches the same stream without a lookup.
func MarketplaceOrderID(shopID, marketplace, marketplaceOrderID string) string {
	return derivedID(PrefixMarketplaceOrder, "marketplace-order", shopID, marketplace, marketplaceOrderID)
}

// derivedID is prefix and 24 base62 characters of a hash of the parts: a
// stable id that reveals none of them.
func derivedID(prefix string, parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < 24; i++ {
		b.WriteByte(base62[int(sum[i])%62])
	}
	return b.String()
}

// MarketplaceConnectionStream is the stream of a connection; its first
// event claims the (marketplace, account) pair for a shop.
func MarketplaceConnectionStream(connectionID string) string {
	return "marketplaceconnection-" + connectionID
}

// MarketplaceOrderStream is the stream of a marketplace order.
func MarketplaceOrderStream(orderID string) string { return "marketplaceorder-" + orderID }

// MarketplaceNotificationStream is the stream of one notification, named
// after its event id (derived from the delivery id), so a repeated
// delivery finds its stream taken.
func MarketplaceNotificationStream(eventID string) string {
	return "marketplacenotification-" + eventID
}

// MarketplaceConnected: a shop connected a seller account of a marketplace,
// with the secret the marketplace signs webhooks with. The secret travels
// sealed with the shop key, like ShopCreated's webhook secret.
type MarketplaceConnected struct {
	ConnectionID string    `json:"connection_id"`
	ShopID       string    `json:"shop_id"`
	Marketplace  string    `json:"marketplace"`
	AccountID    string    `json:"account_id"`
	Secret       string    `json:"secret"`
	AppKey       string    `json:"app_key,omitempty"`
	ConnectedAt  time.Time `json:"connected_at"`
}

// EventType implements Event.
func (MarketplaceConnected) EventType() string { return "MarketplaceConnected" }

// MarketplaceSecretRotated: the shop that holds a connection connected it
// again, with a new secret (and app key); the old secret stops verifying.
type MarketplaceSecretRotated struct {
	ConnectionID string    `json:"connection_id"`
	ShopID       string    `json:"shop_id"`
	Marketplace  string    `json:"marketplace"`
	AccountID    string    `json:"account_id"`
	Secret       string    `json:"secret"`
	AppKey       string    `json:"app_key,omitempty"`
	RotatedAt    time.Time `json:"rotated_at"`
}

// EventType implements Event.
func (MarketplaceSecretRotated) EventType() string { return "MarketplaceSecretRotated" }

// MarketplaceOrderRecorded: a marketplace reported the state of an order.
// Buyer data (names, addresses, e-mails) is never kept: only what the
// order's status and value need.
type MarketplaceOrderRecorded struct {
	OrderID            string    `json:"order_id"`
	ShopID             string    `json:"shop_id"`
	Marketplace        string    `json:"marketplace"`
	AccountID          string    `json:"account_id"`
	MarketplaceOrderID string    `json:"marketplace_order_id"`
	Kind               string    `json:"kind"`
	Status             string    `json:"status"`
	Total              *Amount   `json:"total,omitempty"`
	Currency           string    `json:"currency,omitempty"`
	OccurredAt         time.Time `json:"occurred_at"`
}

// EventType implements Event.
func (MarketplaceOrderRecorded) EventType() string { return "MarketplaceOrderRecorded" }

// MarketplaceNotificationReceived: a marketplace sent a notification of a
// kind that is not an order (a product, a package, a return, …). Its type
// is kept as sent; its payload is not kept, since it can hold buyer data.
type MarketplaceNotificationReceived struct {
	ShopID      string    `json:"shop_id"`
	Marketplace string    `json:"marketplace"`
	AccountID   string    `json:"account_id"`
	Kind        string    `json:"kind"`
	ResourceID  string    `json:"resource_id,omitempty"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// EventType implements Event.
func (MarketplaceNotificationReceived) EventType() string { return "MarketplaceNotificationReceived" }

// MarketplaceCredentials are what a shop gives to connect a seller account:
// the secret the marketplace signs with and, for the marketplaces that
// sign with it, the app key.
type MarketplaceCredentials struct {
	Marketplace string
	AccountID   string
	Secret      string
	AppKey      string
}

// NewMarketplaceCredentials validates and normalises credentials (account
// id and app key trimmed; the secret is taken as given).
func NewMarketplaceCredentials(marketplace, accountID, secret, appKey string) (MarketplaceCredentials, error) {
	c := MarketplaceCredentials{Marketplace: marketplace, AccountID: strings.TrimSpace(accountID), Secret: secret, AppKey: strings.TrimSpace(appKey)}
	if !IsMarketplace(marketplace) {
		return c, Invalid("marketplace", "unknown marketplace; one of %s", strings.Join(Marketplaces(), ", "))
	}
	if !validMarketplaceText(c.AccountID, MaxMarketplaceIDLength) {
		return c, Invalid("account_id", "account id must be 1 to %d printable characters", MaxMarketplaceIDLength)
	}
	if n := len(secret); n < MinMarketplaceSecret || n > MaxMarketplaceSecret || strings.TrimSpace(secret) != secret {
		return c, Invalid("secret", "secret must be %d to %d characters without surrounding spaces", MinMarketplaceSecret, MaxMarketplaceSecret)
	}
	if c.AppKey != "" && !validMarketplaceText(c.AppKey, MaxMarketplaceIDLength) {
		return c, Invalid("app_key", "app key must be at most %d printable characters", MaxMarketplaceIDLength)
	}
	return c, nil
}

// validMarketplaceText reports whether s is 1 to max bytes of valid UTF-8
// without control characters.
func validMarketplaceText(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// MarketplaceConnection is the connection aggregate of one (marketplace,
// account) pair.
type MarketplaceConnection struct {
	ID     string
	ShopID string
	Exists bool
}

// Apply folds an event into the connection.
func (c *MarketplaceConnection) Apply(e Event) {
	if ev, ok := e.(*MarketplaceConnected); ok {
		c.ID, c.ShopID, c.Exists = ev.ConnectionID, ev.ShopID, true
	}
}

// Connect decides a connection of the pair for shop: a new connection, a
// secret rotation when the same shop holds it already, or a conflict when
// another shop does (without naming it).
func (c *MarketplaceConnection) Connect(shop *Shop, in MarketplaceCredentials, now time.Time) (Event, error) {
	if !shop.Exists {
		return nil, NotFound("shop")
	}
	id := MarketplaceConnectionID(in.Marketplace, in.AccountID)
	switch {
	case !c.Exists:
		return &MarketplaceConnected{ConnectionID: id, ShopID: shop.ID, Marketplace: in.Marketplace, AccountID: in.AccountID,
			Secret: in.Secret, AppKey: in.AppKey, ConnectedAt: now.UTC()}, nil
	case c.ShopID == shop.ID:
		return &MarketplaceSecretRotated{ConnectionID: id, ShopID: shop.ID, Marketplace: in.Marketplace, AccountID: in.AccountID,
			Secret: in.Secret, AppKey: in.AppKey, RotatedAt: now.UTC()}, nil
	default:
		return nil, Conflict("this %s account is connected to another shop", in.Marketplace)
	}
}

// MarketplaceOrderUpdate is what a delivery says about an order.
type MarketplaceOrderUpdate struct {
	Marketplace        string
	AccountID          string
	MarketplaceOrderID string
	Kind               string
	Status             string
	Total              *Amount
	Currency           string
	OccurredAt         time.Time // zero: now
}

// MarketplaceOrder is the marketplace order aggregate.
type MarketplaceOrder struct {
	ID     string
	ShopID string
	Exists bool
}

// Apply folds an event into the order.
func (o *MarketplaceOrder) Apply(e Event) {
	if ev, ok := e.(*MarketplaceOrderRecorded); ok {
		o.ID, o.ShopID, o.Exists = ev.OrderID, ev.ShopID, true
	}
}

// Record decides the recording of an update of the order for shopID.
func (o *MarketplaceOrder) Record(shopID string, in MarketplaceOrderUpdate, now time.Time) (*MarketplaceOrderRecorded, error) {
	if o.Exists && o.ShopID != shopID {
		return nil, Conflict("marketplace order belongs to another shop")
	}
	return NewMarketplaceOrderRecorded(shopID, in, now)
}

// NewMarketplaceOrderRecorded validates an order update: an order id, a
// status, a currency of three letters when given, a non-negative total.
func NewMarketplaceOrderRecorded(shopID string, in MarketplaceOrderUpdate, now time.Time) (*MarketplaceOrderRecorded, error) {
	if !IsMarketplace(in.Marketplace) {
		return nil, Invalid("marketplace", "unknown marketplace")
	}
	if !validMarketplaceText(in.MarketplaceOrderID, MaxMarketplaceIDLength) {
		return nil, Invalid("order_id", "order id must be 1 to %d printable characters", MaxMarketplaceIDLength)
	}
	if !validMarketplaceText(in.Status, MaxMarketplaceStatus) {
		return nil, Invalid("status", "status must be 1 to %d printable characters", MaxMarketplaceStatus)
	}
	if in.Kind != "" && !validMarketplaceText(in.Kind, MaxMarketplaceKind) {
		return nil, Invalid("kind", "event type must be at most %d printable characters", MaxMarketplaceKind)
	}
	currency, err := normalizeCurrency(in.Currency)
	if err != nil {
		return nil, err
	}
	if in.Total != nil && *in.Total < 0 {
		return nil, Invalid("total", "total must not be negative")
	}
	return &MarketplaceOrderRecorded{
		OrderID: MarketplaceOrderID(shopID, in.Marketplace, in.MarketplaceOrderID), ShopID: shopID,
		Marketplace: in.Marketplace, AccountID: in.AccountID, MarketplaceOrderID: in.MarketplaceOrderID,
		Kind: in.Kind, Status: in.Status, Total: in.Total, Currency: currency, OccurredAt: orNow(in.OccurredAt, now),
	}, nil
}

// MarketplaceNotice is what a delivery of another kind than an order says.
type MarketplaceNotice struct {
	Marketplace string
	AccountID   string
	Kind        string
	ResourceID  string
	OccurredAt  time.Time // zero: now
}

// NewMarketplaceNotificationReceived validates a notification: its kind as
// sent (1 to 200 characters) and a resource id of at most 200.
func NewMarketplaceNotificationReceived(shopID string, in MarketplaceNotice, now time.Time) (*MarketplaceNotificationReceived, error) {
	if !IsMarketplace(in.Marketplace) {
		return nil, Invalid("marketplace", "unknown marketplace")
	}
	if !validMarketplaceText(in.Kind, MaxMarketplaceKind) {
		return nil, Invalid("kind", "event type must be 1 to %d printable characters", MaxMarketplaceKind)
	}
	if in.ResourceID != "" && !validMarketplaceText(in.ResourceID, MaxMarketplaceIDLength) {
		return nil, Invalid("resource_id", "resource id must be at most %d printable characters", MaxMarketplaceIDLength)
	}
	return &MarketplaceNotificationReceived{ShopID: shopID, Marketplace: in.Marketplace, AccountID: in.AccountID,
		Kind: in.Kind, ResourceID: in.ResourceID, OccurredAt: orNow(in.OccurredAt, now)}, nil
}

// normalizeCurrency upper-cases an ISO 4217 code; "" stays "".
func normalizeCurrency(c string) (string, error) {
	c = strings.ToUpper(strings.TrimSpace(c))
	if c == "" {
		return "", nil
	}
	if len(c) != 3 {
		return "", Invalid("currency", "currency must be an ISO 4217 code")
	}
	for i := 0; i < 3; i++ {
		if c[i] < 'A' || c[i] > 'Z' {
			return "", Invalid("currency", "currency must be an ISO 4217 code")
		}
	}
	return c, nil
}
