package readapi

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
)

// ScopeOrdersRead is the scope of every order read.
const ScopeOrdersRead = domain.ScopeOrdersRead

// FinancialStatuses are the values filter[financial_status] accepts (the
// commerce platform's order financial statuses).
var FinancialStatuses = []string{"pending", "authorized", "partially_paid", "paid", "partially_refunded", "refunded", "voided", "expired"}

// FulfillmentStatuses are the values filter[fulfillment_status] accepts;
// `unfulfilled` is an order the platform reports no fulfillment for.
var FulfillmentStatuses = []string{commerce.FulfillmentUnfulfilled, "partial", "fulfilled", "restocked"}

// CustomerFinder finds customers of a shop: one (a not_found error
// otherwise), or many at once (the ids found).
type CustomerFinder interface {
	Get(ctx context.Context, shop, id string) (*customers.Customer, error)
	GetMany(ctx context.Context, shop string, ids []string) (map[string]*customers.Customer, error)
}

// Orders serves the order reads from the commerce read model.
type Orders struct {
	q         *commerce.Queries
	customers CustomerFinder
	auth      *auth.Authenticator
	cursors   *httpapi.CursorCodec
	wait      Waiter
	now       func() time.Time // the instant included customers' lifecycle stages are computed at
}

// NewOrders returns the order read handlers; customers tells a customer
// without orders from one the shop does not have.
func NewOrders(q *commerce.Queries, customers CustomerFinder, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Orders {
	return &Orders{q: q, customers: customers, auth: a, cursors: cursors, wait: wait, now: time.Now}
}

// orderIncludes are the include values of the order reads.
var orderIncludes = []string{"customer"}

// relations are the relations an order read can include: the order's
// customer.
func (o *Orders) relations(shop string) []Relation {
	return []Relation{customerRelation(o.customers, shop, o.now, func(res httpapi.Resource) string {
		if a, ok := res.Attributes.(OrderAttributes); ok && a.CustomerID != nil {
			return *a.CustomerID
		}
		return ""
	})}
}

// orderFilters are the filters of every order list; the shop-wide list
// adds customer_id.
func orderFilters() map[string]httpapi.FilterKind {
	return map[string]httpapi.FilterKind{
		"financial_status":   httpapi.EnumFilter(FinancialStatuses...),
		"fulfillment_status": httpapi.EnumFilter(FulfillmentStatuses...),
		"date_from":          httpapi.DateFilter(),
		"date_to":            httpapi.DateFilter(),
	}
}

var orderSorts = []string{commerce.OrderSortCreatedAt, commerce.OrderSortUpdatedAt, commerce.OrderSortTotalPrice}

// OrderListSpec is the allow-list of GET /api/v1/orders.
func OrderListSpec() httpapi.ListSpec {
	f := orderFilters()
	f["customer_id"] = httpapi.StringFilter()
	return httpapi.ListSpec{Resource: "orders", Filters: f, Sorts: orderSorts, DefaultSort: "-" + commerce.OrderSortCreatedAt,
		Includes: orderIncludes}
}

// CustomerOrderListSpec is the allow-list of GET
// /api/v1/customers/{customer_id}/orders; its cursors are bound to the
// customer.
func CustomerOrderListSpec(customerID string) httpapi.ListSpec {
	return httpapi.ListSpec{Resource: "customer_orders:" + customerID, Filters: orderFilters(), Sorts: orderSorts,
		DefaultSort: "-" + commerce.OrderSortCreatedAt, Includes: orderIncludes}
}

// Routes registers the order reads.
func (o *Orders) Routes(r *mux.Router) {
	r.Handle("/api/v1/orders", httpapi.Stable(httpapi.Compressed(o.auth.Require(ScopeOrdersRead, http.HandlerFunc(o.handleList))))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/orders/{order_id}", httpapi.Stable(o.auth.Require(ScopeOrdersRead, http.HandlerFunc(o.handleGet)))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/customers/{customer_id}/orders", httpapi.Beta(httpapi.Compressed(o.auth.Require(ScopeOrdersRead,
		http.HandlerFunc(o.handleCustomerList))))).Methods(http.MethodGet)
}

func (o *Orders) handleList(w http.ResponseWriter, r *http.Request) {
	if err := o.list(w, r, OrderListSpec(), ""); err != nil {
		httpapi.WriteError(w, r, err)
	}
}

func (o *Orders) handleCustomerList(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["customer_id"]
	if err := o.list(w, r, CustomerOrderListSpec(id), id); err != nil {
		httpapi.WriteError(w, r, err)
	}
}

// list answers a page of the shop's orders (of one customer when
// customerID is set).
func (o *Orders) list(w http.ResponseWriter, r *http.Request, spec httpapi.ListSpec, customerID string) error {
	p, _ := auth.FromContext(r.Context())
	params, err := httpapi.ParseList(r, spec, o.cursors)
	if err != nil {
		return err
	}
	q, err := orderListQuery(p.ShopID, customerID, params)
	if err != nil {
		return err
	}
	rels := o.relations(p.ShopID)
	projectors := includeProjectors(commerce.Name, params.Include, rels)
	if customerID != "" && !slices.Contains(projectors, customers.Name) {
		projectors = append(projectors, customers.Name) // customerExists reads it
	}
	if err := WaitForPosition(r, o.wait, projectors...); err != nil {
		return err
	}
	rows, next, err := o.q.ListOrders(r.Context(), q)
	if err != nil {
		return err
	}
	if customerID != "" && len(rows) == 0 && params.Cursor == nil {
		if err := o.customerExists(r.Context(), p.ShopID, customerID); err != nil {
			return err
		}
	}
	items := make([]httpapi.Resource, len(rows))
	for i := range rows {
		items[i] = OrderResource(&rows[i])
	}
	page := httpapi.Page{}
	if page.Included, err = embed(r.Context(), params.Include, rels, items); err != nil {
		return err
	}
	if next != nil {
		if page.NextCursor, err = params.NextCursor(next); err != nil {
			return err
		}
	}
	httpapi.WriteList(w, r, items, page)
	return nil
}

// orderListQuery turns validated list parameters into the read model's
// query.
func orderListQuery(shop, customerID string, params httpapi.ListParams) (commerce.OrderListQuery, error) {
	q := commerce.OrderListQuery{
		Shop: shop, CustomerID: customerID, FinancialStatus: params.Filters["financial_status"],
		FulfillmentStatus: params.Filters["fulfillment_status"], Sort: params.Sort.Field, Desc: params.Sort.Desc, Limit: params.Limit,
	}
	if customerID == "" {
		q.CustomerID = params.Filters["customer_id"]
	}
	if from, ok := params.FilterDate("date_from"); ok {
		q.CreatedFrom = from
	}
	if to, ok := params.FilterDate("date_to"); ok {
		if !q.CreatedFrom.IsZero() && to.Before(q.CreatedFrom) {
			return q, httpapi.InvalidParameter("filter[date_to]", "date_to is before date_from")
		}
		q.CreatedBefore = to.AddDate(0, 0, 1) // date_to is inclusive
	}
	if params.Cursor != nil {
		var k commerce.OrderKey
		if err := params.Cursor.Decode(&k); err != nil {
			return q, err
		}
		q.After = &k
	}
	return q, nil
}

// customerExists is nil when the shop knows the customer: by a profile or
// by an order of it (orders may arrive before the profile).
func (o *Orders) customerExists(ctx context.Context, shop, id string) error {
	_, err := o.customers.Get(ctx, shop, id)
	if domain.ErrorCode(err) != domain.CodeNotFound {
		return err
	}
	found, _, lerr := o.q.ListOrders(ctx, commerce.OrderListQuery{Shop: shop, CustomerID: id, Sort: commerce.OrderSortCreatedAt, Limit: 1})
	if lerr != nil {
		return lerr
	}
	if len(found) == 0 {
		return err
	}
	return nil
}

func (o *Orders) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["order_id"]
	ServeOne(w, r, o.wait, commerce.Name, p.ShopID,
		func(ctx context.Context, shop string) (*commerce.Order, error) { return o.q.Order(ctx, shop, id) }, OrderResource,
		o.relations(p.ShopID)...)
}

