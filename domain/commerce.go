package domain

import (
	"strings"
	"time"
)

// commerceEvents lists the commerce platform's event types.
func commerceEvents() []EventSpec {
	return []EventSpec{
		{Name: "OrderRecorded", Version: 1, New: func() Event { return &OrderRecorded{} }},
		{Name: "RefundRecorded", Version: 1, New: func() Event { return &RefundRecorded{} }},
		{Name: "ProductRecorded", Version: 1, New: func() Event { return &ProductRecorded{} }},
		{Name: "ProductDeleted", Version: 1, New: func() Event { return &ProductDeleted{} }},
		{Name: "InventoryLevelUpdated", Version: 1, New: func() Event { return &InventoryLevelUpdated{} }},
		{Name: "CartRecorded", Version: 1, New: func() Event { return &CartRecorded{} }},
		{Name: "CheckoutRecorded", Version: 1, New: func() Event { return &CheckoutRecorded{} }},
		{Name: "SubscriptionContractRecorded", Version: 1, New: func() Event { return &SubscriptionContractRecorded{} }},
		{Name: "BillingAttemptRecorded", Version: 1, New: func() Event { return &BillingAttemptRecorded{} }},
		{Name: "ThemeRecorded", Version: 1, New: func() Event { return &ThemeRecorded{} }},
		{Name: "AppUninstalled", Version: 1, New: func() Event { return &AppUninstalled{} }},
		{Name: "AppSubscriptionUpdated", Version: 1, New: func() Event { return &AppSubscriptionUpdated{} }},
		{Name: "CustomerDataRequested", Version: 1, New: func() Event { return &CustomerDataRequested{} }},
		{Name: "CustomerRedactRequested", Version: 1, New: func() Event { return &CustomerRedactRequested{} }},
		{Name: "ShopRedactRequested", Version: 1, New: func() Event { return &ShopRedactRequested{} }},
	}
}

// Id prefixes of commerce resources (derived from the platform's ids with
// IDFromExternal).
const (
	PrefixProduct      = "prd_"
	PrefixRefund       = "rfd_"
	PrefixCart         = "crt_"
	PrefixCheckout     = "chk_"
	PrefixSubscription = "sub_"
	PrefixTheme        = "thm_"
	PrefixInventory    = "inv_"
)

// Streams of commerce resources.
func OrderStream(id string) string        { return "order-" + id }
func ProductStream(id string) string      { return "product-" + id }
func InventoryStream(id string) string    { return "inventory-" + id }
func CartStream(id string) string         { return "cart-" + id }
func CheckoutStream(id string) string     { return "checkout-" + id }
func SubscriptionStream(id string) string { return "subscription-" + id }
func ThemeStream(id string) string        { return "theme-" + id }

// GDPRStream is the stream of a shop's privacy requests.
func GDPRStream(shopID string) string { return "gdpr-" + shopID }

// GuestSubject is the data subject of a guest order's personal data: the
// order has no customer, so its e-mail is sealed with a key of its own,
// shredded when customers/redact lists the order.
func GuestSubject(shopID, externalOrderID string) string {
	return IDFromExternal(PrefixCustomer, "guest-order", shopID, externalOrderID)
}

// Attribution is what a touchpoint keeps of the visit that led to it: the
// landing page and referrer, UTM parameters and advertising click ids.
type Attribution struct {
	LandingSite   string            `json:"landing_site,omitempty"`
	ReferringSite string            `json:"referring_site,omitempty"`
	UTM           map[string]string `json:"utm,omitempty"`       // source, medium, campaign, term, content
	ClickIDs      map[string]string `json:"click_ids,omitempty"` // gclid, gbraid, wbraid, fbclid, ttclid, msclkid
}

