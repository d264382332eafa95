// Package conciergereplies is the AI concierge's reactor (issue 18,
// point 4; stable name "concierge"). On each inbound WhatsApp text message
// of a conversation in the ai_concierge queue it builds a
// concierge.Question from the read models and applies the escalation
// rules that need no answer (keywords: the conversation goes to the
// humans at once); the others it queues (concierge_pending) for the
// Answers job, which asks the configured answerer outside any transaction
// (bounded by AnswerTimeout: a provider's seconds never hold the read
// models' writer) and then either records the answer (ConciergeAnswered and a ConversationReplyRequested
// of author ai_concierge, which the sending side sends) or moves the
// conversation to the human queue and raises a P3 conversation_escalated
// anomaly (in-app notification). A human reply to, or the close of, the
// conversation resolves that anomaly.
//
// Its tables are its own, folded in log order, so that the decision for a
// message is the one of the log as of that message: the shops' concierge
// settings (ConciergeSettingsChanged; GET /api/v1/shop reads them here),
// each conversation's queue decided exactly as the conversations read
// model does (the message's queue, the shop's plan as of the message;
// a conversation escalated to humans stays there), and each conversation's
// last turns (roles and the concierge's "I don't know"s, no texts: the
// repeated-unanswered rule needs no more, and no customer text is kept
// here). The customer's first name and orders are read, inside the same
// transaction, from the customers and commerce read models (the customer
// whose phone is the sender's WhatsApp identity); those are folded long
// before the customer writes, so their lag does not matter.
//
// Every command's ids derive from the inbound message's event id: a
// redelivery, a retried transaction or a rebuild appends nothing twice
// (an answer already recorded wins; a rebuild does not ask again for
// messages outside the 24-hour reply window, which cannot be answered).
// A message of an erased customer (its texts unsealable) is skipped, and
// so is a consent reply (STOP, START…), which consent_replies records.
//
// It imports concierge, domain, envelope, projections and readmodel.
package conciergereplies

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the reactor's stable name.
const Name = "concierge"

// AnswerTimeout bounds one answer of the Answers job; past it the
// conversation goes to the humans (answerer_failed:timeout).
const AnswerTimeout = 10 * time.Second

// Limits of a question.
const (
	maxOrders = 5
	maxTurns  = 10
)

