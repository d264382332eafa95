package commands

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The commerce platform's deliveries. Every command here takes the event id
// derived from the delivery id, so a repeated delivery appends nothing, and
// resolves the platform's ids to ours with domain.*FromExternal.

// Delivered is what every delivery-driven command carries.
type Delivered struct {
	ShopID string
	Topic  string
	// EventID is derived from the delivery id: a repeat appends nothing.
	EventID uuid.UUID
	// LikelyNew says the delivery usually creates its resource (a */create
	// topic): the command then tries the append before reading the stream.
	LikelyNew bool
}

func (d Delivered) ids(n int) []uuid.UUID {
	ids := []uuid.UUID{d.EventID}
	for i := 1; i < n; i++ {
		ids = append(ids, eventlog.DeterministicID("follow-up", d.EventID.String(), string(rune('0'+i))))
	}
	return ids
}

// deliver runs a delivery-driven command on one resource stream: decide
// returns the event the delivery means (nil: nothing new), appended under
// the delivery's event id; the result names the resource id.
func deliver[A aggregate](ctx context.Context, h *Handler, d Delivered, stream, id string, fresh func() A, decide func(A) (domain.Event, error), meta Meta) (Result, error) {
	res, err := executeOn(ctx, h, d.ShopID, stream, d.LikelyNew, fresh, func(a A) (decision, error) {
		ev, err := decide(a)
		if err != nil || ev == nil {
			return decision{}, err
		}
		return decision{events: []domain.Event{ev}, ids: d.ids(1)}, nil
	}, meta)
	res.ID = id
	return res, err
}

func customerID(shop, ext string) string {
	if ext == "" {
		return ""
	}
	return domain.CustomerIDFromExternal(shop, ext)
}

// RecordOrder records an order snapshot (orders/create, orders/updated,
// orders/paid, orders/fulfilled).
type RecordOrder struct {
	Delivered
	CustomerExternalID string // "" for a guest order
	Snapshot           domain.OrderSnapshot
}

// RecordOrder runs the command.
func (h *Handler) RecordOrder(ctx context.Context, cmd RecordOrder, meta Meta) (Result, error) {
	if cmd.Snapshot.ExternalID == "" {
		return Result{}, domain.Invalid("id", "order id is required")
	}
	id := domain.OrderIDFromExternal(cmd.ShopID, cmd.Snapshot.ExternalID)
	cus := customerID(cmd.ShopID, cmd.CustomerExternalID)
	return deliver(ctx, h, cmd.Delivered, domain.OrderStream(id), id, func() *domain.Order { return &domain.Order{} },
		func(o *domain.Order) (domain.Event, error) {
			return o.RecordSnapshot(cmd.ShopID, id, cus, cmd.Topic, cmd.Snapshot)
		}, meta)
}

// RecordRefund records a refund of an order (refunds/create).
type RecordRefund struct {
	Delivered
	OrderExternalID string
	Refund          domain.RefundRecorded // ExternalID, Amount, Lines, CreatedAt
}

// RecordRefund runs the command.
func (h *Handler) RecordRefund(ctx context.Context, cmd RecordRefund, meta Meta) (Result, error) {
	if cmd.OrderExternalID == "" || cmd.Refund.ExternalID == "" {
		return Result{}, domain.Invalid("order_id", "refund id and order id are required")
	}
	orderID := domain.OrderIDFromExternal(cmd.ShopID, cmd.OrderExternalID)
	cmd.Refund.RefundID = domain.IDFromExternal(domain.PrefixRefund, "refund", cmd.ShopID, cmd.Refund.ExternalID)
	return deliver(ctx, h, cmd.Delivered, domain.OrderStream(orderID), cmd.Refund.RefundID, func() *domain.Order { return &domain.Order{} },
		func(o *domain.Order) (domain.Event, error) {
			if ev := o.RecordRefund(cmd.ShopID, orderID, cmd.Refund); ev != nil {
				return ev, nil
			}
			return nil, nil
		}, meta)
}

// RecordProduct records a product snapshot (products/create,
// products/update).
type RecordProduct struct {
	Delivered
	Snapshot domain.ProductSnapshot
}

// RecordProduct runs the command.
func (h *Handler) RecordProduct(ctx context.Context, cmd RecordProduct, meta Meta) (Result, error) {
	if cmd.Snapshot.ExternalID == "" {
		return Result{}, domain.Invalid("id", "product id is required")
	}
	id := domain.ProductIDFromExternal(cmd.ShopID, cmd.Snapshot.ExternalID)
	return deliver(ctx, h, cmd.Delivered, domain.ProductStream(id), id, func() *domain.Product { return &domain.Product{} },
		func(p *domain.Product) (domain.Event, error) {
			return p.RecordSnapshot(cmd.ShopID, id, cmd.Topic, cmd.Snapshot)
		}, meta)
}