// OrderLine is one line of an order or checkout.
type OrderLine struct {
	LineID    string `json:"line_id"`
	ProductID string `json:"product_id,omitempty"` // prd_…, "" for a custom line
	VariantID string `json:"variant_id,omitempty"` // the platform's variant id
	SKU       string `json:"sku,omitempty"`
	Title     string `json:"title,omitempty"`
	Quantity  int    `json:"quantity"`
	Price     Amount `json:"price"` // unit price
}

// OrderSnapshot is the state of an order as the platform sent it.
type OrderSnapshot struct {
	ExternalID        string      `json:"external_id"`
	Name              string      `json:"name,omitempty"`
	FinancialStatus   string      `json:"financial_status,omitempty"`
	FulfillmentStatus string      `json:"fulfillment_status,omitempty"`
	Currency          string      `json:"currency,omitempty"`
	TotalPrice        Amount      `json:"total_price"`
	SubtotalPrice     Amount      `json:"subtotal_price"`
	TotalTax          Amount      `json:"total_tax"`
	TotalDiscounts    Amount      `json:"total_discounts"`
	Lines             []OrderLine `json:"lines,omitempty"`
	SourceName        string      `json:"source_name,omitempty"`
	DiscountCodes     []string    `json:"discount_codes,omitempty"`
	Tags              []string    `json:"tags,omitempty"`
	CreatedAt         time.Time   `json:"created_at"`
	UpdatedAt         time.Time   `json:"updated_at"`
	ProcessedAt       time.Time   `json:"processed_at,omitempty"`
	CancelledAt       time.Time   `json:"cancelled_at,omitempty"`
	Attribution
	// Personal data.
	Email          string            `json:"email,omitempty"`
	NoteAttributes map[string]string `json:"note_attributes,omitempty"`
}

var orderPersonalFields = []string{"email", "note_attributes"}

// OrderRecorded: the platform sent a snapshot of an order (orders/create,
// orders/updated, orders/paid, orders/fulfilled). Each snapshot supersedes
// the one before it: Supersedes is the stream revision of the snapshot it
// replaces (0 with First for the first). A snapshot older than the one
// already recorded (deliveries arrive out of order) is kept with Stale set
// and changes no read model.
type OrderRecorded struct {
	OrderID    string `json:"order_id"`
	ShopID     string `json:"shop_id"`
	CustomerID string `json:"customer_id,omitempty"` // cus_…, "" for a guest order
	Topic      string `json:"topic"`
	First      bool   `json:"first,omitempty"`
	Supersedes uint64 `json:"supersedes,omitempty"`
	Stale      bool   `json:"stale,omitempty"`
	OrderSnapshot
}

// EventType implements Event.
func (OrderRecorded) EventType() string { return "OrderRecorded" }

// Subject implements Personal: the customer, or the guest order's subject.
func (e OrderRecorded) Subject() string {
	if e.CustomerID != "" {
		return e.CustomerID
	}
	return GuestSubject(e.ShopID, e.ExternalID)
}

// PersonalFields implements Personal.
func (OrderRecorded) PersonalFields() []string { return orderPersonalFields }

// RefundLine is one refunded order line.
type RefundLine struct {
	LineID   string `json:"line_id"`
	Quantity int    `json:"quantity"`
	Subtotal Amount `json:"subtotal"`
}

// RefundRecorded: money went back to the customer (refunds/create).
// Amount is the sum of the successful refund transactions, or of the
// refunded lines when the payload has no transaction.
type RefundRecorded struct {
	RefundID   string       `json:"refund_id"`
	OrderID    string       `json:"order_id"`
	ShopID     string       `json:"shop_id"`
	CustomerID string       `json:"customer_id,omitempty"` // from the order, when known
	ExternalID string       `json:"external_id"`
	Amount     Amount       `json:"amount"`
	Currency   string       `json:"currency,omitempty"`
	Lines      []RefundLine `json:"lines,omitempty"`
	CreatedAt  time.Time    `json:"created_at"`
}

// EventType implements Event.
func (RefundRecorded) EventType() string { return "RefundRecorded" }

