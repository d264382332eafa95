package domain

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// orderActionEvents lists the admin API's actions on orders, taken on the
// commerce platform (issue 21, point 5): each is recorded on the order's
// stream before the platform is called, its outcome after, and the
// platform's own webhook (orders/updated with cancelled_at, refunds/create)
// confirms it.
func orderActionEvents() []EventSpec {
	return []EventSpec{
		{Name: "OrderCancellationRequested", Version: 1, New: func() Event { return &OrderCancellationRequested{} }},
		{Name: "OrderRefundRequested", Version: 1, New: func() Event { return &OrderRefundRequested{} }},
		{Name: "OrderActionSubmitted", Version: 1, New: func() Event { return &OrderActionSubmitted{} }},
		{Name: "OrderActionFailed", Version: 1, New: func() Event { return &OrderActionFailed{} }},
	}
}

// PrefixOrderAction is the prefix of an order action's id.
const PrefixOrderAction = "oac_"

// Kinds of order actions.
const (
	OrderActionCancel = "cancel"
	OrderActionRefund = "refund"
)

// Statuses of an order action: recorded and not answered by the platform
// yet (requested), accepted by the platform and waiting for its webhook
// (submitted), confirmed by that webhook (confirmed), or refused or not
// answered by the platform (failed).
const (
	ActionStatusRequested = "requested"
	ActionStatusSubmitted = "submitted"
	ActionStatusConfirmed = "confirmed"
	ActionStatusFailed    = "failed"
)

// OrderActionStatuses lists the statuses of an order action.
func OrderActionStatuses() []string {
	return []string{ActionStatusRequested, ActionStatusSubmitted, ActionStatusConfirmed, ActionStatusFailed}
}

// OrderCancelReasons are the reasons an order may be cancelled for (the
// platform's OrderCancelReason).
func OrderCancelReasons() []string {
	return []string{"CUSTOMER", "DECLINED", "FRAUD", "INVENTORY", "STAFF", "OTHER"}
}

// Order action limits.
const (
	MaxStaffNote    = 255  // the platform's bound on a cancellation's staff note
	MaxRefundNote   = 1000 // a refund's note
	MaxRefundLines  = 250
	maxActionErrMsg = 300
)

var orderActionPersonalFields = []string{"staff_note", "note"}

// OrderCancellationRequested: a merchant asked, through the admin API, that
// the platform cancel the order. StaffNote is personal data (free text a
// merchant may fill with anything), sealed for the order's subject.
type OrderCancellationRequested struct {
	ActionID       string    `json:"action_id"`
	OrderID        string    `json:"order_id"`
	ShopID         string    `json:"shop_id"`
	ExternalID     string    `json:"external_id"`
	CustomerID     string    `json:"customer_id,omitempty"`
	Reason         string    `json:"reason"`
	Refund         bool      `json:"refund"`
	Restock        bool      `json:"restock"`
	NotifyCustomer bool      `json:"notify_customer"`
	StaffNote      string    `json:"staff_note,omitempty"`
	RequestedAt    time.Time `json:"requested_at"`
}

// EventType implements Event.
func (OrderCancellationRequested) EventType() string { return "OrderCancellationRequested" }

// Subject implements Personal: the order's customer, or its guest subject.
func (e OrderCancellationRequested) Subject() string {
	return orderSubject(e.ShopID, e.CustomerID, e.ExternalID)
}

// PersonalFields implements Personal.
func (OrderCancellationRequested) PersonalFields() []string { return orderActionPersonalFields }

// RefundRequestLine is one order line a refund returns.
type RefundRequestLine struct {
	LineID   string `json:"line_id"`
	Quantity int    `json:"quantity"`
	Restock  bool   `json:"restock"`
}