// DeleteProduct records a product deletion (products/delete).
type DeleteProduct struct {
	Delivered
	ExternalID string
	DeletedAt  time.Time
}

// DeleteProduct runs the command.
func (h *Handler) DeleteProduct(ctx context.Context, cmd DeleteProduct, meta Meta) (Result, error) {
	if cmd.ExternalID == "" {
		return Result{}, domain.Invalid("id", "product id is required")
	}
	id := domain.ProductIDFromExternal(cmd.ShopID, cmd.ExternalID)
	at := cmd.DeletedAt
	if at.IsZero() {
		at = h.now()
	}
	return deliver(ctx, h, cmd.Delivered, domain.ProductStream(id), id, func() *domain.Product { return &domain.Product{} },
		func(p *domain.Product) (domain.Event, error) {
			if p.Deleted {
				return nil, nil
			}
			return &domain.ProductDeleted{ProductID: id, ShopID: cmd.ShopID, ExternalID: cmd.ExternalID, DeletedAt: at.UTC()}, nil
		}, meta)
}

// RecordInventoryLevel records an item's available quantity at a location
// (inventory_levels/update).
type RecordInventoryLevel struct {
	Delivered
	InventoryItemID string
	LocationID      string
	Available       *int
	UpdatedAt       time.Time
}

// RecordInventoryLevel runs the command.
func (h *Handler) RecordInventoryLevel(ctx context.Context, cmd RecordInventoryLevel, meta Meta) (Result, error) {
	if cmd.InventoryItemID == "" || cmd.LocationID == "" {
		return Result{}, domain.Invalid("inventory_item_id", "inventory item id and location id are required")
	}
	id := domain.InventoryLevelID(cmd.ShopID, cmd.InventoryItemID, cmd.LocationID)
	return deliver(ctx, h, cmd.Delivered, domain.InventoryStream(id), id, func() *domain.InventoryLevel { return &domain.InventoryLevel{} },
		func(l *domain.InventoryLevel) (domain.Event, error) {
			return &domain.InventoryLevelUpdated{LevelID: id, ShopID: cmd.ShopID, InventoryItemID: cmd.InventoryItemID,
				LocationID: cmd.LocationID, Available: cmd.Available, UpdatedAt: cmd.UpdatedAt.UTC(),
				Stale: !cmd.UpdatedAt.IsZero() && cmd.UpdatedAt.Before(l.UpdatedAt)}, nil
		}, meta)
}

// RecordCart records a cart snapshot (carts/create, carts/update).
type RecordCart struct {
	Delivered
	Token string // the cart token; only the id derived from it is kept
	Cart  domain.CartRecorded
}

// RecordCart runs the command.
func (h *Handler) RecordCart(ctx context.Context, cmd RecordCart, meta Meta) (Result, error) {
	if cmd.Token == "" {
		return Result{}, domain.Invalid("token", "cart token is required")
	}
	ev := cmd.Cart
	ev.CartID, ev.ShopID, ev.Topic = domain.CartIDFromToken(cmd.ShopID, cmd.Token), cmd.ShopID, cmd.Topic
	return h.recordSnapshot(ctx, cmd.Delivered, domain.CartStream(ev.CartID), ev.CartID, ev.UpdatedAt,
		func(stale bool) domain.Event { ev.Stale = stale; return &ev }, meta)
}

// RecordCheckout records a checkout snapshot (checkouts/create,
// checkouts/update): an attribution touchpoint.
type RecordCheckout struct {
	Delivered
	CustomerExternalID string
	CartToken          string
	Token              string // the checkout's token; only its CheckoutTokenID is kept
	Snapshot           domain.CheckoutSnapshot
}

// RecordCheckout runs the command.
func (h *Handler) RecordCheckout(ctx context.Context, cmd RecordCheckout, meta Meta) (Result, error) {
	if cmd.Snapshot.ExternalID == "" {
		return Result{}, domain.Invalid("id", "checkout id is required")
	}
	ev := domain.CheckoutRecorded{
		CheckoutID: domain.CheckoutIDFromExternal(cmd.ShopID, cmd.Snapshot.ExternalID), ShopID: cmd.ShopID,
		CustomerID: customerID(cmd.ShopID, cmd.CustomerExternalID), Topic: cmd.Topic, CheckoutSnapshot: cmd.Snapshot,
	}
	if cmd.CartToken != "" {
		ev.CartID = domain.CartIDFromToken(cmd.ShopID, cmd.CartToken)
	}
	if cmd.Token != "" {
		ev.TokenID = domain.CheckoutTokenID(cmd.ShopID, cmd.Token)
	}
	return h.recordSnapshot(ctx, cmd.Delivered, domain.CheckoutStream(ev.CheckoutID), ev.CheckoutID, ev.UpdatedAt,
		func(stale bool) domain.Event { ev.Stale = stale; return &ev }, meta)
}

