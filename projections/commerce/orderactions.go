package commerce

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// orderActionsTable (migration 6) keeps the admin API's actions on orders
// with their status: requested, submitted (the platform accepted it),
// confirmed (the platform's webhook showed it done) or failed.
const orderActionsTable = `
CREATE TABLE order_actions (
	action_id          TEXT PRIMARY KEY,
	shop_id            TEXT NOT NULL,
	order_id           TEXT NOT NULL,
	kind               TEXT NOT NULL,
	status             TEXT NOT NULL,
	reason             TEXT NOT NULL DEFAULT '',
	amount             INTEGER NOT NULL DEFAULT 0,
	currency           TEXT NOT NULL DEFAULT '',
	lines              TEXT NOT NULL DEFAULT '[]',
	platform_job_id    TEXT NOT NULL DEFAULT '',
	platform_refund_id TEXT NOT NULL DEFAULT '',
	error_code         TEXT NOT NULL DEFAULT '',
	error_message      TEXT NOT NULL DEFAULT '',
	requested_at       INTEGER NOT NULL,
	submitted_at       INTEGER NOT NULL DEFAULT 0,
	confirmed_at       INTEGER NOT NULL DEFAULT 0,
	failed_at          INTEGER NOT NULL DEFAULT 0,
	version            INTEGER NOT NULL
);
CREATE INDEX order_actions_order ON order_actions (order_id, requested_at, action_id);
CREATE INDEX order_actions_shop ON order_actions (shop_id);
`

// liveActions is the SQL condition of an action neither confirmed nor
// failed.
const liveActions = `status IN ('` + domain.ActionStatusRequested + `', '` + domain.ActionStatusSubmitted + `')`