// OrderRefundRequested: a merchant asked, through the admin API, that the
// platform refund the order: Amount of money (zero: none, lines only) and
// the lines listed. Note is personal data, like a staff note.
type OrderRefundRequested struct {
	ActionID    string              `json:"action_id"`
	OrderID     string              `json:"order_id"`
	ShopID      string              `json:"shop_id"`
	ExternalID  string              `json:"external_id"`
	CustomerID  string              `json:"customer_id,omitempty"`
	Amount      Amount              `json:"amount"`
	Currency    string              `json:"currency,omitempty"`
	Lines       []RefundRequestLine `json:"lines,omitempty"`
	Note        string              `json:"note,omitempty"`
	Notify      bool                `json:"notify"`
	RequestedAt time.Time           `json:"requested_at"`
}

// EventType implements Event.
func (OrderRefundRequested) EventType() string { return "OrderRefundRequested" }

// Subject implements Personal.
func (e OrderRefundRequested) Subject() string {
	return orderSubject(e.ShopID, e.CustomerID, e.ExternalID)
}

// PersonalFields implements Personal.
func (OrderRefundRequested) PersonalFields() []string { return orderActionPersonalFields }

func orderSubject(shopID, customerID, externalID string) string {
	if customerID != "" {
		return customerID
	}
	return GuestSubject(shopID, externalID)
}

// OrderActionSubmitted: the platform accepted an order action. A
// cancellation names the platform's job (it cancels in the background); a
// refund names the refund the platform created (PlatformRefundID, the id
// its refunds/create webhook carries) and the amount it returned.
type OrderActionSubmitted struct {
	ActionID         string    `json:"action_id"`
	OrderID          string    `json:"order_id"`
	ShopID           string    `json:"shop_id"`
	Kind             string    `json:"kind"`
	PlatformJobID    string    `json:"platform_job_id,omitempty"`
	PlatformRefundID string    `json:"platform_refund_id,omitempty"`
	RefundedAmount   Amount    `json:"refunded_amount,omitempty"`
	SubmittedAt      time.Time `json:"submitted_at"`
}

// EventType implements Event.
func (OrderActionSubmitted) EventType() string { return "OrderActionSubmitted" }

// OrderActionFailed: the platform refused an order action (Code
// platform_rejected, with its messages) or failed to answer
// (platform_unavailable, platform_not_connected, platform_scope_missing).
type OrderActionFailed struct {
	ActionID string    `json:"action_id"`
	OrderID  string    `json:"order_id"`
	ShopID   string    `json:"shop_id"`
	Kind     string    `json:"kind"`
	Code     string    `json:"code"`
	Message  string    `json:"message,omitempty"`
	FailedAt time.Time `json:"failed_at"`
}

// EventType implements Event.
func (OrderActionFailed) EventType() string { return "OrderActionFailed" }

// orderAction is what the order aggregate keeps of an action.
type orderAction struct {
	kind, status string
	amount       Amount
	platformRef  string // a refund's platform id
}

// live reports whether the action is still on its way: recorded or
// accepted, neither confirmed nor failed.
func (a *orderAction) live() bool {
	return a.status == ActionStatusRequested || a.status == ActionStatusSubmitted
}

// applyAction folds an order action's events into the order.
func (o *Order) applyAction(e Event) {
	if o.actions == nil {
		o.actions = map[string]*orderAction{}
	}
	switch ev := e.(type) {
	case *OrderCancellationRequested:
		o.actions[ev.ActionID] = &orderAction{kind: OrderActionCancel, status: ActionStatusRequested}
	case *OrderRefundRequested:
		o.actions[ev.ActionID] = &orderAction{kind: OrderActionRefund, status: ActionStatusRequested, amount: ev.Amount}
	case *OrderActionSubmitted:
		if a := o.actions[ev.ActionID]; a != nil && a.status == ActionStatusRequested {
			a.status, a.platformRef = ActionStatusSubmitted, ev.PlatformRefundID
			// The platform's webhook may come before its answer is
			// recorded.
			if (a.kind == OrderActionRefund && o.refundedExternal[ev.PlatformRefundID]) || (a.kind == OrderActionCancel && o.Cancelled()) {
				a.status = ActionStatusConfirmed
			}
		}
	case *OrderActionFailed:
		if a := o.actions[ev.ActionID]; a != nil && a.live() {
			a.status = ActionStatusFailed
		}
	}
}

