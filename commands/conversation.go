package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The conversation commands take the conversation as the conversations
// read model shows it (domain.ConversationFacts): its inbound messages are
// recorded on their own streams, so the read model is where the
// customer's identity and last message meet. Each appends one event to
// the conversation's stream.

// ReplyToConversation asks for a human reply to a conversation, sent as a
// WhatsApp text message by the sending side.
type ReplyToConversation struct {
	Conversation domain.ConversationFacts
	Text, Author string
}

// ReplyToConversation runs the command; the result's ID is the reply's
// message id.
func (h *Handler) ReplyToConversation(ctx context.Context, cmd ReplyToConversation, meta Meta) (Result, *domain.ConversationReplyRequested, error) {
	id := newEventID()
	ev, err := domain.ConversationReply(cmd.Conversation, id.String(), cmd.Text, cmd.Author, h.now())
	if err != nil {
		return Result{}, nil, err
	}
	res, err := h.appendOne(ctx, ev.ShopID, domain.ConversationStream(ev.ConversationID), eventlog.Any(), id, ev, h.now(), meta)
	res.ID = ev.MessageID
	return res, ev, err
}

// AssignConversation gives a conversation to an assignee.
type AssignConversation struct {
	Conversation domain.ConversationFacts
	Assignee     string
}

// AssignConversation runs the command.
func (h *Handler) AssignConversation(ctx context.Context, cmd AssignConversation, meta Meta) (Result, error) {
	ev, err := domain.AssignConversation(cmd.Conversation, cmd.Assignee, h.now())
	if err != nil {
		return Result{}, err
	}
	return h.conversationEvent(ctx, cmd.Conversation, ev, meta)
}

// CloseConversation closes a conversation.
type CloseConversation struct {
	Conversation domain.ConversationFacts
}

// CloseConversation runs the command.
func (h *Handler) CloseConversation(ctx context.Context, cmd CloseConversation, meta Meta) (Result, error) {
	return h.conversationEvent(ctx, cmd.Conversation, domain.CloseConversation(cmd.Conversation, h.now()), meta)
}

// QueueConversation moves a conversation to a queue (the AI concierge's
// escalations).
type QueueConversation struct {
	Conversation  domain.ConversationFacts
	Queue, Reason string
}

// QueueConversation runs the command.
func (h *Handler) QueueConversation(ctx context.Context, cmd QueueConversation, meta Meta) (Result, error) {
	ev, err := domain.QueueConversation(cmd.Conversation, cmd.Queue, cmd.Reason, h.now())
	if err != nil {
		return Result{}, err
	}
	return h.conversationEvent(ctx, cmd.Conversation, ev, meta)
}

func (h *Handler) conversationEvent(ctx context.Context, c domain.ConversationFacts, ev domain.Event, meta Meta) (Result, error) {
	res, err := h.appendOne(ctx, c.ShopID, domain.ConversationStream(c.ID), eventlog.Any(), newEventID(), ev, h.now(), meta)
	res.ID = c.ID
	return res, err
}
