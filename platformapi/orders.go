package platformapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/cgp-platform/cgp/domain"
)

// GID is the Admin API's global id of a resource of kind ("Order",
// "LineItem", "Product", "ProductVariant") with the platform's numeric id
// (as webhooks carry it); an id that already is a GID is returned as it
// is.
func GID(kind, id string) string {
	if strings.HasPrefix(id, "gid://") {
		return id
	}
	return "gid://shopify/" + kind + "/" + id
}

// GIDTail is the numeric id at the end of a GID ("gid://shopify/Refund/7"
// → "7"), as the platform's webhooks name the same resource.
func GIDTail(gid string) string {
	if i := strings.LastIndexByte(gid, '/'); i >= 0 {
		return gid[i+1:]
	}
	return gid
}

// CancelReasons are the platform's OrderCancelReason values.
func CancelReasons() []string {
	return []string{"CUSTOMER", "DECLINED", "FRAUD", "INVENTORY", "STAFF", "OTHER"}
}

// CancelOrder is an order cancellation (the orderCancel mutation).
type CancelOrder struct {
	// OrderID is the platform's id of the order (numeric or a GID).
	OrderID string
	// Reason is one of CancelReasons.
	Reason string
	// Refund refunds what the customer paid to the original payment
	// methods; Restock returns the committed inventory; NotifyCustomer
	// sends the platform's cancellation notice.
	Refund, Restock, NotifyCustomer bool
	// StaffNote is a note for the shop's staff, not shown to the customer.
	StaffNote string
}

// CancelJob is the platform's background job that cancels the order: the
// cancellation is asynchronous, confirmed by the orders/updated webhook
// with cancelled_at.
type CancelJob struct {
	ID   string
	Done bool
}

const orderCancelMutation = `mutation orderCancel($orderId: ID!, $reason: OrderCancelReason!, $refundMethod: OrderCancelRefundMethodInput!, $restock: Boolean!, $notifyCustomer: Boolean, $staffNote: String) {
  orderCancel(orderId: $orderId, reason: $reason, refundMethod: $refundMethod, restock: $restock, notifyCustomer: $notifyCustomer, staffNote: $staffNote) {
    job { id done }
    orderCancelUserErrors { field message code }
  }
}`

// CancelOrder asks the platform to cancel an order. The mutation's
// orderCancelUserErrors are an *Error with UserErrors.
func (c *Client) CancelOrder(ctx context.Context, shop, accessToken string, in CancelOrder) (CancelJob, error) {
	vars := map[string]any{
		"orderId":        GID("Order", in.OrderID),
		"reason":         in.Reason,
		"refundMethod":   map[string]any{"originalPaymentMethodsRefund": in.Refund},
		"restock":        in.Restock,
		"notifyCustomer": in.NotifyCustomer,
	}
	if in.StaffNote != "" {
		vars["staffNote"] = in.StaffNote
	}
	var out struct {
		OrderCancel *struct {
			Job *struct {
				ID   string `json:"id"`
				Done bool   `json:"done"`
			} `json:"job"`
			UserErrors []UserError `json:"orderCancelUserErrors"`
		} `json:"orderCancel"`
	}
	if err := c.GraphQL(ctx, shop, accessToken, orderCancelMutation, vars, &out); err != nil {
		return CancelJob{}, err
	}
	if out.OrderCancel == nil {
		return CancelJob{}, badResponse("orderCancel returned nothing")
	}
	if err := UserErrors(out.OrderCancel.UserErrors); err != nil {
		return CancelJob{}, err
	}
	if out.OrderCancel.Job == nil {
		return CancelJob{}, badResponse("orderCancel returned no job and no userErrors")
	}
	return CancelJob{ID: out.OrderCancel.Job.ID, Done: out.OrderCancel.Job.Done}, nil
}

// RestockTypes are the platform's RefundLineItemRestockType values.
const (
	RestockNone   = "NO_RESTOCK"
	RestockCancel = "CANCEL"
	RestockReturn = "RETURN"
)

// RefundLine is one order line to refund.
type RefundLine struct {
	// LineItemID is the platform's id of the order's line item.
	LineItemID string
	Quantity   int
	// RestockType is one of the Restock constants (NO_RESTOCK when empty).
	RestockType string
}

// CreateRefund is a refund of an order (the refundCreate mutation).
type CreateRefund struct {
	// OrderID is the platform's id of the order (numeric or a GID).
	OrderID string
	// Amount, when positive, is the money returned to the customer, on
	// the order's original payment (its successful sale or capture);
	// Currency is the order's currency (the platform's presentment
	// currency).
	Amount   domain.Amount
	Currency string
	Lines    []RefundLine
	Note     string
	Notify   bool
}

