package sending

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel"
)

// Built-in flows (domain/flows.go). The outbox reactor keeps each shop's
// flow settings and one run per order (review request) or checkout (cart
// abandonment) in snd_flow_runs, due when the flow's delay has passed;
// events in the log cancel waiting runs (the order cancelled, an order of
// the customer or the checkout's completion after a checkout, the flow
// switched off). The runner fires a due run only once the reactor has
// applied the log as it was when the run fell due (check_position): an
// order recorded before the end of the window always cancels the cart
// abandonment, however far behind the reactor was. Firing marks the run
// done and queues its message in one transaction of the sending store.

// Flow run states.
const (
	runWaiting   = "waiting"
	runDone      = "done"
	runCancelled = "cancelled"
)

// Reasons a waiting run is cancelled.
const (
	cancelFlowDisabled      = "flow_disabled"
	cancelOrderCancelled    = "order_cancelled"
	cancelOrdered           = "ordered"
	cancelCheckoutCompleted = "checkout_completed"
)

var flowMigration = readmodel.Migration{Version: 4, SQL: `
-- The built-in flows: each shop's settings of a flow (absent: the
-- defaults), and one run per order or checkout and flow, its message
-- queued when due (check_position: the log head when it fell due, which
-- the reactor must have applied before it fires).
CREATE TABLE snd_flow_settings (
	shop_id  TEXT NOT NULL,
	flow     TEXT NOT NULL,
	settings TEXT NOT NULL,
	PRIMARY KEY (shop_id, flow)
);
CREATE TABLE snd_flow_runs (
	message_id       TEXT PRIMARY KEY,
	shop_id          TEXT NOT NULL,
	flow             TEXT NOT NULL,
	customer_id      TEXT NOT NULL,
	subject_id       TEXT NOT NULL,
	order_name       TEXT NOT NULL DEFAULT '',
	trigger_position INTEGER NOT NULL,
	due_at           INTEGER NOT NULL,
	check_position   INTEGER NOT NULL DEFAULT 0,
	state            TEXT NOT NULL,
	reason           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX snd_flow_runs_due ON snd_flow_runs (due_at) WHERE state = 'waiting';
CREATE INDEX snd_flow_runs_customer ON snd_flow_runs (shop_id, customer_id) WHERE state = 'waiting';
CREATE INDEX snd_flow_runs_shop ON snd_flow_runs (shop_id, flow);
`}

// flowHorizon is how much older than its flow's delay a trigger may be
// and still start a run.
const flowHorizon = 24 * time.Hour

// flowTriggerTypes are the events the flows read without decoding them
// whole (flowTrigger).
var flowTriggerTypes = []string{"OrderRecorded", "CheckoutRecorded"}

// triggerFields are what the flows read of an order or checkout snapshot:
// ids, topic and times, none of them personal data.
type triggerFields struct {
	OrderID     string    `json:"order_id"`
	CheckoutID  string    `json:"checkout_id"`
	CustomerID  string    `json:"customer_id"`
	Topic       string    `json:"topic"`
	First       bool      `json:"first"`
	Stale       bool      `json:"stale"`
	Name        string    `json:"name"`
	CancelledAt time.Time `json:"cancelled_at"`
	CompletedAt time.Time `json:"completed_at"`
}

