package commands

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// ConfigureConcierge edits a shop's concierge settings (PATCH
// /api/v1/shop, member concierge).
type ConfigureConcierge struct {
	ShopID string
	Patch  domain.ConciergeSettingsPatch
}

// ConfigureConcierge runs the command against the settings' stream and
// returns the settings as they now are.
func (h *Handler) ConfigureConcierge(ctx context.Context, cmd ConfigureConcierge, meta Meta) (Result, *domain.ConciergeSettingsChanged, error) {
	var changed *domain.ConciergeSettingsChanged
	res, err := execute(ctx, h, cmd.ShopID, domain.ConciergeSettingsStream(cmd.ShopID),
		func() *domain.ConciergeSettingsAgg { return &domain.ConciergeSettingsAgg{} },
		func(a *domain.ConciergeSettingsAgg) (decision, error) {
			ev, err := a.Configure(cmd.ShopID, cmd.Patch, h.now())
			if err != nil {
				return decision{}, err
			}
			changed = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, changed, err
}

// AnswerConversation records the AI concierge's answer to an inbound
// message (the concierge reactor): a ConciergeAnswered and the
// ConversationReplyRequested that the sending side sends, both on the
// conversation's stream with ids derived from the inbound message's event
// id, so a redelivery or a rebuilt reactor appends nothing twice.
type AnswerConversation struct {
	Conversation domain.ConversationFacts
	// InboundEventID is the id of the WhatsAppMessageReceived answered.
	InboundEventID string
	// Text is the answer; Answered holds the rest (its ids, times and
	// conversation fields are filled in here).
	Text     string
	Answered domain.ConciergeAnswered
}

// AnswerConversation runs the command; the result's ID is the reply's
// message id. A text the reply rules refuse (too long, the window closed,
// an erased customer) is the domain's validation error.
func (h *Handler) AnswerConversation(ctx context.Context, cmd AnswerConversation, meta Meta) (Result, error) {
	now := h.now()
	c := cmd.Conversation
	reply, err := domain.ConversationReply(c, "concierge:"+cmd.InboundEventID, cmd.Text, domain.AuthorConcierge, now)
	if err != nil {
		return Result{}, err
	}
	answered := cmd.Answered
	answered.ConversationID, answered.ShopID, answered.CustomerID = c.ID, c.ShopID, c.CustomerID
	answered.ReplyMessageID, answered.AnsweredAt = reply.MessageID, now.UTC()
	if answered.Sources == nil {
		answered.Sources = []string{}
	}
	events := []struct {
		id uuid.UUID
		ev domain.Event
	}{
		{eventlog.DeterministicID("concierge_answered", cmd.InboundEventID), &answered},
		{eventlog.DeterministicID("concierge_reply", cmd.InboundEventID), reply},
	}
	data := make([]eventlog.EventData, len(events))
	for i, e := range events {
		if data[i], err = h.codec.Encode(ctx, e.id, c.ShopID, e.ev, now, meta.metadata()); err != nil {
			return Result{}, err
		}
	}
	stream := domain.ConversationStream(c.ID)
	res, err := h.log.Append(ctx, stream, eventlog.Any(), data...)
	if err != nil {
		return Result{}, fmt.Errorf("append to %s: %w", stream, err)
	}
	return Result{ID: reply.MessageID, Position: res.Position, Revision: res.NextExpectedRevision}, nil
}

// EscalateConversation moves a conversation to the human queue for an
// escalation reason (the concierge reactor), under an event id derived
// from the inbound message's event id.
type EscalateConversation struct {
	Conversation   domain.ConversationFacts
	InboundEventID string
	Reason         string
}

// EscalateConversation runs the command.
func (h *Handler) EscalateConversation(ctx context.Context, cmd EscalateConversation, meta Meta) (Result, error) {
	ev, err := domain.QueueConversation(cmd.Conversation, domain.QueueHuman, cmd.Reason, h.now())
	if err != nil {
		return Result{}, err
	}
	res, err := h.appendOne(ctx, ev.ShopID, domain.ConversationStream(ev.ConversationID), eventlog.Any(),
		eventlog.DeterministicID("concierge_escalated", cmd.InboundEventID), ev, h.now(), meta)
	res.ID = ev.ConversationID
	return res, err
}
