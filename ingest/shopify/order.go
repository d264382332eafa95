package shopify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Order is an orders/create, orders/updated, orders/paid or
// orders/fulfilled payload.
type Order struct {
	ID                string
	Name              string // the shop-facing order name, such as "#1001"
	Email             string // personal data
	CreatedAt         time.Time
	UpdatedAt         time.Time
	ProcessedAt       time.Time
	CancelledAt       time.Time // zero unless the order is cancelled
	FinancialStatus   string    // pending, authorized, paid, refunded, …
	FulfillmentStatus string    // "" (unfulfilled), partial, fulfilled, …
	Currency          string    // ISO 4217
	TotalPrice        domain.Amount
	SubtotalPrice     domain.Amount
	TotalTax          domain.Amount
	TotalDiscounts    domain.Amount
	CustomerID        string // "" for a guest order
	LineItems         []LineItem
	LandingSite       string // path and query of the first page of the visit
	ReferringSite     string
	SourceName        string // web, pos, shopify_draft_order, an app id, …
	NoteAttributes    []NoteAttribute
	DiscountCodes     []string
	Tags              []string
	// UTM and ClickIDs are read from LandingSite's query.
	UTM      UTM
	ClickIDs ClickIDs
}

// LineItem is one line of an order or a checkout.
type LineItem struct {
	// ID is the line's numeric id or, for a line the platform sends
	// without one (checkout lines carry only a key), its key.
	ID        string
	ProductID string // "" for a custom line item
	VariantID string // "" for a custom line item
	SKU       string
	Title     string
	Quantity  int
	Price     domain.Amount // unit price
}

// NoteAttribute is a name/value pair the storefront attached to the order.
type NoteAttribute struct {
	Name  string
	Value string
}

type rawLineItem struct {
	ID        json.Number `json:"id"`
	Key       string      `json:"key"`
	ProductID json.Number `json:"product_id"`
	VariantID json.Number `json:"variant_id"`
	SKU       string      `json:"sku"`
	Title     string      `json:"title"`
	Quantity  int         `json:"quantity"`
	Price     decimal     `json:"price"`
}

type rawOrder struct {
	ID                json.Number `json:"id"`
	Name              string      `json:"name"`
	Email             string      `json:"email"`
	CreatedAt         string      `json:"created_at"`
	UpdatedAt         string      `json:"updated_at"`
	ProcessedAt       string      `json:"processed_at"`
	CancelledAt       string      `json:"cancelled_at"`
	FinancialStatus   string      `json:"financial_status"`
	FulfillmentStatus string      `json:"fulfillment_status"`
	Currency          string      `json:"currency"`
	TotalPrice        decimal     `json:"total_price"`
	SubtotalPrice     decimal     `json:"subtotal_price"`
	TotalTax          decimal     `json:"total_tax"`
	TotalDiscounts    decimal     `json:"total_discounts"`
	Customer          *struct {
		ID json.Number `json:"id"`
	} `json:"customer"`
	LineItems      []rawLineItem `json:"line_items"`
	LandingSite    string        `json:"landing_site"`
	ReferringSite  string        `json:"referring_site"`
	SourceName     string        `json:"source_name"`
	NoteAttributes []struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	} `json:"note_attributes"`
	DiscountCodes []struct {
		Code string `json:"code"`
	} `json:"discount_codes"`
	Tags string `json:"tags"`
}

// ParseOrder parses an orders/create, orders/updated, orders/paid or
// orders/fulfilled payload. It rejects a payload without an order id and
// any malformed id, amount or timestamp.
func ParseOrder(body []byte) (Order, error) {
	var r rawOrder
	if err := payload.Decode(body, &r); err != nil {
		return Order{}, err
	}
	var c conv
	o := Order{
		ID:                c.id("id", r.ID),
		Name:              strings.TrimSpace(r.Name),
		Email:             strings.TrimSpace(r.Email),
		CreatedAt:         c.time("created_at", r.CreatedAt),
		UpdatedAt:         c.time("updated_at", r.UpdatedAt),
		ProcessedAt:       c.time("processed_at", r.ProcessedAt),
		CancelledAt:       c.time("cancelled_at", r.CancelledAt),
		FinancialStatus:   r.FinancialStatus,
		FulfillmentStatus: r.FulfillmentStatus,
		Currency:          r.Currency,
		TotalPrice:        c.amount("total_price", r.TotalPrice),
		SubtotalPrice:     c.amount("subtotal_price", r.SubtotalPrice),
		TotalTax:          c.amount("total_tax", r.TotalTax),
		TotalDiscounts:    c.amount("total_discounts", r.TotalDiscounts),
		LandingSite:       r.LandingSite,
		ReferringSite:     r.ReferringSite,
		SourceName:        r.SourceName,
		Tags:              domain.SplitPlatformTags(r.Tags),
	}
	if r.Customer != nil {
		o.CustomerID = c.optID("customer.id", r.Customer.ID)
	}
	o.LineItems = c.lineItems("line_items", r.LineItems, true)
	for _, na := range r.NoteAttributes {
		o.NoteAttributes = append(o.NoteAttributes, NoteAttribute{Name: na.Name, Value: attributeValue(na.Value)})
	}
	for _, dc := range r.DiscountCodes {
		if code := strings.TrimSpace(dc.Code); code != "" {
			o.DiscountCodes = append(o.DiscountCodes, code)
		}
	}
	o.UTM, o.ClickIDs = ParseLandingSite(o.LandingSite)
	if c.err != nil {
		return Order{}, c.err
	}
	return o, nil
}