// flowTrigger applies an order or checkout snapshot to the flows' runs.
// It opens only the shop's seal (Codec.Open): the personal fields stay
// sealed, none is needed here, and no customer key is read at the
// ingestion rate. An erased shop's event is passed over.
func flowTrigger(ctx context.Context, tx *sql.Tx, codec *envelope.Codec, e eventlog.Event, now int64) error {
	raw, err := codec.Open(ctx, &e)
	if errors.Is(err, envelope.ErrShopErased) {
		return nil
	}
	if err != nil {
		return err
	}
	var f triggerFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("flows: %s %s: %w", e.Type, e.ID, err)
	}
	if f.Stale || f.CustomerID == "" {
		return nil // an older snapshot, or a guest: nobody to write to
	}
	// A trigger older than the flow's delay plus a day (a sending store
	// rebuilt from an old log, a long outage) starts no run: nobody is
	// asked to review last year's order. It still cancels.
	recent := func(s domain.FlowSettings) bool {
		return now-e.RecordedAt.UnixMicro() <= int64(s.DelayMinutes)*int64(time.Minute/time.Microsecond)+int64(flowHorizon/time.Microsecond)
	}
	if e.Type == "OrderRecorded" {
		return flowOrder(ctx, tx, e, f, now, recent)
	}
	if f.Topic != "checkouts/create" && f.Topic != "checkouts/update" {
		return nil
	}
	id := domain.FlowMessageID(domain.FlowCartAbandonment, f.CheckoutID)
	if !f.CompletedAt.IsZero() {
		return cancelRun(ctx, tx, `message_id = ?`, cancelCheckoutCompleted, id)
	}
	s, err := flowSettings(ctx, tx, e.ShopID, domain.FlowCartAbandonment)
	if err != nil || !s.Enabled || !recent(s) {
		return err
	}
	// Each change of the checkout starts the window again: it is
	// abandoned once it has not changed for the delay.
	return exec(ctx, tx, `INSERT INTO snd_flow_runs (message_id, shop_id, flow, customer_id, subject_id, trigger_position, due_at, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO UPDATE SET due_at = excluded.due_at,
			trigger_position = excluded.trigger_position, check_position = 0 WHERE snd_flow_runs.state = 'waiting'`,
		id, e.ShopID, domain.FlowCartAbandonment, f.CustomerID, f.CheckoutID, int64(e.Position),
		now+int64(s.DelayMinutes)*int64(time.Minute/time.Microsecond), runWaiting)
}

// flowOrder applies an order snapshot: a new order of the customer
// cancels its waiting cart abandonments, a cancelled order its review
// request, a fulfilled one starts its review request.
func flowOrder(ctx context.Context, tx *sql.Tx, e eventlog.Event, f triggerFields, now int64, recent func(domain.FlowSettings) bool) error {
	if f.First || f.Topic == "orders/create" {
		if err := cancelRun(ctx, tx, `shop_id = ? AND customer_id = ? AND flow = ?`, cancelOrdered, e.ShopID, f.CustomerID,
			domain.FlowCartAbandonment); err != nil {
			return err
		}
	}
	review := domain.FlowMessageID(domain.FlowReviewRequest, f.OrderID)
	if !f.CancelledAt.IsZero() || f.Topic == "orders/cancelled" {
		return cancelRun(ctx, tx, `message_id = ?`, cancelOrderCancelled, review)
	}
	if f.Topic != "orders/fulfilled" {
		return nil
	}
	s, err := flowSettings(ctx, tx, e.ShopID, domain.FlowReviewRequest)
	if err != nil || !s.Enabled || !recent(s) {
		return err
	}
	return exec(ctx, tx, `INSERT INTO snd_flow_runs (message_id, shop_id, flow, customer_id, subject_id, order_name, trigger_position,
		due_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`,
		review, e.ShopID, domain.FlowReviewRequest, f.CustomerID, f.OrderID, truncate(f.Name, 64), int64(e.Position),
		now+int64(s.DelayMinutes)*int64(time.Minute/time.Microsecond), runWaiting)
}

// configureFlow keeps a shop's new settings of a flow; switching it off
// cancels its waiting runs.
func configureFlow(ctx context.Context, tx *sql.Tx, ev *domain.FlowConfigured) error {
	b, err := json.Marshal(ev.Settings)
	if err != nil {
		return err
	}
	if err := exec(ctx, tx, `INSERT INTO snd_flow_settings (shop_id, flow, settings) VALUES (?, ?, ?)
		ON CONFLICT (shop_id, flow) DO UPDATE SET settings = excluded.settings`, ev.ShopID, ev.Flow, string(b)); err != nil {
		return err
	}
	if ev.Settings.Enabled {
		return nil
	}
	return cancelRun(ctx, tx, `shop_id = ? AND flow = ?`, cancelFlowDisabled, ev.ShopID, ev.Flow)
}