// recordSnapshot appends the snapshot event of a resource the platform
// sends whole, marked stale when older than the one recorded.
func (h *Handler) recordSnapshot(ctx context.Context, d Delivered, stream, id string, updatedAt time.Time, event func(stale bool) domain.Event, meta Meta) (Result, error) {
	return deliver(ctx, h, d, stream, id, func() *domain.Snapshot { return &domain.Snapshot{} },
		func(s *domain.Snapshot) (domain.Event, error) { return event(s.IsStale(updatedAt)), nil }, meta)
}

// RecordSubscriptionContract records a subscription contract snapshot
// (subscription_contracts/create, subscription_contracts/update).
type RecordSubscriptionContract struct {
	Delivered
	ExternalID            string
	CustomerExternalID    string
	OriginOrderExternalID string
	Status                string
	Interval              string
	IntervalCount         int
	Currency              string
}

// RecordSubscriptionContract runs the command.
func (h *Handler) RecordSubscriptionContract(ctx context.Context, cmd RecordSubscriptionContract, meta Meta) (Result, error) {
	if cmd.ExternalID == "" {
		return Result{}, domain.Invalid("id", "subscription contract id is required")
	}
	id := domain.SubscriptionIDFromExternal(cmd.ShopID, cmd.ExternalID)
	in := domain.SubscriptionContractRecorded{
		SubscriptionID: id, ShopID: cmd.ShopID, CustomerID: customerID(cmd.ShopID, cmd.CustomerExternalID),
		ExternalID: cmd.ExternalID, Topic: cmd.Topic, Status: cmd.Status, Interval: cmd.Interval,
		IntervalCount: cmd.IntervalCount, Currency: cmd.Currency,
	}
	if cmd.OriginOrderExternalID != "" {
		in.OriginOrderID = domain.OrderIDFromExternal(cmd.ShopID, cmd.OriginOrderExternalID)
	}
	return deliver(ctx, h, cmd.Delivered, domain.SubscriptionStream(id), id, func() *domain.Subscription { return &domain.Subscription{} },
		func(s *domain.Subscription) (domain.Event, error) { return s.RecordContract(in, h.now()), nil }, meta)
}

// RecordBillingAttempt records a billing attempt of a subscription contract
// (subscription_billing_attempts/success, …/failure).
type RecordBillingAttempt struct {
	Delivered
	ContractExternalID string
	AttemptExternalID  string
	Success            bool
	OrderExternalID    string
	ErrorCode          string
	ErrorMessage       string
	AttemptedAt        time.Time
}

// RecordBillingAttempt runs the command.
func (h *Handler) RecordBillingAttempt(ctx context.Context, cmd RecordBillingAttempt, meta Meta) (Result, error) {
	if cmd.ContractExternalID == "" || cmd.AttemptExternalID == "" {
		return Result{}, domain.Invalid("subscription_contract_id", "billing attempt id and contract id are required")
	}
	id := domain.SubscriptionIDFromExternal(cmd.ShopID, cmd.ContractExternalID)
	at := cmd.AttemptedAt
	if at.IsZero() {
		at = h.now()
	}
	in := domain.BillingAttemptRecorded{SubscriptionID: id, ShopID: cmd.ShopID, AttemptID: cmd.AttemptExternalID,
		Success: cmd.Success, ErrorCode: cmd.ErrorCode, ErrorMessage: cmd.ErrorMessage, AttemptedAt: at.UTC()}
	if cmd.OrderExternalID != "" {
		in.OrderID = domain.OrderIDFromExternal(cmd.ShopID, cmd.OrderExternalID)
	}
	return deliver(ctx, h, cmd.Delivered, domain.SubscriptionStream(id), id, func() *domain.Subscription { return &domain.Subscription{} },
		func(s *domain.Subscription) (domain.Event, error) {
			if ev := s.RecordAttempt(in); ev != nil {
				return ev, nil
			}
			return nil, nil
		}, meta)
}

// RecordTheme records the main theme's publish or edit (themes/publish,
// themes/update). Only the main-role theme is kept.
type RecordTheme struct {
	Delivered
	ExternalID string
	Name       string
	Role       string
	UpdatedAt  time.Time
}

// RecordTheme runs the command.
func (h *Handler) RecordTheme(ctx context.Context, cmd RecordTheme, meta Meta) (Result, error) {
	if cmd.ExternalID == "" {
		return Result{}, domain.Invalid("id", "theme id is required")
	}
	if cmd.Role != domain.ThemeRoleMain {
		return Result{}, domain.Invalid("role", "only the main-role theme is kept")
	}
	id := domain.ThemeIDFromExternal(cmd.ShopID, cmd.ExternalID)
	ev := &domain.ThemeRecorded{ThemeID: id, ShopID: cmd.ShopID, ExternalID: cmd.ExternalID, Topic: cmd.Topic,
		Name: cmd.Name, Role: cmd.Role, UpdatedAt: cmd.UpdatedAt.UTC()}
	return h.recordSnapshot(ctx, cmd.Delivered, domain.ThemeStream(id), id, time.Time{},
		func(bool) domain.Event { return ev }, meta)
}