// Order is the order aggregate: what supersession, refunds and the admin
// API's order actions need.
type Order struct {
	ID         string
	ShopID     string
	CustomerID string
	ExternalID string
	Currency   string
	Exists     bool
	UpdatedAt  time.Time
	Revision   uint64 // stream revision of the current snapshot
	Refunds    map[string]bool
	// Total, CancelledAt and Lines (line id → quantity ordered) are the
	// current snapshot's; Refunded sums the refunds recorded.
	Total       Amount
	Refunded    Amount
	CancelledAt time.Time
	Lines       map[string]int
	applied     uint64 // events folded so far: the next event's revision
	// actions are the order actions requested through the admin API;
	// refundedExternal the platform ids of the refunds recorded.
	actions          map[string]*orderAction
	refundedExternal map[string]bool
}

// Apply folds an event into the order.
func (o *Order) Apply(e Event) {
	rev := o.applied
	o.applied++
	switch ev := e.(type) {
	case *OrderRecorded:
		if ev.Stale {
			return
		}
		o.ID, o.ShopID, o.Exists = ev.OrderID, ev.ShopID, true
		o.CustomerID, o.Currency, o.UpdatedAt, o.Revision = ev.CustomerID, ev.Currency, ev.UpdatedAt, rev
		o.ExternalID, o.Total, o.CancelledAt = ev.ExternalID, ev.TotalPrice, ev.CancelledAt
		o.Lines = make(map[string]int, len(ev.Lines))
		for _, l := range ev.Lines {
			o.Lines[l.LineID] += l.Quantity
		}
		if o.Cancelled() {
			for _, a := range o.actions {
				if a.kind == OrderActionCancel && a.live() {
					a.status = ActionStatusConfirmed
				}
			}
		}
	case *RefundRecorded:
		if o.Refunds == nil {
			o.Refunds = map[string]bool{}
		}
		if !o.Refunds[ev.RefundID] {
			o.Refunded += ev.Amount
		}
		o.Refunds[ev.RefundID] = true
		o.confirmRefund(ev.ExternalID)
	case *OrderCancellationRequested, *OrderRefundRequested, *OrderActionSubmitted, *OrderActionFailed:
		o.applyAction(e)
	}
}

// RecordSnapshot decides what a platform snapshot of the order means: the
// first one, one that supersedes the current snapshot, or a stale one (its
// updated_at is older than the current snapshot's).
func (o *Order) RecordSnapshot(shopID, orderID, customerID, topic string, s OrderSnapshot) (*OrderRecorded, error) {
	if s.ExternalID == "" {
		return nil, Invalid("id", "order id is required")
	}
	ev := &OrderRecorded{OrderID: orderID, ShopID: shopID, CustomerID: customerID, Topic: topic, OrderSnapshot: s}
	switch {
	case !o.Exists:
		ev.First = true
	case !s.UpdatedAt.IsZero() && s.UpdatedAt.Before(o.UpdatedAt):
		ev.Stale = true
	default:
		ev.Supersedes = o.Revision
	}
	return ev, nil
}

// RecordRefund decides a refund of the order; a refund already recorded
// changes nothing.
func (o *Order) RecordRefund(shopID, orderID string, r RefundRecorded) *RefundRecorded {
	if o.Refunds[r.RefundID] {
		return nil
	}
	r.OrderID, r.ShopID = orderID, shopID
	if o.Exists {
		r.CustomerID = o.CustomerID
		if r.Currency == "" {
			r.Currency = o.Currency
		}
	}
	return &r
}

// Variant is one variant of a product.
type Variant struct {
	VariantID string `json:"variant_id"`
	SKU       string `json:"sku,omitempty"`
	Price     Amount `json:"price"`
	// CompareAtPrice is the "was" price shown beside Price (nil: none).
	CompareAtPrice    *Amount `json:"compare_at_price,omitempty"`
	InventoryItemID   string  `json:"inventory_item_id,omitempty"`
	InventoryQuantity int     `json:"inventory_quantity"`
}

