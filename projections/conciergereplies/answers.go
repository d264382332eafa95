package conciergereplies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// Answers is the answering job: it takes the messages the reactor queued
// (concierge_pending), oldest first, reads each one's event again from the
// log, asks the answerer with no transaction open (a provider may take
// seconds) and records the answer or the escalation through the reactor's
// commands, then drops the message from the queue. A message whose
// conversation left the ai_concierge queue meanwhile (escalated, closed),
// whose customer was erased or which is older than the reply window is
// dropped unanswered. A failure of our own (a command, the store) leaves
// the message queued for the next pass.
type Answers struct {
	// DB is the read-model store's read pool; Write runs fn in a write
	// transaction of that store.
	DB    *sql.DB
	Write func(ctx context.Context, fn func(tx *sql.Tx) error) error
	// Log and Codec read the messages' events again.
	Log    eventlog.Log
	Codec  *envelope.Codec
	Config Config
	Logger zerolog.Logger
	wake   chan struct{}
}

// NewAnswers returns the job; Config is the reactor's (its Wake should be
// the job's Wake).
func NewAnswers(a Answers) *Answers {
	a.wake = make(chan struct{}, 1)
	if a.Config.Now == nil {
		a.Config.Now = time.Now
	}
	return &a
}

// Wake makes the job look at the queue now.
func (a *Answers) Wake() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run answers queued messages until ctx ends, looking at least every
// second.
func (a *Answers) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if _, err := a.Pass(ctx); err != nil && ctx.Err() == nil {
			a.Logger.Warn().Err(err).Msg("concierge answers")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		case <-t.C:
		}
	}
}

// pending is a queued message.
type pending struct {
	eventID, shop, conversation string
	position                    int64
}

// Pass handles the queued messages (up to 32, one per conversation, so
// that an escalation is seen before the conversation's next message) and
// tells how many it handled.
func (a *Answers) Pass(ctx context.Context) (int, error) {
	rows, err := a.DB.QueryContext(ctx, `SELECT event_id, position, shop_id, conversation_id FROM concierge_pending
		ORDER BY position LIMIT 32`)
	if err != nil {
		return 0, fmt.Errorf("concierge queue: %w", err)
	}
	var list []pending
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.eventID, &p.position, &p.shop, &p.conversation); err != nil {
			rows.Close()
			return 0, fmt.Errorf("concierge queue: %w", err)
		}
		list = append(list, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("concierge queue: %w", err)
	}
	seen := map[string]bool{}
	done := 0
	for _, p := range list {
		if seen[p.conversation] {
			continue
		}
		seen[p.conversation] = true
		if err := a.answer(ctx, p); err != nil {
			return done, err
		}
		if err := a.Write(ctx, func(tx *sql.Tx) error {
			return exec(ctx, tx, `DELETE FROM concierge_pending WHERE event_id = ?`, p.eventID)
		}); err != nil {
			return done, fmt.Errorf("concierge queue: %w", err)
		}
		done++
	}
	return done, nil
}

// answer answers or escalates one queued message (nil: handled, or
// dropped).
func (a *Answers) answer(ctx context.Context, p pending) error {
	evs, err := a.Log.ReadAll(ctx, uint64(p.position)-1, 1)
	if err != nil {
		return fmt.Errorf("read the message's event: %w", err)
	}
	if len(evs) == 0 || evs[0].ID.String() != p.eventID {
		return nil // not in the log any more: nothing to answer
	}
	d, err := a.Codec.Decode(ctx, &evs[0])
	if errors.Is(err, envelope.ErrShopErased) {
		return nil
	}
	if err != nil {
		return err
	}
	ev, ok := d.Event.(*domain.WhatsAppMessageReceived)
	if !ok || len(d.Redacted) > 0 || ev.Text == nil {
		return nil // an erased customer's: nothing to answer
	}
	if a.Config.Now().Sub(ev.SentAt) >= domain.CustomerServiceWindow {
		return nil
	}
	var queue string
	err = a.DB.QueryRowContext(ctx, `SELECT queue FROM concierge_conversations WHERE conversation_id = ?`, p.conversation).Scan(&queue)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("conversation queue: %w", err)
	}
	if queue != domain.QueueAIConcierge {
		return nil // a human has it now
	}
	settings, err := loadSettings(ctx, a.DB, ev.ShopID)
	if err != nil {
		return err
	}
	q, err := question(ctx, a.DB, ev, settings)
	if err != nil {
		return err
	}
	if q.History, err = turns(ctx, a.DB, p.conversation, p.position); err != nil {
		return err
	}
	rules := concierge.Rules{MerchantKeywords: settings.Keywords, Threshold: settings.Threshold}
	if rules.Threshold == 0 {
		rules.Threshold = math.SmallestNonzeroFloat64 // the merchant's 0: every answer with a text goes
	}
	facts := domain.ConversationFacts{ID: p.conversation, ShopID: ev.ShopID, CustomerID: ev.CustomerID, WhatsAppID: ev.From,
		LastInboundAt: ev.SentAt}
	r := reactor{cfg: a.Config}
	escalate := func(reason string) error {
		if err := a.Write(ctx, func(tx *sql.Tx) error { return setQueue(ctx, tx, facts.ID, facts.ShopID, domain.QueueHuman) }); err != nil {
			return err
		}
		return r.handOver(ctx, facts, p.eventID, uint64(p.position), reason)
	}
	actx, cancel := context.WithTimeout(ctx, AnswerTimeout)
	ans, err := a.Config.Answerer.Answer(actx, q)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: answered at the next start
		}
		code := concierge.CodeTimeout
		var pe *concierge.ProviderError
		if errors.As(err, &pe) {
			code = pe.Code
		}
		return escalate(ReasonAnswererFailed + ":" + code)
	}
	if esc, reason := rules.Decide(q, ans); esc {
		return escalate(reason)
	}
	err = a.Config.Reply(ctx, facts, p.eventID, ans.Text, domain.ConciergeAnswered{InboundMessageID: ev.MessageID,
		Answerer: a.Config.AnswererName, Confidence: ans.Confidence, Sources: ans.Sources, Unanswered: ans.Unanswered})
	if domain.ErrorCode(err) == domain.CodeInvalid {
		// The reply rules refuse the text (longer than WhatsApp allows).
		return escalate(concierge.ReasonInvalidOutput)
	}
	return skip(err, "answer")
}
