package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// The admin API's actions on orders (POST /api/v1/orders/{id}/cancel and
// /refunds): RequestOrderCancellation and RequestOrderRefund record the
// request on the order's stream before the platform is called;
// RecordOrderActionOutcome records what the platform answered. The
// platform's webhooks (RecordOrder, RecordRefund) confirm them.

// OrderActionTarget is what the caller needs to reach the platform about
// an order: the platform's id of it and the action's id.
type OrderActionTarget struct {
	ActionID   string
	ExternalID string
	Currency   string
}

// LoadOrder returns the order aggregate (an empty one when the stream
// does not exist): the admin API judges an action on it before it asks
// the platform for a session, and the command judges it again when it
// records it.
func (h *Handler) LoadOrder(ctx context.Context, orderID string) (*domain.Order, error) {
	o := &domain.Order{}
	if !domain.HasPrefixID(orderID, domain.PrefixOrder) {
		return o, nil
	}
	if _, _, err := h.load(ctx, domain.OrderStream(orderID), o); err != nil {
		return nil, err
	}
	return o, nil
}

// RequestOrderCancellation asks that the platform cancel an order of a
// shop.
type RequestOrderCancellation struct {
	ShopID  string
	OrderID string
	Request domain.CancellationRequest
}

// RequestOrderCancellation runs the command: not found for an order the
// shop does not have, a conflict when it is cancelled or a cancellation
// is on its way.
func (h *Handler) RequestOrderCancellation(ctx context.Context, cmd RequestOrderCancellation, meta Meta) (Result, OrderActionTarget, error) {
	return h.requestOrderAction(ctx, cmd.ShopID, cmd.OrderID, meta, func(o *domain.Order, actionID string) (domain.Event, string, error) {
		ev, err := o.RequestCancellation(cmd.ShopID, actionID, cmd.Request, h.now())
		return ev, o.Currency, err
	})
}

// RequestOrderRefund asks that the platform refund an order of a shop.
type RequestOrderRefund struct {
	ShopID  string
	OrderID string
	Request domain.RefundRequest
}

// RequestOrderRefund runs the command: not found for an order the shop
// does not have; a validation failure for an amount over what remains
// refundable or a line the order does not have.
func (h *Handler) RequestOrderRefund(ctx context.Context, cmd RequestOrderRefund, meta Meta) (Result, OrderActionTarget, error) {
	return h.requestOrderAction(ctx, cmd.ShopID, cmd.OrderID, meta, func(o *domain.Order, actionID string) (domain.Event, string, error) {
		ev, err := o.RequestRefund(cmd.ShopID, actionID, cmd.Request, h.now())
		if err != nil {
			return nil, "", err
		}
		return ev, ev.Currency, nil
	})
}

// requestOrderAction records the request of a new action on an order's
// stream, as decide makes it (the event and the action's currency) from
// the order and the action's new id.
func (h *Handler) requestOrderAction(ctx context.Context, shopID, orderID string, meta Meta,
	decide func(o *domain.Order, actionID string) (domain.Event, string, error)) (Result, OrderActionTarget, error) {
	if !domain.HasPrefixID(orderID, domain.PrefixOrder) {
		return Result{}, OrderActionTarget{}, domain.NotFound("order")
	}
	actionID := domain.NewID(domain.PrefixOrderAction)
	var target OrderActionTarget
	res, err := execute(ctx, h, shopID, domain.OrderStream(orderID), func() *domain.Order { return &domain.Order{} },
		func(o *domain.Order) (decision, error) {
			ev, currency, err := decide(o, actionID)
			if err != nil {
				return decision{}, err
			}
			target = OrderActionTarget{ActionID: actionID, ExternalID: o.ExternalID, Currency: currency}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = orderID
	return res, target, err
}

// RecordOrderActionOutcome records the platform's answer to an order
// action.
type RecordOrderActionOutcome struct {
	ShopID   string
	OrderID  string
	ActionID string
	Outcome  domain.ActionOutcome
}

// RecordOrderActionOutcome runs the command; an outcome already recorded
// changes nothing.
func (h *Handler) RecordOrderActionOutcome(ctx context.Context, cmd RecordOrderActionOutcome, meta Meta) (Result, error) {
	res, err := execute(ctx, h, cmd.ShopID, domain.OrderStream(cmd.OrderID), func() *domain.Order { return &domain.Order{} },
		func(o *domain.Order) (decision, error) {
			ev, err := o.RecordActionOutcome(cmd.ActionID, cmd.Outcome, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.OrderID
	return res, err
}
