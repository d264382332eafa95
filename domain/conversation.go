package domain

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Conversations (issue 18, point 3): the inbound side of messaging. A
// conversation is one customer's thread with a shop on WhatsApp; its id
// derives from the shop and the customer's messaging identity (the
// customer id CustomerIDFromPhone gives), so every inbound message of one
// person reaches the same conversation without a lookup. Inbound messages
// (WhatsAppMessageReceived) open and reopen it; the events here are what
// the service decides about it: a human reply, an assignment, a close, a
// move to another queue (the concierge's escalations).

// PrefixConversation is the id prefix of a conversation.
const PrefixConversation = "cnv_"

// QueueClosed is the queue of a closed conversation (the next inbound
// message reopens it in the shop's inbound queue).
const QueueClosed = "closed"

// ConversationQueues lists the queues a conversation can be in.
func ConversationQueues() []string { return []string{QueueAIConcierge, QueueHuman, QueueClosed} }

// Conversation limits.
const (
	// MaxReplyText is the longest human reply, in characters (the
	// WhatsApp Cloud API's text body limit).
	MaxReplyText = 4096
	// MaxAssignee is the longest assignee (a user's or agent's name or
	// id), in characters.
	MaxAssignee = 200
	// maxQueueReason bounds a queue move's reason.
	maxQueueReason = 1000
)

// CustomerServiceWindow is how long after a customer's last message a
// business may answer with free text (WhatsApp's customer-service window);
// outside it only a template message may be sent.
const CustomerServiceWindow = 24 * time.Hour

// ConversationID derives the conversation of a customer of a shop (the
// customer id of its messaging identity, CustomerIDFromPhone).
func ConversationID(shopID, customerID string) string {
	return IDFromExternal(PrefixConversation, "conversation", shopID, customerID)
}

// ConversationStream is the stream of a conversation's decisions.
func ConversationStream(conversationID string) string { return "conversation-" + conversationID }

// ConversationReplyMessageID derives the message id of a human reply from
// the reply event's id, so a retried command names the same message.
func ConversationReplyMessageID(conversationID, replyID string) string {
	return IDFromExternal(PrefixMessage, "conversation_reply", conversationID, replyID)
}

func conversationEvents() []EventSpec {
	return []EventSpec{
		{Name: "ConversationReplyRequested", Version: 1, New: func() Event { return &ConversationReplyRequested{} }},
		{Name: "ConversationAssigned", Version: 1, New: func() Event { return &ConversationAssigned{} }},
		{Name: "ConversationClosed", Version: 1, New: func() Event { return &ConversationClosed{} }},
		{Name: "ConversationQueued", Version: 1, New: func() Event { return &ConversationQueued{} }},
	}
}

// ConversationReplyRequested: a member of the merchant's team answered a
// conversation; the sending side sends Text to To as a WhatsApp text
// message under MessageID (channel whatsapp, intent transactional). To
// (the customer's WhatsApp identity) and Text are personal data, sealed
// with the customer's key.
type ConversationReplyRequested struct {
	ConversationID string    `json:"conversation_id"`
	ShopID         string    `json:"shop_id"`
	CustomerID     string    `json:"customer_id"`
	MessageID      string    `json:"message_id"`
	To             string    `json:"to"`
	Text           string    `json:"text"`
	Author         string    `json:"author,omitempty"`
	RequestedAt    time.Time `json:"requested_at"`
}

// EventType implements Event.
func (ConversationReplyRequested) EventType() string { return "ConversationReplyRequested" }

// Subject implements Personal.
func (e ConversationReplyRequested) Subject() string { return e.CustomerID }

// PersonalFields implements Personal.
func (ConversationReplyRequested) PersonalFields() []string { return []string{"to", "text"} }

// ConversationAssigned: the conversation was given to Assignee (a user's
// or an agent's name or id; "" unassigns it).
type ConversationAssigned struct {
	ConversationID string    `json:"conversation_id"`
	ShopID         string    `json:"shop_id"`
	Assignee       string    `json:"assignee"`
	AssignedAt     time.Time `json:"assigned_at"`
}

// EventType implements Event.
func (ConversationAssigned) EventType() string { return "ConversationAssigned" }

