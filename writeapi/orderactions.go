package writeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/platform"
	"github.com/cgp-platform/cgp/platformapi"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/readapi"
)

// Platform scopes the admin API's platform actions need.
const (
	PlatformScopeOrders   = "write_orders"
	PlatformScopeProducts = "write_products"
)

// Platform is the commerce platform as the order actions and the product
// pushes reach it. Every method is safe for concurrent use and honours
// ctx.
type Platform interface {
	// Session returns the shop's platform session (refreshed when it is
	// about to expire); platform.ErrNoSession when the shop has none or
	// the platform is not configured.
	Session(ctx context.Context, shopID string) (platform.Session, error)
	// Granted reports whether the shop granted the platform scope (on
	// the implied set: write_X grants read_X).
	Granted(ctx context.Context, s platform.Session, scope string) (bool, error)
	// Reauthorize is the link that takes the shop's merchant through the
	// install flow again.
	Reauthorize(ctx context.Context, shopID string) string
	CancelOrder(ctx context.Context, s platform.Session, in platformapi.CancelOrder) (platformapi.CancelJob, error)
	CreateRefund(ctx context.Context, s platform.Session, in platformapi.CreateRefund) (platformapi.Refund, error)
	UpdateProduct(ctx context.Context, s platform.Session, in platformapi.UpdateProduct) error
}

// OrderActions serves POST /api/v1/orders/{id}/cancel and
// /api/v1/orders/{id}/refunds: each is recorded on the order's stream,
// sent to the platform, its answer recorded, and answered 202 with the
// order showing the action; the platform's webhook confirms it later.
type OrderActions struct {
	idem     func(http.Handler) http.Handler
	cmds     *commands.Handler
	auth     *auth.Authenticator
	q        *commerce.Queries
	wait     readapi.Waiter
	platform Platform
}

// NewOrderActions returns the order action handlers. idem wraps each in
// Idempotency-Key handling: a retry with the key of an answered request
// replays the answer and never reaches the platform again.
func NewOrderActions(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *commerce.Queries,
	wait readapi.Waiter, p Platform) *OrderActions {
	return &OrderActions{cmds: cmds, auth: a, idem: idem, q: q, wait: wait, platform: p}
}

// Routes registers the order actions.
func (o *OrderActions) Routes(r *mux.Router) {
	write := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(o.auth.Require(domain.ScopeOrdersWrite, o.idem(h)))
	}
	r.Handle("/api/v1/orders/{id}/cancel", write(o.handleCancel)).Methods(http.MethodPost)
	r.Handle("/api/v1/orders/{id}/refunds", write(o.handleRefund)).Methods(http.MethodPost)
}

type cancelBody struct {
	Reason         string `json:"reason"`
	Refund         bool   `json:"refund"`
	Restock        bool   `json:"restock"`
	NotifyCustomer bool   `json:"notify_customer"`
	StaffNote      string `json:"staff_note"`
}

type refundLineBody struct {
	LineItemID json.RawMessage `json:"line_item_id"`
	Quantity   int             `json:"quantity"`
	Restock    bool            `json:"restock"`
}

type refundBody struct {
	Amount    optionalMoney    `json:"amount"`
	Currency  string           `json:"currency"`
	LineItems []refundLineBody `json:"line_items"`
	Note      string           `json:"note"`
	Notify    bool             `json:"notify"`
}

// request turns the body into the domain's request, with a 422 naming a
// malformed field.
func (b refundBody) request() (domain.RefundRequest, error) {
	req := domain.RefundRequest{Currency: b.Currency, Note: b.Note, Notify: b.Notify}
	if b.Amount.set && !b.Amount.null() {
		a, err := parseMoney("amount", b.Amount.raw)
		if err != nil {
			return req, err
		}
		req.Amount = a
	}
	for i, l := range b.LineItems {
		id, ok := platformID(l.LineItemID)
		if !ok {
			return req, httpapi.ValidationFailed("line_items["+strconv.Itoa(i)+"].line_item_id",
				"line_item_id is the platform's id of a line of the order (a number or a string)")
		}
		req.Lines = append(req.Lines, domain.RefundRequestLine{LineID: id, Quantity: l.Quantity, Restock: l.Restock})
	}
	return req, req.Validate()
}

// platformID reads a platform id given as a JSON string or integer.
func platformID(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if _, err := strconv.ParseUint(string(n), 10, 64); err == nil {
			return string(n), true
		}
	}
	return "", false
}

// handleCancel cancels an order on the platform.
func (o *OrderActions) handleCancel(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	var body cancelBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	req := domain.CancellationRequest{Reason: body.Reason, Refund: body.Refund, Restock: body.Restock,
		NotifyCustomer: body.NotifyCustomer, StaffNote: body.StaffNote}
	if err := req.Validate(); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	o.act(w, r, p, id, domain.OrderActionCancel, func(ord *domain.Order) error {
		_, err := ord.RequestCancellation(p.ShopID, "", req, time.Now())
		return err
	}, func(ctx context.Context) (commands.Result, commands.OrderActionTarget, error) {
		return o.cmds.RequestOrderCancellation(ctx, commands.RequestOrderCancellation{ShopID: p.ShopID, OrderID: id, Request: req}, meta(r, p))
	}, func(ctx context.Context, s platform.Session, t commands.OrderActionTarget) (domain.ActionOutcome, error) {
		job, err := o.platform.CancelOrder(ctx, s, platformapi.CancelOrder{OrderID: t.ExternalID, Reason: req.Reason, Refund: req.Refund,
			Restock: req.Restock, NotifyCustomer: req.NotifyCustomer, StaffNote: req.StaffNote})
		return domain.ActionOutcome{PlatformJobID: job.ID}, err
	})
}