// ProductSnapshot is a product as the platform sent it.
type ProductSnapshot struct {
	ExternalID  string    `json:"external_id"`
	Title       string    `json:"title"`
	Handle      string    `json:"handle,omitempty"`
	Status      string    `json:"status,omitempty"` // active, archived, draft
	Vendor      string    `json:"vendor,omitempty"`
	ProductType string    `json:"product_type,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	Variants    []Variant `json:"variants,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// ProductRecorded: the platform sent a product (products/create,
// products/update). A snapshot older than the current one is Stale.
type ProductRecorded struct {
	ProductID string `json:"product_id"`
	ShopID    string `json:"shop_id"`
	Topic     string `json:"topic"`
	Stale     bool   `json:"stale,omitempty"`
	ProductSnapshot
}

// EventType implements Event.
func (ProductRecorded) EventType() string { return "ProductRecorded" }

// ProductDeleted: the product was deleted on the platform (products/delete).
type ProductDeleted struct {
	ProductID  string    `json:"product_id"`
	ShopID     string    `json:"shop_id"`
	ExternalID string    `json:"external_id"`
	DeletedAt  time.Time `json:"deleted_at"`
}

// EventType implements Event.
func (ProductDeleted) EventType() string { return "ProductDeleted" }

// Product is the product aggregate.
type Product struct {
	Exists    bool
	Deleted   bool
	UpdatedAt time.Time
}

// Apply folds an event into the product.
func (p *Product) Apply(e Event) {
	switch ev := e.(type) {
	case *ProductRecorded:
		if !ev.Stale {
			p.Exists, p.UpdatedAt = true, ev.UpdatedAt
		}
	case *ProductDeleted:
		p.Deleted = true
	}
}

// RecordSnapshot decides a product snapshot; after a deletion, or when
// older than the current snapshot, it is kept as Stale.
func (p *Product) RecordSnapshot(shopID, productID, topic string, s ProductSnapshot) (*ProductRecorded, error) {
	if s.ExternalID == "" {
		return nil, Invalid("id", "product id is required")
	}
	stale := p.Deleted || (p.Exists && !s.UpdatedAt.IsZero() && s.UpdatedAt.Before(p.UpdatedAt))
	return &ProductRecorded{ProductID: productID, ShopID: shopID, Topic: topic, Stale: stale, ProductSnapshot: s}, nil
}

// InventoryLevelUpdated: the available quantity of an inventory item at a
// location (inventory_levels/update). Available is nil when the platform
// does not track the item.
type InventoryLevelUpdated struct {
	LevelID         string    `json:"level_id"`
	ShopID          string    `json:"shop_id"`
	InventoryItemID string    `json:"inventory_item_id"`
	LocationID      string    `json:"location_id"`
	Available       *int      `json:"available"`
	UpdatedAt       time.Time `json:"updated_at"`
	Stale           bool      `json:"stale,omitempty"`
}

// EventType implements Event.
func (InventoryLevelUpdated) EventType() string { return "InventoryLevelUpdated" }

// InventoryLevelID is the id of one item's level at one location.
func InventoryLevelID(shopID, itemID, locationID string) string {
	return IDFromExternal(PrefixInventory, "inventory-level", shopID, itemID+"\x00"+locationID)
}

// InventoryLevel is the inventory level aggregate.
type InventoryLevel struct{ UpdatedAt time.Time }

// Apply folds an event into the level.
func (l *InventoryLevel) Apply(e Event) {
	if ev, ok := e.(*InventoryLevelUpdated); ok && !ev.Stale {
		l.UpdatedAt = ev.UpdatedAt
	}
}

// CartLine is one line of a cart.
type CartLine struct {
	ProductID string `json:"product_id,omitempty"`
	VariantID string `json:"variant_id,omitempty"`
	SKU       string `json:"sku,omitempty"`
	Title     string `json:"title,omitempty"`
	Quantity  int    `json:"quantity"`
	Price     Amount `json:"price"`
	LinePrice Amount `json:"line_price"`
}

// CartRecorded: a storefront cart was created or changed (carts/create,
// carts/update), tracked for cart recovery. The cart token is not kept: the
// cart id is derived from it.
type CartRecorded struct {
	CartID    string     `json:"cart_id"`
	ShopID    string     `json:"shop_id"`
	Topic     string     `json:"topic"`
	Lines     []CartLine `json:"lines,omitempty"`
	Total     Amount     `json:"total"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	Stale     bool       `json:"stale,omitempty"`
}

// EventType implements Event.
func (CartRecorded) EventType() string { return "CartRecorded" }

// CheckoutSnapshot is a checkout as the platform sent it.
type CheckoutSnapshot struct {
	ExternalID  string      `json:"external_id"`
	CartID      string      `json:"cart_id,omitempty"` // crt_…, derived from the cart token
	TotalPrice  Amount      `json:"total_price"`
	Currency    string      `json:"currency,omitempty"`
	Lines       []OrderLine `json:"lines,omitempty"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
	CompletedAt time.Time   `json:"completed_at,omitempty"`
	Attribution
	// Personal data: the e-mail, and the recovery link (it carries a key
	// that opens the checkout).
	Email       string `json:"email,omitempty"`
	RecoveryURL string `json:"recovery_url,omitempty"`
}

var checkoutPersonalFields = []string{"email", "recovery_url"}

// CheckoutRecorded: a checkout was started or changed (checkouts/create,
// checkouts/update); it is a pre-purchase attribution touchpoint and the
// trigger of cart-abandonment journeys.
type CheckoutRecorded struct {
	CheckoutID string `json:"checkout_id"`
	ShopID     string `json:"shop_id"`
	CustomerID string `json:"customer_id,omitempty"`
	Topic      string `json:"topic"`
	Stale      bool   `json:"stale,omitempty"`
	// TokenID is CheckoutTokenID of the checkout's token: the storefront
	// pixel reports the same id, which links the visitor to the customer.
	TokenID string `json:"token_id,omitempty"`
	CheckoutSnapshot
}

// EventType implements Event.
func (CheckoutRecorded) EventType() string { return "CheckoutRecorded" }

// Subject implements Personal: the customer, or the checkout itself for a
// guest.
func (e CheckoutRecorded) Subject() string {
	if e.CustomerID != "" {
		return e.CustomerID
	}
	return IDFromExternal(PrefixCustomer, "guest-checkout", e.ShopID, e.ExternalID)
}

// PersonalFields implements Personal.
func (CheckoutRecorded) PersonalFields() []string { return checkoutPersonalFields }

// Snapshot is the aggregate of a resource the platform sends whole snapshots
// of (carts, checkouts, inventory levels, themes): only their freshness.
type Snapshot struct{ UpdatedAt time.Time }

// Apply folds an event into the snapshot.
func (s *Snapshot) Apply(e Event) {
	var at time.Time
	switch ev := e.(type) {
	case *CartRecorded:
		if ev.Stale {
			return
		}
		at = ev.UpdatedAt
	case *CheckoutRecorded:
		if ev.Stale {
			return
		}
		at = ev.UpdatedAt
	case *ThemeRecorded:
		at = ev.UpdatedAt
	default:
		return
	}
	s.Advance(at)
}

// Advance takes a snapshot taken at at that was applied (not stale): the
// freshest one is what later snapshots are compared with. Aggregates that
// fold other events (Customer) keep a Snapshot and advance it themselves.
func (s *Snapshot) Advance(at time.Time) {
	if at.After(s.UpdatedAt) {
		s.UpdatedAt = at
	}
}

// IsStale reports whether a snapshot taken at updatedAt is older than the
// one recorded. A snapshot without a time is never stale (the platform's
// updated_at is absent from some payloads).
func (s *Snapshot) IsStale(updatedAt time.Time) bool {
	return !updatedAt.IsZero() && updatedAt.Before(s.UpdatedAt)
}

// Subscription contract statuses that end a contract (churn).
var endedContractStatuses = map[string]bool{"cancelled": true, "expired": true, "failed": true}

// ContractEnded reports whether a contract status means churn.
func ContractEnded(status string) bool { return endedContractStatuses[strings.ToLower(status)] }

// SubscriptionContractRecorded: a subscription contract was created or
// changed (subscription_contracts/create, subscription_contracts/update).
// ChurnedAt is set when this snapshot ends an active contract.
type SubscriptionContractRecorded struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	CustomerID     string    `json:"customer_id,omitempty"`
	ExternalID     string    `json:"external_id"`
	Topic          string    `json:"topic"`
	Status         string    `json:"status"`
	Interval       string    `json:"interval,omitempty"`
	IntervalCount  int       `json:"interval_count,omitempty"`
	Currency       string    `json:"currency,omitempty"`
	OriginOrderID  string    `json:"origin_order_id,omitempty"` // ord_…
	RecordedAt     time.Time `json:"recorded_at"`
	ChurnedAt      time.Time `json:"churned_at,omitempty"`
}