// maxKey is the longest line key (or idempotency key) taken as an id.
const maxKey = 200

// lineItems converts order or checkout line items. A line is identified by
// its id or, without one, by its key: checkout and cart lines as the
// platform sends them carry a key and often no id. Order lines need one of
// the two (refunds name them); a checkout line may have neither.
func (c *conv) lineItems(field string, raw []rawLineItem, needID bool) []LineItem {
	if len(raw) == 0 {
		return nil
	}
	out := make([]LineItem, 0, len(raw))
	for i, li := range raw {
		f := fmt.Sprintf("%s[%d]", field, i)
		id := c.optID(f+".id", li.ID)
		if id == "" {
			id = strings.TrimSpace(li.Key)
		}
		switch {
		case len(id) > maxKey:
			c.fail(f+".key", "longer than 200 characters")
		case id == "" && needID:
			c.fail(f+".id", "id is required")
		}
		out = append(out, LineItem{
			ID:        id,
			ProductID: c.optID(f+".product_id", li.ProductID),
			VariantID: c.optID(f+".variant_id", li.VariantID),
			SKU:       li.SKU,
			Title:     li.Title,
			Quantity:  li.Quantity,
			Price:     c.amount(f+".price", li.Price),
		})
	}
	return out
}

// attributeValue renders a note attribute value, which storefronts send
// as a string and sometimes as a number or boolean.
func attributeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

// Refund is a refunds/create payload.
type Refund struct {
	ID           string
	OrderID      string
	CreatedAt    time.Time
	LineItems    []RefundLineItem
	Transactions []RefundTransaction
}

// RefundLineItem is one refunded order line.
type RefundLineItem struct {
	LineItemID string
	Quantity   int
	Subtotal   domain.Amount // refunded amount before tax
}

// RefundTransaction is a money movement of the refund.
type RefundTransaction struct {
	Amount domain.Amount
	Kind   string // refund, …
	Status string // success, failure, pending, error
}

type rawRefund struct {
	ID              json.Number `json:"id"`
	OrderID         json.Number `json:"order_id"`
	CreatedAt       string      `json:"created_at"`
	RefundLineItems []struct {
		LineItemID json.Number `json:"line_item_id"`
		Quantity   int         `json:"quantity"`
		Subtotal   decimal     `json:"subtotal"`
	} `json:"refund_line_items"`
	Transactions []struct {
		Amount decimal `json:"amount"`
		Kind   string  `json:"kind"`
		Status string  `json:"status"`
	} `json:"transactions"`
}

// ParseRefund parses a refunds/create payload. It rejects a payload without
// its refund id or order id.
func ParseRefund(body []byte) (Refund, error) {
	var r rawRefund
	if err := payload.Decode(body, &r); err != nil {
		return Refund{}, err
	}
	var c conv
	rf := Refund{
		ID:        c.id("id", r.ID),
		OrderID:   c.id("order_id", r.OrderID),
		CreatedAt: c.time("created_at", r.CreatedAt),
	}
	for i, li := range r.RefundLineItems {
		f := fmt.Sprintf("refund_line_items[%d]", i)
		rf.LineItems = append(rf.LineItems, RefundLineItem{
			LineItemID: c.id(f+".line_item_id", li.LineItemID),
			Quantity:   li.Quantity,
			Subtotal:   c.amount(f+".subtotal", li.Subtotal),
		})
	}
	for i, t := range r.Transactions {
		rf.Transactions = append(rf.Transactions, RefundTransaction{
			Amount: c.amount(fmt.Sprintf("transactions[%d].amount", i), t.Amount),
			Kind:   t.Kind,
			Status: t.Status,
		})
	}
	if c.err != nil {
		return Refund{}, c.err
	}
	return rf, nil
}