// Refund is a refund the platform created: its refunds/create webhook
// carries the same id (the numeric tail of ID).
type Refund struct {
	ID string
	// Amount is the total the platform refunded (shop money).
	Amount domain.Amount
}

// ExternalID is the refund's numeric id, as the refunds/create webhook
// names it.
func (r Refund) ExternalID() string { return GIDTail(r.ID) }

const orderTransactionsQuery = `query orderTransactions($id: ID!) {
  order(id: $id) {
    id
    transactions(first: 50) { id gateway kind status amountSet { shopMoney { amount currencyCode } } }
  }
}`

const refundCreateMutation = `mutation refundCreate($input: RefundInput!) {
  refundCreate(input: $input) {
    refund { id totalRefundedSet { shopMoney { amount currencyCode } } }
    userErrors { field message }
  }
}`

// parentTransaction finds the order's transaction a refund of money goes
// back through: its successful sale or capture (the last one, when
// several). It returns its id and gateway.
func (c *Client) parentTransaction(ctx context.Context, shop, accessToken, orderGID string) (id, gateway string, err error) {
	var out struct {
		Order *struct {
			Transactions []struct {
				ID      string `json:"id"`
				Gateway string `json:"gateway"`
				Kind    string `json:"kind"`
				Status  string `json:"status"`
			} `json:"transactions"`
		} `json:"order"`
	}
	if err := c.GraphQL(ctx, shop, accessToken, orderTransactionsQuery, map[string]any{"id": orderGID}, &out); err != nil {
		return "", "", err
	}
	if out.Order == nil {
		return "", "", UserErrors([]UserError{{Field: []string{"orderId"}, Message: "the platform does not know the order"}})
	}
	for _, t := range out.Order.Transactions {
		if (t.Kind == "SALE" || t.Kind == "CAPTURE") && t.Status == "SUCCESS" {
			id, gateway = t.ID, t.Gateway
		}
	}
	if id == "" {
		return "", "", UserErrors([]UserError{{Field: []string{"transactions"}, Message: "the order has no successful payment to refund"}})
	}
	return id, gateway, nil
}

// CreateRefund asks the platform to refund an order. With an amount the
// order's payment is looked up first (refunds of money name the
// transaction they return); the refund is created synchronously and its
// refunds/create webhook follows. The mutation's userErrors are an *Error
// with UserErrors.
func (c *Client) CreateRefund(ctx context.Context, shop, accessToken string, in CreateRefund) (Refund, error) {
	order := GID("Order", in.OrderID)
	input := map[string]any{"orderId": order, "notify": in.Notify}
	if in.Note != "" {
		input["note"] = in.Note
	}
	if in.Currency != "" {
		input["currency"] = in.Currency
	}
	if len(in.Lines) > 0 {
		lines := make([]map[string]any, len(in.Lines))
		for i, l := range in.Lines {
			rt := l.RestockType
			if rt == "" {
				rt = RestockNone
			}
			lines[i] = map[string]any{"lineItemId": GID("LineItem", l.LineItemID), "quantity": l.Quantity, "restockType": rt}
		}
		input["refundLineItems"] = lines
	}
	if in.Amount > 0 {
		parent, gateway, err := c.parentTransaction(ctx, shop, accessToken, order)
		if err != nil {
			return Refund{}, err
		}
		input["transactions"] = []map[string]any{{"orderId": order, "parentId": parent, "gateway": gateway, "kind": "REFUND",
			"amount": in.Amount.String()}}
	}
	var out struct {
		RefundCreate *struct {
			Refund *struct {
				ID               string `json:"id"`
				TotalRefundedSet struct {
					ShopMoney struct {
						Amount string `json:"amount"`
					} `json:"shopMoney"`
				} `json:"totalRefundedSet"`
			} `json:"refund"`
			UserErrors []UserError `json:"userErrors"`
		} `json:"refundCreate"`
	}
	if err := c.GraphQL(ctx, shop, accessToken, refundCreateMutation, map[string]any{"input": input}, &out); err != nil {
		return Refund{}, err
	}
	if out.RefundCreate == nil {
		return Refund{}, badResponse("refundCreate returned nothing")
	}
	if err := UserErrors(out.RefundCreate.UserErrors); err != nil {
		return Refund{}, err
	}
	r := out.RefundCreate.Refund
	if r == nil || r.ID == "" {
		return Refund{}, badResponse("refundCreate returned no refund and no userErrors")
	}
	res := Refund{ID: r.ID}
	if s := r.TotalRefundedSet.ShopMoney.Amount; s != "" {
		if a, err := domain.ParseAmount(s); err == nil {
			res.Amount = a
		}
	}
	return res, nil
}

// badResponse is the error of an answer that is not the documented shape.
func badResponse(msg string) error {
	return &Error{Status: http.StatusOK, Code: "bad_response", Message: msg}
}