func cancelRun(ctx context.Context, tx *sql.Tx, where, reason string, args ...any) error {
	return exec(ctx, tx, `UPDATE snd_flow_runs SET state = ?, reason = ? WHERE state = ? AND `+where,
		append([]any{runCancelled, reason, runWaiting}, args...)...)
}

// flowSettings reads a shop's settings of a flow (the defaults when it
// never configured it).
func flowSettings(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, shop, flow string) (domain.FlowSettings, error) {
	var raw string
	err := q.QueryRowContext(ctx, `SELECT settings FROM snd_flow_settings WHERE shop_id = ? AND flow = ?`, shop, flow).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.DefaultFlowSettings(flow), nil
	}
	if err != nil {
		return domain.FlowSettings{}, fmt.Errorf("flow settings: %w", err)
	}
	var s domain.FlowSettings
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return domain.FlowSettings{}, fmt.Errorf("flow settings: %w", err)
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// flowRun is a due run of a flow.
type flowRun struct {
	messageID, shop, flow, customer, subject, orderName string
	trigger, check                                      uint64
	due                                                 int64
}

// runFlows fires the due runs (up to 256 a call) whose check the reactor
// has passed, and sets the check of those that just fell due to the log
// head.
func (d *Dispatcher) runFlows(ctx context.Context, now time.Time) error {
	if d.cfg.Head == nil || d.cfg.Applied == nil {
		return nil
	}
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT message_id, shop_id, flow, customer_id, subject_id, order_name, trigger_position,
		check_position, due_at FROM snd_flow_runs WHERE state = 'waiting' AND due_at <= ? ORDER BY due_at LIMIT 256`, now.UnixMicro())
	if err != nil {
		return fmt.Errorf("due flow runs: %w", err)
	}
	var due []flowRun
	for rows.Next() {
		var r flowRun
		var trigger, check int64
		if err := rows.Scan(&r.messageID, &r.shop, &r.flow, &r.customer, &r.subject, &r.orderName, &trigger, &check, &r.due); err != nil {
			rows.Close()
			return fmt.Errorf("due flow runs: %w", err)
		}
		r.trigger, r.check = uint64(trigger), uint64(check)
		due = append(due, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("due flow runs: %w", err)
	}
	if len(due) == 0 {
		return nil
	}
	var head uint64
	for i := range due {
		if due[i].check != 0 {
			continue
		}
		if head == 0 {
			if head, err = d.cfg.Head(ctx); err != nil {
				return fmt.Errorf("flows: log head: %w", err)
			}
		}
		r := &due[i]
		if err := d.cfg.Write(ctx, func(tx *sql.Tx) error {
			return exec(ctx, tx, `UPDATE snd_flow_runs SET check_position = ? WHERE message_id = ? AND state = 'waiting'
				AND check_position = 0 AND due_at = ?`, int64(max(head, 1)), r.messageID, r.due)
		}); err != nil {
			return err
		}
		r.check = max(head, 1)
	}
	applied := d.cfg.Applied()
	queued := false
	for _, r := range due {
		if applied < r.check {
			continue // looked at again once the reactor is there
		}
		ok, err := d.fire(ctx, r, now)
		if err != nil {
			return err
		}
		queued = queued || ok
	}
	if queued {
		d.Wake()
	}
	return nil
}

// fire queues a due run's message with the flow's settings as they are
// now, and tells whether it did (the run may have changed since it was
// read: a later checkout update, a cancellation).
func (d *Dispatcher) fire(ctx context.Context, r flowRun, now time.Time) (bool, error) {
	fired := false
	err := d.cfg.Write(ctx, func(tx *sql.Tx) error {
		s, err := flowSettings(ctx, tx, r.shop, r.flow)
		if err != nil {
			return err
		}
		state, reason := runDone, ""
		if !s.Enabled {
			state, reason = runCancelled, cancelFlowDisabled
		}
		res, err := tx.ExecContext(ctx, `UPDATE snd_flow_runs SET state = ?, reason = ? WHERE message_id = ? AND state = 'waiting'
			AND due_at = ? AND check_position = ?`, state, reason, r.messageID, r.due, int64(r.check))
		if err != nil {
			return fmt.Errorf("fire flow run: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 || state != runDone {
			return err
		}
		c := journeyContent{MessageContent: domain.MessageContent{Subject: s.Subject, Text: s.Text, HTML: s.HTML, Parameters: s.Parameters},
			Template: s.Template, Language: s.Language, OrderName: r.orderName, Page: s.LinkURL}
		if c.Language == "" && s.Channel == domain.ChannelWhatsApp {
			c.Language = domain.DefaultLanguage
		}
		if r.flow == domain.FlowReviewRequest {
			c.Order = r.subject
		} else {
			c.Trigger = r.trigger
		}
		b, _ := json.Marshal(c)
		if _, err := tx.ExecContext(ctx, `INSERT INTO snd_outbox (message_id, shop_id, customer_id, channel, intent, flow, state, due_at,
			content) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?) ON CONFLICT (message_id) DO NOTHING`,
			r.messageID, r.shop, r.customer, s.Channel, domain.FlowIntent(r.flow), r.flow, now.UnixMicro(), string(b)); err != nil {
			return fmt.Errorf("queue a flow message: %w", err)
		}
		fired = true
		return nil
	})
	return fired, err
}

// flowValues fills the merge fields of a flow's message: the review
// link (a fresh review token) and the order's name, or the checkout's
// recovery link read from its snapshot in the log (personal data: never
// copied to the sending store; empty once the customer is erased).
func (d *Dispatcher) flowValues(ctx context.Context, m *Message, c journeyContent) error {
	switch m.Ref.Flow {
	case domain.FlowReviewRequest:
		if d.cfg.Links == nil || c.Order == "" {
			return nil
		}
		link, err := d.cfg.Links.ReviewLink(ctx, m.Ref.ShopID, m.Ref.CustomerID, c.Order, c.Page, d.cfg.Now())
		if err != nil {
			return err
		}
		m.Values = map[string]string{domain.MergeReviewLink: link, domain.MergeOrderName: c.OrderName}
	case domain.FlowCartAbandonment:
		if d.cfg.Trigger == nil || c.Trigger == 0 {
			return nil
		}
		ev, err := d.cfg.Trigger(ctx, c.Trigger)
		if errors.Is(err, envelope.ErrShopErased) {
			return nil
		}
		if err != nil {
			return err
		}
		if cr, ok := ev.(*domain.CheckoutRecorded); ok && webLink(cr.RecoveryURL) {
			m.Values = map[string]string{domain.MergeRecoveryLink: cr.RecoveryURL}
		}
	}
	return nil
}

// webLink tells whether s is an absolute http(s) address fit for a link
// in a message (the platform's recovery link is outside input).
func webLink(s string) bool {
	if len(s) > 4096 || strings.ContainsAny(s, " \t\r\n\"'<>") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil
}

// link is the merge field of the link a flow's message carries.
func (m Message) link() string {
	if m.Ref.Flow == domain.FlowReviewRequest {
		return domain.MergeReviewLink
	}
	return domain.MergeRecoveryLink
}

// FlowLinks makes the review-request links.
type FlowLinks interface {
	// ReviewLink is the link to the review form of the customer's order:
	// page ("" for the shop's default review page) with a review token
	// issued at issued.
	ReviewLink(ctx context.Context, shop, customer, order, page string, issued time.Time) (string, error)
}