// Reasons of escalations that are not the rules'.
const (
	// ReasonAnswererFailed: the answerer produced no answer (the
	// provider failed or timed out); the reason is followed by its code.
	ReasonAnswererFailed = "answerer_failed"
)

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE concierge_settings (
	shop_id  TEXT PRIMARY KEY,
	settings TEXT NOT NULL
);
CREATE TABLE concierge_conversations (
	conversation_id TEXT PRIMARY KEY,
	shop_id         TEXT NOT NULL,
	queue           TEXT NOT NULL
);
CREATE INDEX concierge_conversations_shop ON concierge_conversations (shop_id);
CREATE TABLE concierge_turns (
	shop_id         TEXT NOT NULL,
	conversation_id TEXT NOT NULL,
	position        INTEGER NOT NULL,
	role            TEXT NOT NULL,
	unanswered      INTEGER NOT NULL DEFAULT 0,
	at              INTEGER NOT NULL,
	PRIMARY KEY (conversation_id, position)
);
CREATE INDEX concierge_turns_shop ON concierge_turns (shop_id);
`}, {Version: 2, SQL: `
-- The inbound messages waiting for the answerer, by the log position of
-- their event (no text: the answering job reads the event again).
CREATE TABLE concierge_pending (
	event_id        TEXT PRIMARY KEY,
	position        INTEGER NOT NULL,
	shop_id         TEXT NOT NULL,
	conversation_id TEXT NOT NULL
);
CREATE INDEX concierge_pending_position ON concierge_pending (position);
CREATE INDEX concierge_pending_shop ON concierge_pending (shop_id);
`}}

// Reply records an answer (the AnswerConversation command). It must be
// idempotent for inboundEventID.
type Reply func(ctx context.Context, c domain.ConversationFacts, inboundEventID, text string, answered domain.ConciergeAnswered) error

// Escalate moves a conversation to the human queue (the
// EscalateConversation command); idempotent for inboundEventID.
type Escalate func(ctx context.Context, c domain.ConversationFacts, inboundEventID, reason string) error

// Raise raises an anomaly (RaiseAnomaly); idempotent for a cause.
type Raise func(ctx context.Context, d domain.AnomalyDraft) error

// Resolve resolves the open anomaly of a key, if any (ResolveAnomaly);
// idempotent for a cause.
type Resolve func(ctx context.Context, shopID, dedupeKey, causeID string, causePosition uint64, reason string) error

// Config is what the reactor acts with. With a nil Answerer it only folds
// its tables (listing names and tables, the settings' reads).
type Config struct {
	// Answerer answers the questions; AnswererName names it in
	// ConciergeAnswered (embedded, openai).
	Answerer     concierge.Answerer
	AnswererName string
	Reply        Reply
	Escalate     Escalate
	Raise        Raise
	Resolve      Resolve
	// Now is the clock of the reply window (default time.Now).
	Now func() time.Time
	// Wake, when set, is called after a transaction that queued a
	// message for the answerer (it wakes the Answers job).
	Wake func()
}

// Projector returns the concierge reactor. Its commands append to the
// event log from inside the read-model transaction, as the anomaly reactor
// does: acceptable because they are idempotent. A domain not-found or
// validation error of a command is skipped (retrying cannot help); any
// other error is retried by the runtime.
func Projector(codec *envelope.Codec, cfg Config) projections.Projector {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := reactor{cfg: cfg}
	cases := r.fold()
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
		Committed: func(e eventlog.Event) {
			if cfg.Wake != nil && e.Type == "WhatsAppMessageReceived" {
				cfg.Wake()
			}
		},
	}
}

type reactor struct{ cfg Config }

func (r reactor) fold() projections.TxCases {
	return projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("concierge_settings"),
				readmodel.ShopRows("concierge_conversations"), readmodel.ShopRows("concierge_turns"), readmodel.ShopRows("concierge_pending"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConciergeSettingsChanged, _ *projections.DecodedEvent) error {
			return exec(ctx, tx, `INSERT INTO concierge_settings (shop_id, settings) VALUES (?, ?)
				ON CONFLICT (shop_id) DO UPDATE SET settings = excluded.settings`, ev.ShopID, readmodel.JSONText(ev.Settings, "{}"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppMessageReceived, e *projections.DecodedEvent) error {
			return r.receive(ctx, tx, ev, e)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationQueued, _ *projections.DecodedEvent) error {
			return setQueue(ctx, tx, ev.ConversationID, ev.ShopID, ev.Queue)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationClosed, e *projections.DecodedEvent) error {
			if err := setQueue(ctx, tx, ev.ConversationID, ev.ShopID, domain.QueueClosed); err != nil {
				return err
			}
			return r.settle(ctx, ev.ShopID, ev.ConversationID, e, "the conversation was closed")
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConciergeAnswered, e *projections.DecodedEvent) error {
			return turn(ctx, tx, ev.ShopID, ev.ConversationID, e, concierge.RoleConcierge, ev.Unanswered, ev.AnsweredAt)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationReplyRequested, e *projections.DecodedEvent) error {
			if ev.Author == domain.AuthorConcierge {
				return nil // its ConciergeAnswered is the turn
			}
			if err := turn(ctx, tx, ev.ShopID, ev.ConversationID, e, concierge.RoleMerchant, false, ev.RequestedAt); err != nil {
				return err
			}
			return r.settle(ctx, ev.ShopID, ev.ConversationID, e, "a human answered the conversation")
		}),
	)
}

// EscalationKey is the dedupe key of a conversation's escalation anomaly.
func EscalationKey(conversationID string) string { return "conversation:" + conversationID }

// receive moves the conversation as the conversations read model does,
// records the customer's turn, and answers or escalates a text message of
// a conversation left in the ai_concierge queue.
func (r reactor) receive(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppMessageReceived, e *projections.DecodedEvent) error {
	id := domain.ConversationID(ev.ShopID, ev.CustomerID)
	var queue string
	err := tx.QueryRowContext(ctx, `INSERT INTO concierge_conversations (conversation_id, shop_id, queue) VALUES (?, ?, ?)
		ON CONFLICT (conversation_id) DO UPDATE SET queue = CASE WHEN concierge_conversations.queue = 'closed' THEN excluded.queue
			WHEN excluded.queue = 'human' THEN 'human' ELSE concierge_conversations.queue END
		RETURNING queue`, id, ev.ShopID, ev.Queue).Scan(&queue)
	if err != nil {
		return fmt.Errorf("conversation queue: %w", err)
	}
	history, err := turns(ctx, tx, id, int64(e.Position))
	if err != nil {
		return err
	}
	if err := turn(ctx, tx, ev.ShopID, id, e, concierge.RoleCustomer, false, ev.SentAt); err != nil {
		return err
	}
	if r.cfg.Answerer == nil || queue != domain.QueueAIConcierge || ev.Type != "text" || ev.Text == nil ||
		strings.TrimSpace(*ev.Text) == "" || len(e.Redacted) > 0 || ev.From == "" {
		return nil
	}
	if domain.ReplyConsent(*ev.Text) != "" {
		return nil // STOP, START…: a consent decision (consent_replies), not a question
	}
	now := r.cfg.Now()
	if now.Sub(ev.SentAt) >= domain.CustomerServiceWindow {
		return nil // too old to answer (a rebuild, a long outage): the inbox has it
	}
	facts := domain.ConversationFacts{ID: id, ShopID: ev.ShopID, CustomerID: ev.CustomerID, WhatsAppID: ev.From, LastInboundAt: ev.SentAt}
	settings, err := loadSettings(ctx, tx, ev.ShopID)
	if err != nil {
		return err
	}
	q, err := question(ctx, tx, ev, settings)
	if err != nil {
		return err
	}
	q.History = history
	rules := concierge.Rules{MerchantKeywords: settings.Keywords, Threshold: settings.Threshold}
	if rules.Threshold == 0 {
		rules.Threshold = math.SmallestNonzeroFloat64 // the merchant's 0: every answer with a text goes
	}
	cause := e.ID.String()
	if esc, reason := rules.Before(q); esc {
		return r.escalate(ctx, tx, facts, e, reason)
	}
	// The answer is the Answers job's, outside this transaction: a
	// provider's seconds must not hold the read models' writer.
	return exec(ctx, tx, `INSERT INTO concierge_pending (event_id, position, shop_id, conversation_id) VALUES (?, ?, ?, ?)
		ON CONFLICT (event_id) DO NOTHING`, cause, int64(e.Position), ev.ShopID, id)
}

// escalate moves the conversation to the human queue (here at once, so
// that the customer's next message, folded before the ConversationQueued,
// is not answered) and raises the anomaly that notifies the merchant.
func (r reactor) escalate(ctx context.Context, tx *sql.Tx, c domain.ConversationFacts, e *projections.DecodedEvent, reason string) error {
	if err := setQueue(ctx, tx, c.ID, c.ShopID, domain.QueueHuman); err != nil {
		return err
	}
	return r.handOver(ctx, c, e.ID.String(), uint64(e.Position), reason)
}

// handOver records the escalation (ConversationQueued) and raises its
// anomaly, both idempotent for the inbound message's event id.
func (r reactor) handOver(ctx context.Context, c domain.ConversationFacts, cause string, position uint64, reason string) error {
	if err := skip(r.cfg.Escalate(ctx, c, cause, reason), "escalate"); err != nil {
		return err
	}
	return skip(r.cfg.Raise(ctx, domain.AnomalyDraft{ShopID: c.ShopID, Severity: domain.SeverityP3, Kind: domain.AnomalyConversationEscalate,
		Title: fmt.Sprintf("A customer conversation needs a human (reason: %s)", reason),
		Summary: "The AI concierge handed a customer's conversation to your team instead of answering it (" + reason + "). " +
			"Open the conversation in the human queue and reply within WhatsApp's 24-hour window.",
		Resources: []domain.AnomalyResource{{Type: "conversation", ID: c.ID}}, DedupeKey: EscalationKey(c.ID),
		Cause: cause, CausePosition: position}), "raise")
}

// settle resolves the conversation's escalation anomaly, if any.
func (r reactor) settle(ctx context.Context, shop, conversation string, e *projections.DecodedEvent, reason string) error {
	if r.cfg.Resolve == nil {
		return nil
	}
	return skip(r.cfg.Resolve(ctx, shop, EscalationKey(conversation), e.ID.String(), uint64(e.Position), reason), "resolve")
}

// question gathers what the answerer may know: the shop's name, the
// customer's first name and recent orders (the customer of the shop whose
// phone is the sender's WhatsApp number, never an erased one), the shop's
// policies.
func question(ctx context.Context, tx querier, ev *domain.WhatsAppMessageReceived, s domain.ConciergeSettings) (concierge.Question, error) {
	q := concierge.Question{Text: *ev.Text, Policies: s.Policies}
	err := tx.QueryRowContext(ctx, `SELECT domain FROM shops WHERE shop_id = ?`, ev.ShopID).Scan(&q.ShopName)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return q, fmt.Errorf("shop name: %w", err)
	}
	digits := domain.PhoneDigits(ev.From)
	if digits == "" {
		return q, nil
	}
	var customerID string
	var first sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT customer_id, first_name FROM customers WHERE shop_id = ? AND redacted = 0
		AND phone IS NOT NULL AND `+normalizedPhone+` = ? ORDER BY updated_at DESC, customer_id LIMIT 1`, ev.ShopID, digits).
		Scan(&customerID, &first)
	if errors.Is(err, sql.ErrNoRows) {
		return q, nil
	}
	if err != nil {
		return q, fmt.Errorf("customer: %w", err)
	}
	if f := strings.Fields(first.String); len(f) > 0 {
		q.FirstName = f[0]
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, financial_status, fulfillment_status, cancelled_at, created_at FROM orders
		WHERE shop_id = ? AND customer_id = ? AND redacted = 0 ORDER BY created_at DESC, order_id DESC LIMIT ?`,
		ev.ShopID, customerID, maxOrders)
	if err != nil {
		return q, fmt.Errorf("orders: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o concierge.Order
		var cancelled, created int64
		if err := rows.Scan(&o.Name, &o.FinancialStatus, &o.FulfillmentStatus, &cancelled, &created); err != nil {
			return q, fmt.Errorf("orders: %w", err)
		}
		o.Cancelled = cancelled != 0
		if created != 0 {
			o.CreatedAt = readmodel.Time(created)
		}
		q.Orders = append(q.Orders, o)
	}
	return q, rows.Err()
}

// normalizedPhone is the customers' phone column with the usual
// separators removed, as domain.PhoneDigits does for the common forms.
const normalizedPhone = `replace(replace(replace(replace(replace(replace(phone, '+', ''), ' ', ''), '-', ''), '(', ''), ')', ''), '.', '')`

func loadSettings(ctx context.Context, tx querier, shop string) (domain.ConciergeSettings, error) {
	var raw string
	err := tx.QueryRowContext(ctx, `SELECT settings FROM concierge_settings WHERE shop_id = ?`, shop).Scan(&raw)
	return decodeSettings(raw, err)
}

func decodeSettings(raw string, err error) (domain.ConciergeSettings, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.DefaultConciergeSettings(), nil
	}
	if err != nil {
		return domain.ConciergeSettings{}, fmt.Errorf("concierge settings: %w", err)
	}
	s := domain.DefaultConciergeSettings()
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return domain.ConciergeSettings{}, fmt.Errorf("concierge settings: %w", err)
	}
	if s.Policies == nil {
		s.Policies = map[string]string{}
	}
	if s.Keywords == nil {
		s.Keywords = []string{}
	}
	return s, nil
}

func setQueue(ctx context.Context, tx *sql.Tx, id, shop, queue string) error {
	return exec(ctx, tx, `UPDATE concierge_conversations SET queue = ? WHERE conversation_id = ? AND shop_id = ?`, queue, id, shop)
}

// turn records a turn of the conversation and keeps the last maxTurns.
func turn(ctx context.Context, tx *sql.Tx, shop, id string, e *projections.DecodedEvent, role string, unanswered bool, at time.Time) error {
	if err := exec(ctx, tx, `INSERT INTO concierge_turns (shop_id, conversation_id, position, role, unanswered, at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (conversation_id, position) DO NOTHING`, shop, id, int64(e.Position), role, unanswered, at.UnixMicro()); err != nil {
		return fmt.Errorf("conversation turn: %w", err)
	}
	return exec(ctx, tx, `DELETE FROM concierge_turns WHERE conversation_id = ? AND position NOT IN
		(SELECT position FROM concierge_turns WHERE conversation_id = ? ORDER BY position DESC LIMIT ?)`, id, id, maxTurns)
}

// querier is a transaction or the store's read pool.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// turns returns a conversation's last turns before the log position
// before, oldest first, without texts.
func turns(ctx context.Context, tx querier, id string, before int64) ([]concierge.Message, error) {
	rows, err := tx.QueryContext(ctx, `SELECT role, unanswered, at FROM concierge_turns WHERE conversation_id = ? AND position < ?
		ORDER BY position`, id, before)
	if err != nil {
		return nil, fmt.Errorf("conversation turns: %w", err)
	}
	defer rows.Close()
	var out []concierge.Message
	for rows.Next() {
		var m concierge.Message
		var at int64
		if err := rows.Scan(&m.Role, &m.Unanswered, &at); err != nil {
			return nil, fmt.Errorf("conversation turns: %w", err)
		}
		m.At = readmodel.Time(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

func skip(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case domain.ErrorCode(err) == domain.CodeNotFound, domain.ErrorCode(err) == domain.CodeInvalid:
		return nil
	}
	return fmt.Errorf("concierge %s: %w", what, err)
}

func exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	_, err := tx.ExecContext(ctx, query, args...)
	return err
}

// Queries reads the reactor's settings table (GET /api/v1/shop).
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Settings returns a shop's concierge settings (the defaults until it
// configures them).
func (q *Queries) Settings(ctx context.Context, shop string) (domain.ConciergeSettings, error) {
	var raw string
	err := q.db.QueryRowContext(ctx, `SELECT settings FROM concierge_settings WHERE shop_id = ?`, shop).Scan(&raw)
	return decodeSettings(raw, err)
}