// confirmRefund marks the refund action the platform's refund confirms.
func (o *Order) confirmRefund(externalID string) {
	if o.refundedExternal == nil {
		o.refundedExternal = map[string]bool{}
	}
	o.refundedExternal[externalID] = true
	for _, a := range o.actions {
		if a.kind == OrderActionRefund && a.platformRef == externalID && a.live() {
			a.status = ActionStatusConfirmed
		}
	}
}

// Refundable is what remains to refund of the order: its total less the
// refunds recorded and the refunds requested and not confirmed or failed
// yet.
func (o *Order) Refundable() Amount {
	left := o.Total - o.Refunded
	for _, a := range o.actions {
		if a.kind == OrderActionRefund && a.live() {
			left -= a.amount
		}
	}
	return max(left, 0)
}

// Cancelled reports whether the platform cancelled the order.
func (o *Order) Cancelled() bool { return !o.CancelledAt.IsZero() }

// CancellationPending reports whether a cancellation was requested and
// neither confirmed nor failed yet.
func (o *Order) CancellationPending() bool {
	for _, a := range o.actions {
		if a.kind == OrderActionCancel && a.live() {
			return true
		}
	}
	return false
}

// ActionStatus returns the status of an action of the order ("" when the
// order has no such action).
func (o *Order) ActionStatus(actionID string) string {
	if a := o.actions[actionID]; a != nil {
		return a.status
	}
	return ""
}

// ownedBy reports whether the order exists for shopID.
func (o *Order) ownedBy(shopID string) bool { return o.Exists && o.ShopID == shopID }

// CancellationRequest is what a merchant sends to cancel an order.
type CancellationRequest struct {
	Reason                          string
	Refund, Restock, NotifyCustomer bool
	StaffNote                       string
}

// Validate checks what does not depend on the order: the reason and the
// note's length.
func (c CancellationRequest) Validate() error {
	if !slices.Contains(OrderCancelReasons(), c.Reason) {
		return Invalid("reason", "reason must be one of %s", strings.Join(OrderCancelReasons(), ", "))
	}
	if utf8.RuneCountInString(strings.TrimSpace(c.StaffNote)) > MaxStaffNote {
		return Invalid("staff_note", "staff_note is longer than %d characters", MaxStaffNote)
	}
	return nil
}

// RequestCancellation decides a merchant's cancellation of the order: not
// found for an order the shop does not have, a conflict when the order is
// cancelled or a cancellation is already on its way.
func (o *Order) RequestCancellation(shopID, actionID string, c CancellationRequest, now time.Time) (*OrderCancellationRequested, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	note := strings.TrimSpace(c.StaffNote)
	if !o.ownedBy(shopID) {
		return nil, NotFound("order")
	}
	if o.Cancelled() {
		return nil, Conflict("the order is already cancelled")
	}
	if o.CancellationPending() {
		return nil, Conflict("a cancellation of the order is already on its way to the platform")
	}
	return &OrderCancellationRequested{ActionID: actionID, OrderID: o.ID, ShopID: shopID, ExternalID: o.ExternalID, CustomerID: o.CustomerID,
		Reason: c.Reason, Refund: c.Refund, Restock: c.Restock, NotifyCustomer: c.NotifyCustomer, StaffNote: note, RequestedAt: now.UTC()}, nil
}

// RefundRequest is what a merchant sends to refund an order.
type RefundRequest struct {
	Amount   Amount
	Currency string
	Lines    []RefundRequestLine
	Note     string
	Notify   bool
}