// UninstallApp records that the shop uninstalled the app (app/uninstalled)
// and starts the 30-day retention countdown.
type UninstallApp struct {
	Delivered
	At time.Time // zero: now
}

// UninstallApp runs the command.
func (h *Handler) UninstallApp(ctx context.Context, cmd UninstallApp, meta Meta) (Result, error) {
	at := cmd.At
	if at.IsZero() {
		at = h.now()
	}
	return deliver(ctx, h, cmd.Delivered, domain.ShopStream(cmd.ShopID), cmd.ShopID, func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (domain.Event, error) {
			if ev, err := s.UninstallApp(at); err != nil || ev != nil {
				return ev, err
			}
			return nil, nil
		}, meta)
}

// UpdateAppSubscription records a change of the shop's app subscription
// (app_subscriptions/update) and the plan change it implies.
type UpdateAppSubscription struct {
	Delivered
	SubscriptionID string
	Name           string
	Status         string
	UpdatedAt      time.Time
}

// UpdateAppSubscription runs the command.
func (h *Handler) UpdateAppSubscription(ctx context.Context, cmd UpdateAppSubscription, meta Meta) (Result, error) {
	res, err := execute(ctx, h, cmd.ShopID, domain.ShopStream(cmd.ShopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			evs, err := s.UpdateAppSubscription(domain.AppSubscriptionUpdated{SubscriptionID: cmd.SubscriptionID,
				Name: cmd.Name, Status: cmd.Status, UpdatedAt: cmd.UpdatedAt.UTC()}, h.now())
			if err != nil {
				return decision{}, err
			}
			// An ACTIVE subscription after an uninstall means the app was
			// installed again: the retention countdown is cancelled.
			if re := s.ReinstallBySubscription(strings.ToUpper(strings.TrimSpace(cmd.Status)), cmd.UpdatedAt); re != nil {
				evs = append(evs, re)
			}
			return decision{events: evs, ids: cmd.ids(len(evs))}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, err
}

// Privacy request kinds.
const (
	PrivacyDataRequest    = "customers/data_request"
	PrivacyCustomerRedact = "customers/redact"
	PrivacyShopRedact     = "shop/redact"
)

// RecordPrivacyRequest records a GDPR request of the platform
// (customers/data_request, customers/redact, shop/redact); the erasure and
// export pipelines act on these events.
type RecordPrivacyRequest struct {
	Delivered
	RequestID          string // data requests: the platform's id
	CustomerExternalID string
	Email, Phone       string
	Orders             []string // the platform's order ids
}

// RecordPrivacyRequest runs the command.
func (h *Handler) RecordPrivacyRequest(ctx context.Context, cmd RecordPrivacyRequest, meta Meta) (Result, error) {
	who := domain.PrivacyCustomer{CustomerID: customerID(cmd.ShopID, cmd.CustomerExternalID),
		ExternalID: cmd.CustomerExternalID, Email: cmd.Email, Phone: cmd.Phone}
	orders := make([]string, 0, len(cmd.Orders))
	for _, o := range cmd.Orders {
		orders = append(orders, domain.OrderIDFromExternal(cmd.ShopID, o))
	}
	var ev domain.Event
	switch cmd.Topic {
	case PrivacyDataRequest:
		ev = &domain.CustomerDataRequested{ShopID: cmd.ShopID, RequestID: cmd.RequestID, OrdersRequested: orders, PrivacyCustomer: who}
	case PrivacyCustomerRedact:
		ev = &domain.CustomerRedactRequested{ShopID: cmd.ShopID, OrdersToRedact: orders, OrdersToRedactExternal: cmd.Orders, PrivacyCustomer: who}
	case PrivacyShopRedact:
		ev = &domain.ShopRedactRequested{ShopID: cmd.ShopID, RequestedAt: h.now().UTC()}
	default:
		return Result{}, domain.Invalid("topic", "not a privacy topic")
	}
	data, err := h.codec.Encode(ctx, cmd.EventID, cmd.ShopID, ev, h.now(), meta.metadata())
	if err != nil {
		return Result{}, err
	}
	res, err := h.log.Append(ctx, domain.GDPRStream(cmd.ShopID), eventlog.Any(), data)
	if err != nil {
		return Result{}, err
	}
	return Result{ID: cmd.EventID.String(), Position: res.Position, Revision: res.NextExpectedRevision}, nil
}