// handleRefund refunds an order on the platform.
func (o *OrderActions) handleRefund(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	var body refundBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	req, err := body.request()
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	o.act(w, r, p, id, domain.OrderActionRefund, func(ord *domain.Order) error {
		_, err := ord.RequestRefund(p.ShopID, "", req, time.Now())
		return err
	}, func(ctx context.Context) (commands.Result, commands.OrderActionTarget, error) {
		return o.cmds.RequestOrderRefund(ctx, commands.RequestOrderRefund{ShopID: p.ShopID, OrderID: id, Request: req}, meta(r, p))
	}, func(ctx context.Context, s platform.Session, t commands.OrderActionTarget) (domain.ActionOutcome, error) {
		in := platformapi.CreateRefund{OrderID: t.ExternalID, Amount: req.Amount, Currency: t.Currency, Note: req.Note, Notify: req.Notify}
		for _, l := range req.Lines {
			rt := platformapi.RestockNone
			if l.Restock {
				rt = platformapi.RestockReturn
			}
			in.Lines = append(in.Lines, platformapi.RefundLine{LineItemID: l.LineID, Quantity: l.Quantity, RestockType: rt})
		}
		ref, err := o.platform.CreateRefund(ctx, s, in)
		return domain.ActionOutcome{PlatformRefundID: ref.ExternalID(), RefundedAmount: ref.Amount}, err
	})
}

// act runs an order action: judge it on the order as recorded (404, 409,
// 422 before anything else), check the shop's platform session (409
// platform_not_connected) and grant (403 platform_scope_missing), record
// the request, call the platform, record its answer, and answer 202 with
// the order, or the platform's failure (422 platform_rejected, 502
// platform_unavailable).
func (o *OrderActions) act(w http.ResponseWriter, r *http.Request, p auth.Principal, orderID, kind string, judge func(*domain.Order) error,
	record func(context.Context) (commands.Result, commands.OrderActionTarget, error),
	call func(context.Context, platform.Session, commands.OrderActionTarget) (domain.ActionOutcome, error)) {
	ctx := r.Context()
	ord, err := o.cmds.LoadOrder(ctx, orderID)
	if err == nil {
		err = judge(ord)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	s, err := connect(ctx, o.platform, p.ShopID, PlatformScopeOrders)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, target, err := record(ctx)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	outcome, callErr := call(ctx, s, target)
	answerErr := error(nil)
	if callErr != nil {
		answerErr = platform.HTTPError(callErr, o.platform.Reauthorize(ctx, p.ShopID))
		outcome = domain.ActionOutcome{FailureCode: "internal_error", FailureMessage: "the call to the platform failed"}
		var he *httpapi.Error
		if errors.As(answerErr, &he) {
			outcome.FailureCode, outcome.FailureMessage = he.Code, he.Message
		}
	}
	// The platform acted (or refused): its answer is recorded even when
	// the client went away.
	rec, recErr := o.cmds.RecordOrderActionOutcome(context.WithoutCancel(ctx), commands.RecordOrderActionOutcome{ShopID: p.ShopID,
		OrderID: orderID, ActionID: target.ActionID, Outcome: outcome}, meta(r, p))
	if recErr != nil {
		httpapi.Logger(ctx).Error().Err(recErr).Str("shop_id", p.ShopID).Str("command", "RecordOrderActionOutcome").
			Msg("the platform's answer to an order action was not recorded")
	} else if rec.Position > res.Position {
		res = rec
	}
	if answerErr != nil {
		httpapi.WriteError(w, r, answerErr)
		return
	}
	status := domain.ActionStatusSubmitted
	readapi.ServeWritten(w, r, o.wait, commerce.Name, res.Position, http.StatusAccepted,
		func(ctx context.Context) (*commerce.Order, error) { return o.q.Order(ctx, p.ShopID, orderID) },
		func(row *commerce.Order) { pendingAction(row, target.ActionID, kind, status, outcome) },
		func(row *commerce.Order) httpapi.Resource {
			res := readapi.OrderResource(row)
			res.Meta = map[string]any{"action_id": target.ActionID}
			return res
		})
}

// pendingAction shows an action the read model has not caught up with.
func pendingAction(row *commerce.Order, actionID, kind, status string, out domain.ActionOutcome) {
	for i := range row.Actions {
		if row.Actions[i].ID == actionID {
			return
		}
	}
	row.Actions = append(row.Actions, commerce.OrderAction{ID: actionID, OrderID: row.ID, Kind: kind, Status: status,
		PlatformJobID: out.PlatformJobID, PlatformRefundID: out.PlatformRefundID, RequestedAt: time.Now().UTC()})
}

// connect returns the shop's platform session when the shop granted
// scope: 409 platform_not_connected without a session, 403
// platform_scope_missing without the grant, the platform's failure
// mapped by platform.HTTPError when refreshing the session failed.
func connect(ctx context.Context, pl Platform, shopID, scope string) (platform.Session, error) {
	s, err := pl.Session(ctx, shopID)
	if err != nil {
		if errors.Is(err, platform.ErrNoSession) {
			return s, platform.NotConnected(pl.Reauthorize(ctx, shopID))
		}
		return s, platform.HTTPError(err, pl.Reauthorize(ctx, shopID))
	}
	ok, err := pl.Granted(ctx, s, scope)
	if err != nil {
		return s, err
	}
	if !ok {
		return s, platform.ScopeMissing(scope, pl.Reauthorize(ctx, shopID))
	}
	return s, nil
}