// OrderAttributes are an order's attributes in the admin API.
type OrderAttributes struct {
	Name              string            `json:"name"`
	CustomerID        *string           `json:"customer_id"`
	Email             *string           `json:"email"`
	FinancialStatus   *string           `json:"financial_status"`
	FulfillmentStatus string            `json:"fulfillment_status"`
	Currency          string            `json:"currency"`
	TotalPrice        float64           `json:"total_price"`
	SubtotalPrice     float64           `json:"subtotal_price"`
	TotalTax          float64           `json:"total_tax"`
	TotalDiscounts    float64           `json:"total_discounts"`
	Refunded          float64           `json:"refunded"`
	LineItems         []OrderLineItem   `json:"line_items"`
	SourceName        string            `json:"source_name"`
	DiscountCodes     []string          `json:"discount_codes"`
	Tags              []string          `json:"tags"`
	LandingSite       string            `json:"landing_site"`
	ReferringSite     string            `json:"referring_site"`
	UTM               map[string]string `json:"utm"`
	ClickIDs          map[string]string `json:"click_ids"`
	CreatedAt         time.Time         `json:"created_at"`
	UpdatedAt         time.Time         `json:"updated_at"`
	ProcessedAt       *time.Time        `json:"processed_at"`
	CancelledAt       *time.Time        `json:"cancelled_at"`
	Redacted          bool              `json:"redacted"`
	// Actions are the cancellations and refunds asked for through the
	// admin API, oldest first, with their status on the platform.
	Actions []OrderAction `json:"actions"`
}