// orderActionCases fold the order actions' events.
var orderActionCases = []projections.TxCase{
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.OrderCancellationRequested, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO order_actions (action_id, shop_id, order_id, kind, status, reason, requested_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (action_id) DO NOTHING`,
			ev.ActionID, ev.ShopID, ev.OrderID, domain.OrderActionCancel, domain.ActionStatusRequested, ev.Reason,
			readmodel.Micros(ev.RequestedAt), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.OrderRefundRequested, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO order_actions (action_id, shop_id, order_id, kind, status, amount, currency, lines,
			requested_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (action_id) DO NOTHING`,
			ev.ActionID, ev.ShopID, ev.OrderID, domain.OrderActionRefund, domain.ActionStatusRequested, int64(ev.Amount), ev.Currency,
			readmodel.JSONText(ev.Lines, "[]"), readmodel.Micros(ev.RequestedAt), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.OrderActionSubmitted, e *projections.DecodedEvent) error {
		// The platform's webhook may have been folded already: the
		// action is then confirmed at once.
		refundRow := ""
		if ev.PlatformRefundID != "" {
			refundRow = domain.IDFromExternal(domain.PrefixRefund, "refund", ev.ShopID, ev.PlatformRefundID)
		}
		_, err := tx.ExecContext(ctx, `UPDATE order_actions SET platform_job_id = ?1, platform_refund_id = ?2, submitted_at = ?3,
			status = CASE
				WHEN kind = 'refund' AND EXISTS (SELECT 1 FROM refunds WHERE refund_id = ?4) THEN 'confirmed'
				WHEN kind = 'cancel' AND EXISTS (SELECT 1 FROM orders WHERE order_id = order_actions.order_id AND cancelled_at > 0) THEN 'confirmed'
				ELSE 'submitted' END,
			confirmed_at = CASE
				WHEN kind = 'refund' THEN COALESCE((SELECT created_at FROM refunds WHERE refund_id = ?4), 0)
				WHEN kind = 'cancel' THEN COALESCE((SELECT cancelled_at FROM orders WHERE order_id = order_actions.order_id), 0)
				ELSE 0 END,
			version = ?5
			WHERE action_id = ?6 AND status = 'requested' AND version < ?5`,
			ev.PlatformJobID, ev.PlatformRefundID, readmodel.Micros(ev.SubmittedAt), refundRow, int64(e.Position), ev.ActionID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.OrderActionFailed, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE order_actions SET status = ?, error_code = ?, error_message = ?, failed_at = ?, version = ?
			WHERE action_id = ? AND `+liveActions+` AND version < ?`,
			domain.ActionStatusFailed, ev.Code, ev.Message, readmodel.Micros(ev.FailedAt), int64(e.Position), ev.ActionID, int64(e.Position))
		return err
	}),
}

// confirmCancellation marks the order's cancellations on their way as
// confirmed by a snapshot showing the order cancelled.
func confirmCancellation(ctx context.Context, tx *sql.Tx, ev *domain.OrderRecorded, pos int64) error {
	if ev.Stale || ev.CancelledAt.IsZero() {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE order_actions SET status = 'confirmed', confirmed_at = ?, version = ?
		WHERE order_id = ? AND kind = 'cancel' AND `+liveActions+` AND version < ?`,
		readmodel.Micros(ev.CancelledAt), pos, ev.OrderID, pos)
	return err
}

// confirmRefund marks the refund action the platform's refund answers as
// confirmed.
func confirmRefund(ctx context.Context, tx *sql.Tx, ev *domain.RefundRecorded, pos int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE order_actions SET status = 'confirmed', confirmed_at = ?, version = ?
		WHERE order_id = ? AND kind = 'refund' AND platform_refund_id = ? AND `+liveActions+` AND version < ?`,
		readmodel.Micros(ev.CreatedAt), pos, ev.OrderID, ev.ExternalID, pos)
	return err
}

// OrderAction is an action taken on an order through the admin API.
type OrderAction struct {
	ID, OrderID, Kind, Status, Reason, Currency string
	Amount                                      domain.Amount
	Lines                                       []domain.RefundRequestLine
	PlatformJobID, PlatformRefundID             string
	ErrorCode, ErrorMessage                     string
	RequestedAt, SubmittedAt                    time.Time
	ConfirmedAt, FailedAt                       time.Time
}

const orderActionColumns = `action_id, order_id, kind, status, reason, amount, currency, lines, platform_job_id, platform_refund_id,
	error_code, error_message, requested_at, submitted_at, confirmed_at, failed_at`

func scanOrderAction(s readmodel.Scanner) (OrderAction, error) {
	var a OrderAction
	var amount, requested, submitted, confirmed, failed int64
	var lines string
	if err := s.Scan(&a.ID, &a.OrderID, &a.Kind, &a.Status, &a.Reason, &amount, &a.Currency, &lines, &a.PlatformJobID,
		&a.PlatformRefundID, &a.ErrorCode, &a.ErrorMessage, &requested, &submitted, &confirmed, &failed); err != nil {
		return OrderAction{}, err
	}
	a.Amount = domain.Amount(amount)
	a.RequestedAt, a.SubmittedAt = readmodel.Time(requested), readmodel.Time(submitted)
	a.ConfirmedAt, a.FailedAt = readmodel.Time(confirmed), readmodel.Time(failed)
	return a, unmarshalAll(col{lines, &a.Lines})
}

// attachActions fills the Actions of orders (of one shop), oldest first.
func (q *Queries) attachActions(ctx context.Context, shop string, orders []Order) error {
	if len(orders) == 0 {
		return nil
	}
	ids := make([]any, 0, len(orders)+1)
	ids = append(ids, shop)
	at := make(map[string]int, len(orders))
	for i := range orders {
		ids = append(ids, orders[i].ID)
		at[orders[i].ID] = i
		orders[i].Actions = []OrderAction{}
	}
	rows, err := readmodel.List(ctx, q.db, "order actions", scanOrderAction, `SELECT `+orderActionColumns+` FROM order_actions
		WHERE shop_id = ? AND order_id IN (?`+strings.Repeat(", ?", len(orders)-1)+`) ORDER BY requested_at, action_id`, ids...)
	if err != nil {
		return err
	}
	for _, a := range rows {
		o := &orders[at[a.OrderID]]
		o.Actions = append(o.Actions, a)
	}
	return nil
}