// EventType implements Event.
func (SubscriptionContractRecorded) EventType() string { return "SubscriptionContractRecorded" }

// Dunning states of a subscription contract.
const (
	DunningCurrent = "current" // the last billing attempt succeeded (or none failed)
	DunningDunning = "dunning" // one or more consecutive attempts failed
)

// BillingAttemptRecorded: a billing attempt of a contract succeeded
// (recognised recurring revenue, from the order it created) or failed
// (dunning). FailedAttempts is the number of consecutive failures after it.
type BillingAttemptRecorded struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	AttemptID      string    `json:"attempt_id"`
	Success        bool      `json:"success"`
	OrderID        string    `json:"order_id,omitempty"` // ord_… of the order created
	ErrorCode      string    `json:"error_code,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty"`
	DunningState   string    `json:"dunning_state"`
	FailedAttempts int       `json:"failed_attempts"`
	AttemptedAt    time.Time `json:"attempted_at"`
}

// EventType implements Event.
func (BillingAttemptRecorded) EventType() string { return "BillingAttemptRecorded" }

// Subscription is the subscription contract aggregate.
type Subscription struct {
	Exists   bool
	Status   string
	Failures int
	Attempts map[string]bool
}

// Apply folds an event into the contract.
func (s *Subscription) Apply(e Event) {
	switch ev := e.(type) {
	case *SubscriptionContractRecorded:
		s.Exists, s.Status = true, ev.Status
	case *BillingAttemptRecorded:
		if s.Attempts == nil {
			s.Attempts = map[string]bool{}
		}
		s.Attempts[ev.AttemptID] = true
		s.Failures = ev.FailedAttempts
	}
}