// Validate checks what does not depend on the order: an amount or lines,
// lines named once with a positive quantity, the note's length.
func (r RefundRequest) Validate() error {
	switch {
	case r.Amount < 0:
		return Invalid("amount", "amount must not be negative")
	case r.Amount == 0 && len(r.Lines) == 0:
		return Invalid("amount", "a refund needs an amount, line_items or both")
	case len(r.Lines) > MaxRefundLines:
		return Invalid("line_items", "at most %d line items", MaxRefundLines)
	case utf8.RuneCountInString(strings.TrimSpace(r.Note)) > MaxRefundNote:
		return Invalid("note", "note is longer than %d characters", MaxRefundNote)
	}
	seen := map[string]bool{}
	for i, l := range r.Lines {
		field := "line_items[" + strconv.Itoa(i) + "]."
		if l.LineID == "" {
			return Invalid(field+"line_item_id", "line_item_id is required")
		}
		if seen[l.LineID] {
			return Invalid(field+"line_item_id", "the line item is listed twice")
		}
		seen[l.LineID] = true
		if l.Quantity < 1 {
			return Invalid(field+"quantity", "quantity must be at least 1")
		}
	}
	return nil
}

// RequestRefund decides a merchant's refund of the order: money (at most
// what remains refundable, in the order's currency), lines of the order
// (at most the quantity ordered), or both.
func (o *Order) RequestRefund(shopID, actionID string, r RefundRequest, now time.Time) (*OrderRefundRequested, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	note := strings.TrimSpace(r.Note)
	if !o.ownedBy(shopID) {
		return nil, NotFound("order")
	}
	if r.Currency != "" && o.Currency != "" && !strings.EqualFold(r.Currency, o.Currency) {
		return nil, Invalid("currency", "currency must be the order's currency, %s", o.Currency)
	}
	for i, l := range r.Lines {
		field := "line_items[" + strconv.Itoa(i) + "]."
		ordered, ok := o.Lines[l.LineID]
		if !ok {
			return nil, Invalid(field+"line_item_id", "the order has no such line item")
		}
		if l.Quantity > ordered {
			return nil, Invalid(field+"quantity", "quantity is more than the %d ordered", ordered)
		}
	}
	if left := o.Refundable(); r.Amount > left {
		return nil, Invalid("amount", "amount is more than the %s that remains refundable", left)
	}
	cur := o.Currency
	if cur == "" {
		cur = strings.ToUpper(r.Currency)
	}
	return &OrderRefundRequested{ActionID: actionID, OrderID: o.ID, ShopID: shopID, ExternalID: o.ExternalID, CustomerID: o.CustomerID,
		Amount: r.Amount, Currency: cur, Lines: r.Lines, Note: note, Notify: r.Notify, RequestedAt: now.UTC()}, nil
}

// ActionOutcome is what the platform answered to an order action: its job
// or refund when it accepted it, else the failure's code and message.
type ActionOutcome struct {
	PlatformJobID, PlatformRefundID string
	RefundedAmount                  Amount
	FailureCode, FailureMessage     string
}

// RecordActionOutcome decides the event of the platform's answer to an
// action of the order (nil when the action's outcome is already
// recorded).
func (o *Order) RecordActionOutcome(actionID string, out ActionOutcome, now time.Time) (Event, error) {
	a := o.actions[actionID]
	if a == nil {
		return nil, NotFound("order action")
	}
	if a.status != ActionStatusRequested {
		return nil, nil
	}
	if out.FailureCode != "" {
		msg := out.FailureMessage
		if len(msg) > maxActionErrMsg {
			msg = msg[:maxActionErrMsg]
		}
		return &OrderActionFailed{ActionID: actionID, OrderID: o.ID, ShopID: o.ShopID, Kind: a.kind, Code: out.FailureCode,
			Message: msg, FailedAt: now.UTC()}, nil
	}
	return &OrderActionSubmitted{ActionID: actionID, OrderID: o.ID, ShopID: o.ShopID, Kind: a.kind, PlatformJobID: out.PlatformJobID,
		PlatformRefundID: out.PlatformRefundID, RefundedAmount: out.RefundedAmount, SubmittedAt: now.UTC()}, nil
}