// ConversationClosed: the conversation was closed; the customer's next
// message reopens it.
type ConversationClosed struct {
	ConversationID string    `json:"conversation_id"`
	ShopID         string    `json:"shop_id"`
	ClosedAt       time.Time `json:"closed_at"`
}

// EventType implements Event.
func (ConversationClosed) EventType() string { return "ConversationClosed" }

// ConversationQueued: the conversation moved to Queue (ai_concierge or
// human) for Reason (an escalation rule, low confidence…). Reason is
// written by the service and carries no personal data.
type ConversationQueued struct {
	ConversationID string    `json:"conversation_id"`
	ShopID         string    `json:"shop_id"`
	Queue          string    `json:"queue"`
	Reason         string    `json:"reason"`
	QueuedAt       time.Time `json:"queued_at"`
}

// EventType implements Event.
func (ConversationQueued) EventType() string { return "ConversationQueued" }

// ConversationFacts are what the read model knows of a conversation when
// a decision is asked of it: the commands take them from the caller, who
// read them from the conversations read model (404 when absent there).
type ConversationFacts struct {
	ID, ShopID, CustomerID string
	// WhatsAppID is the customer's WhatsApp identity ("" once erased).
	WhatsAppID string
	// LastInboundAt is when the customer's last message was sent.
	LastInboundAt time.Time
}

// ConversationReply decides a human reply of author to the conversation:
// text is 1 to MaxReplyText characters of valid UTF-8, and the customer's
// last message is less than CustomerServiceWindow old at now.
func ConversationReply(c ConversationFacts, replyID, text, author string, now time.Time) (*ConversationReplyRequested, error) {
	switch n := utf8.RuneCountInString(text); {
	case !utf8.ValidString(text) || strings.TrimSpace(text) == "":
		return nil, Invalid("text", "text is required: 1 to %d characters of text", MaxReplyText)
	case n > MaxReplyText:
		return nil, Invalid("text", "text has %d characters, at most %d allowed", n, MaxReplyText)
	}
	if c.WhatsAppID == "" {
		return nil, Invalid("text", "the customer was erased: the conversation cannot be answered")
	}
	if c.LastInboundAt.IsZero() || now.Sub(c.LastInboundAt) >= CustomerServiceWindow {
		return nil, Invalid("text", "the customer's last message is more than 24 hours old: outside WhatsApp's customer-service "+
			"window only a template message may be sent (a campaign or a journey)")
	}
	return &ConversationReplyRequested{ConversationID: c.ID, ShopID: c.ShopID, CustomerID: c.CustomerID,
		MessageID: ConversationReplyMessageID(c.ID, replyID), To: c.WhatsAppID, Text: text, Author: author,
		RequestedAt: now.UTC()}, nil
}

// AssignConversation decides giving the conversation to assignee (at most
// MaxAssignee characters; "" unassigns it).
func AssignConversation(c ConversationFacts, assignee string, now time.Time) (*ConversationAssigned, error) {
	assignee = strings.TrimSpace(assignee)
	if !utf8.ValidString(assignee) || utf8.RuneCountInString(assignee) > MaxAssignee || strings.ContainsAny(assignee, "\r\n\x00") {
		return nil, Invalid("assignee", "assignee must be at most %d characters on one line", MaxAssignee)
	}
	return &ConversationAssigned{ConversationID: c.ID, ShopID: c.ShopID, Assignee: assignee, AssignedAt: now.UTC()}, nil
}

// CloseConversation decides closing the conversation.
func CloseConversation(c ConversationFacts, now time.Time) *ConversationClosed {
	return &ConversationClosed{ConversationID: c.ID, ShopID: c.ShopID, ClosedAt: now.UTC()}
}

// QueueConversation decides moving the conversation to queue (ai_concierge
// or human) for reason.
func QueueConversation(c ConversationFacts, queue, reason string, now time.Time) (*ConversationQueued, error) {
	if queue != QueueAIConcierge && queue != QueueHuman {
		return nil, Invalid("queue", "queue is %s or %s", QueueAIConcierge, QueueHuman)
	}
	if err := required("reason", reason, maxQueueReason); err != nil {
		return nil, err
	}
	return &ConversationQueued{ConversationID: c.ID, ShopID: c.ShopID, Queue: queue, Reason: reason, QueuedAt: now.UTC()}, nil
}