// RecordContract decides a contract snapshot; it marks the churn when an
// active (or unknown) contract moves to an ended status.
func (s *Subscription) RecordContract(ev SubscriptionContractRecorded, now time.Time) *SubscriptionContractRecorded {
	ev.Status = strings.ToLower(ev.Status)
	if ContractEnded(ev.Status) && !ContractEnded(s.Status) {
		ev.ChurnedAt = now.UTC()
	}
	ev.RecordedAt = now.UTC()
	return &ev
}

// RecordAttempt decides a billing attempt; an attempt already recorded
// changes nothing.
func (s *Subscription) RecordAttempt(ev BillingAttemptRecorded) *BillingAttemptRecorded {
	if s.Attempts[ev.AttemptID] {
		return nil
	}
	if ev.Success {
		ev.FailedAttempts, ev.DunningState = 0, DunningCurrent
	} else {
		ev.FailedAttempts, ev.DunningState = s.Failures+1, DunningDunning
	}
	return &ev
}

// ThemeRoleMain is the role of the published, live theme.
const ThemeRoleMain = "main"

// ThemeRecorded: the live theme was published or edited (themes/publish,
// themes/update of the main-role theme), kept to correlate theme changes
// with SEO crawl regressions.
type ThemeRecorded struct {
	ThemeID    string    `json:"theme_id"`
	ShopID     string    `json:"shop_id"`
	ExternalID string    `json:"external_id"`
	Topic      string    `json:"topic"`
	Name       string    `json:"name"`
	Role       string    `json:"role"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// EventType implements Event.
func (ThemeRecorded) EventType() string { return "ThemeRecorded" }

// RetentionAfterUninstall is how long a shop's data is kept after the app
// is uninstalled (the specification's limit).
const RetentionAfterUninstall = 30 * 24 * time.Hour

// AppUninstalled: the shop uninstalled the app; its data is erased when
// RetentionDueAt passes (shop/redact).
type AppUninstalled struct {
	ShopID         string    `json:"shop_id"`
	UninstalledAt  time.Time `json:"uninstalled_at"`
	RetentionDueAt time.Time `json:"retention_due_at"`
}

// EventType implements Event.
func (AppUninstalled) EventType() string { return "AppUninstalled" }

// AppSubscriptionUpdated: the shop's app subscription changed
// (app_subscriptions/update). Plan is the tier its name maps to ("" when
// the name is not one of ours); when it moves the shop's tier a
// ShopPlanChanged follows in the same append.
type AppSubscriptionUpdated struct {
	ShopID         string    `json:"shop_id"`
	SubscriptionID string    `json:"subscription_id"` // the platform's gid
	Name           string    `json:"name"`
	Status         string    `json:"status"`
	Plan           Plan      `json:"plan,omitempty"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// EventType implements Event.
func (AppSubscriptionUpdated) EventType() string { return "AppSubscriptionUpdated" }

// PlanFromSubscriptionName maps an app subscription's name ("Pro Plus",
// "pro-plus", "Agency") to a plan; ok is false for any other name.
func PlanFromSubscriptionName(name string) (Plan, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.NewReplacer("+", "_plus", " ", "_", "-", "_").Replace(n)
	n = strings.ReplaceAll(n, "__", "_")
	p, err := ParsePlan(n)
	return p, err == nil
}

// UninstallApp decides the uninstallation of the app; a shop already
// uninstalled changes nothing.
func (s *Shop) UninstallApp(at time.Time) (*AppUninstalled, error) {
	if !s.Exists {
		return nil, NotFound("shop")
	}
	if s.Uninstalled {
		return nil, nil
	}
	at = at.UTC()
	return &AppUninstalled{ShopID: s.ID, UninstalledAt: at, RetentionDueAt: at.Add(RetentionAfterUninstall)}, nil
}

// UpdateAppSubscription decides what an app subscription update means for
// the shop: the update itself, and a plan change when an ACTIVE
// subscription names another tier, or when the subscription of the current
// tier ends (CANCELLED, EXPIRED, DECLINED, FROZEN: back to starter).
func (s *Shop) UpdateAppSubscription(ev AppSubscriptionUpdated, now time.Time) ([]Event, error) {
	if !s.Exists {
		return nil, NotFound("shop")
	}
	ev.ShopID = s.ID
	ev.Status = strings.ToUpper(strings.TrimSpace(ev.Status))
	plan, known := PlanFromSubscriptionName(ev.Name)
	if known {
		ev.Plan = plan
	}
	out := []Event{&ev}
	target := Plan("")
	switch ev.Status {
	case "ACTIVE":
		if known {
			target = plan
		}
	case "CANCELLED", "EXPIRED", "DECLINED", "FROZEN":
		if known && plan == s.Plan {
			target = PlanStarter
		}
	}
	if target != "" && target != s.Plan {
		out = append(out, &ShopPlanChanged{ShopID: s.ID, Plan: target, ChangedAt: now.UTC()})
	}
	return out, nil
}

// PrivacyCustomer names the data subject of a privacy request.
type PrivacyCustomer struct {
	CustomerID string `json:"customer_id,omitempty"` // cus_…, "" when the platform sent no id
	ExternalID string `json:"external_id,omitempty"`
	// Personal data.
	Email string `json:"email,omitempty"`
	Phone string `json:"phone,omitempty"`
}

var privacyPersonalFields = []string{"email", "phone"}

// CustomerDataRequested: the platform asked for an export of a customer's
// data (customers/data_request). The export itself is another issue.
type CustomerDataRequested struct {
	ShopID          string   `json:"shop_id"`
	RequestID       string   `json:"request_id"`                 // the platform's data_request id
	OrdersRequested []string `json:"orders_requested,omitempty"` // ord_…
	PrivacyCustomer
}

// EventType implements Event.
func (CustomerDataRequested) EventType() string { return "CustomerDataRequested" }

// Subject implements Personal.
func (e CustomerDataRequested) Subject() string { return privacySubject(e.ShopID, e.PrivacyCustomer) }

// PersonalFields implements Personal.
func (CustomerDataRequested) PersonalFields() []string { return privacyPersonalFields }

// CustomerRedactRequested: the platform asked to erase a customer
// (customers/redact). The erase reactor (projections/erasure) acts on it.
type CustomerRedactRequested struct {
	ShopID         string   `json:"shop_id"`
	OrdersToRedact []string `json:"orders_to_redact,omitempty"` // ord_…
	// OrdersToRedactExternal are the same orders' platform ids (the
	// subjects of guest orders derive from them).
	OrdersToRedactExternal []string `json:"orders_to_redact_external,omitempty"`
	PrivacyCustomer
}

// EventType implements Event.
func (CustomerRedactRequested) EventType() string { return "CustomerRedactRequested" }

// Subject implements Personal.
func (e CustomerRedactRequested) Subject() string { return privacySubject(e.ShopID, e.PrivacyCustomer) }

// PersonalFields implements Personal.
func (CustomerRedactRequested) PersonalFields() []string { return privacyPersonalFields }

func privacySubject(shopID string, c PrivacyCustomer) string {
	if c.CustomerID != "" {
		return c.CustomerID
	}
	return IDFromExternal(PrefixCustomer, "privacy-request", shopID, c.Email+"\x00"+c.Phone)
}

// ShopRedactRequested: the platform asked to erase all the shop's data
// (shop/redact, 30 days after uninstall).
type ShopRedactRequested struct {
	ShopID      string    `json:"shop_id"`
	RequestedAt time.Time `json:"requested_at"`
}

// EventType implements Event.
func (ShopRedactRequested) EventType() string { return "ShopRedactRequested" }

// Ids of commerce resources, derived from the platform's ids.
func OrderIDFromExternal(shopID, ext string) string {
	return IDFromExternal(PrefixOrder, "order", shopID, ext)
}
func ProductIDFromExternal(shopID, ext string) string {
	return IDFromExternal(PrefixProduct, "product", shopID, ext)
}
func CartIDFromToken(shopID, token string) string {
	return IDFromExternal(PrefixCart, "cart", shopID, token)
}
func CheckoutIDFromExternal(shopID, ext string) string {
	return IDFromExternal(PrefixCheckout, "checkout", shopID, ext)
}
func SubscriptionIDFromExternal(shopID, ext string) string {
	return IDFromExternal(PrefixSubscription, "subscription", shopID, ext)
}
func ThemeIDFromExternal(shopID, ext string) string {
	return IDFromExternal(PrefixTheme, "theme", shopID, ext)
}