// OrderAction is a cancellation or refund of an order asked for through
// the admin API: requested (recorded, the platform not answered yet),
// submitted (the platform accepted it; its webhook will confirm it),
// confirmed (the platform's orders/updated or refunds/create showed it
// done) or failed (error names the platform's refusal or failure).
type OrderAction struct {
	ID               string              `json:"id"`
	Kind             string              `json:"kind"`
	Status           string              `json:"status"`
	Reason           *string             `json:"reason"`
	Amount           *float64            `json:"amount"`
	Currency         *string             `json:"currency"`
	LineItems        []OrderActionLine   `json:"line_items"`
	PlatformJobID    *string             `json:"platform_job_id"`
	PlatformRefundID *string             `json:"platform_refund_id"`
	Error            *OrderActionFailure `json:"error"`
	RequestedAt      time.Time           `json:"requested_at"`
	SubmittedAt      *time.Time          `json:"submitted_at"`
	ConfirmedAt      *time.Time          `json:"confirmed_at"`
	FailedAt         *time.Time          `json:"failed_at"`
}

// OrderActionLine is a line of a refund action.
type OrderActionLine struct {
	LineItemID string `json:"line_item_id"`
	Quantity   int    `json:"quantity"`
	Restock    bool   `json:"restock"`
}

// OrderActionFailure is why an order action failed: the admin API's error
// code it was answered with and the platform's message.
type OrderActionFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// orderActions renders an order's actions.
func orderActions(as []commerce.OrderAction) []OrderAction {
	out := make([]OrderAction, len(as))
	for i, a := range as {
		v := OrderAction{ID: a.ID, Kind: a.Kind, Status: a.Status, Reason: emptyAsNull(a.Reason), LineItems: []OrderActionLine{},
			PlatformJobID: emptyAsNull(a.PlatformJobID), PlatformRefundID: emptyAsNull(a.PlatformRefundID), RequestedAt: a.RequestedAt,
			SubmittedAt: zeroTimeAsNull(a.SubmittedAt), ConfirmedAt: zeroTimeAsNull(a.ConfirmedAt), FailedAt: zeroTimeAsNull(a.FailedAt)}
		if a.Kind == domain.OrderActionRefund {
			amount := a.Amount.Float()
			v.Amount, v.Currency = &amount, emptyAsNull(a.Currency)
			for _, l := range a.Lines {
				v.LineItems = append(v.LineItems, OrderActionLine{LineItemID: l.LineID, Quantity: l.Quantity, Restock: l.Restock})
			}
		}
		if a.ErrorCode != "" {
			v.Error = &OrderActionFailure{Code: a.ErrorCode, Message: a.ErrorMessage}
		}
		out[i] = v
	}
	return out
}

// OrderLineItem is one line of an order in the admin API.
type OrderLineItem struct {
	// ID is the platform's id of the line (a refund's line_item_id).
	ID        string  `json:"id"`
	ProductID *string `json:"product_id"`
	VariantID *string `json:"variant_id"`
	SKU       string  `json:"sku"`
	Title     string  `json:"title"`
	Quantity  int     `json:"quantity"`
	Price     float64 `json:"price"`
}

// OrderResource renders an order in the single-resource shape. Amounts are
// decimal numbers, as a customer's total_spent; the e-mail is null once the
// customer's personal data is erased.
func OrderResource(o *commerce.Order) httpapi.Resource {
	attrs := OrderAttributes{
		Name: o.Name, CustomerID: emptyAsNull(o.CustomerID), Email: o.Email, FinancialStatus: emptyAsNull(o.FinancialStatus),
		FulfillmentStatus: o.FulfillmentStatus, Currency: o.Currency,
		TotalPrice: o.TotalPrice.Float(), SubtotalPrice: o.SubtotalPrice.Float(), TotalTax: o.TotalTax.Float(),
		TotalDiscounts: o.TotalDiscounts.Float(), Refunded: o.Refunded.Float(),
		LineItems: make([]OrderLineItem, len(o.Lines)), SourceName: o.SourceName,
		DiscountCodes: nonNil(o.DiscountCodes), Tags: nonNil(o.Tags), LandingSite: o.LandingSite, ReferringSite: o.ReferringSite,
		UTM: nilMapAsEmpty(o.UTM), ClickIDs: nilMapAsEmpty(o.ClickIDs), CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt,
		ProcessedAt: zeroTimeAsNull(o.ProcessedAt), CancelledAt: zeroTimeAsNull(o.CancelledAt), Redacted: o.Redacted,
		Actions: orderActions(o.Actions),
	}
	if attrs.FulfillmentStatus == "" {
		attrs.FulfillmentStatus = commerce.FulfillmentUnfulfilled
	}
	if o.Redacted {
		attrs.Email = nil
	}
	for i, l := range o.Lines {
		attrs.LineItems[i] = OrderLineItem{ID: l.LineID, ProductID: emptyAsNull(l.ProductID), VariantID: emptyAsNull(l.VariantID), SKU: l.SKU,
			Title: l.Title, Quantity: l.Quantity, Price: l.Price.Float()}
	}
	res := httpapi.Resource{ID: o.ID, Type: "order", Attributes: attrs}
	if o.CustomerID != "" {
		res.Relationships = map[string]httpapi.Relationship{"customer": httpapi.RelatedLink("/api/v1/customers/" + o.CustomerID)}
	}
	return res
}

func emptyAsNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func zeroTimeAsNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nilMapAsEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
