package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/conversations"
)

// Conversations serves the conversation reads (issue 18, point 3): the
// merchant's team's inbox of the customers' WhatsApp conversations. They
// hold the customers' messages: customers:read.
type Conversations struct {
	q       *conversations.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewConversations returns the conversation read handlers.
func NewConversations(q *conversations.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Conversations {
	return &Conversations{q: q, auth: a, cursors: cursors, wait: wait}
}

// ConversationListSpec is the allow-list of GET /api/v1/conversations:
// created_at sorts in the order they were opened.
var ConversationListSpec = httpapi.ListSpec{
	Resource: "conversations",
	Filters: map[string]httpapi.FilterKind{"queue": httpapi.EnumFilter(domain.ConversationQueues()...),
		"customer_id": httpapi.StringFilter()},
	Sorts:       []string{"created_at"},
	DefaultSort: "-created_at",
}

// conversationMessageListSpec is the allow-list of a conversation's
// messages: oldest first by default, like a thread.
func conversationMessageListSpec(id string) httpapi.ListSpec {
	return httpapi.ListSpec{Resource: "conversation_messages:" + id, Sorts: []string{"created_at"}, DefaultSort: "created_at"}
}

// Routes registers the reads (beta).
func (c *Conversations) Routes(r *mux.Router) {
	read := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(httpapi.Compressed(c.auth.Require(domain.ScopeCustomersRead, h)))
	}
	r.Handle("/api/v1/conversations", read(c.handleList)).Methods(http.MethodGet)
	r.Handle("/api/v1/conversations/{id}", read(c.handleGet)).Methods(http.MethodGet)
	r.Handle("/api/v1/conversations/{id}/messages", read(c.handleMessages)).Methods(http.MethodGet)
}

func (c *Conversations) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, c.cursors, c.wait, conversations.Name, ConversationListSpec,
		func(params httpapi.ListParams, after *conversations.Key) ([]httpapi.Resource, *conversations.Key, error) {
			rows, next, err := c.q.Conversations(r.Context(), conversations.ListQuery{Shop: p.ShopID, Queue: params.Filters["queue"],
				Customer: params.Filters["customer_id"], Desc: params.Sort.Desc, After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = ConversationResource(&rows[i])
			}
			return items, next, err
		})
}

// handleGet answers one conversation of the caller's shop; another
// shop's is not found.
func (c *Conversations) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, c.wait, conversations.Name, p.ShopID, func(ctx context.Context, shop string) (*conversations.Conversation, error) {
		return c.q.Conversation(ctx, shop, id)
	}, ConversationResource)
}

// handleMessages lists a conversation's messages, both directions; an
// unknown conversation (or another shop's) is not found.
func (c *Conversations) handleMessages(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeKeyset(w, r, c.cursors, c.wait, conversations.Name, conversationMessageListSpec(id),
		func(params httpapi.ListParams, after *conversations.Key) ([]httpapi.Resource, *conversations.Key, error) {
			if _, err := c.q.Conversation(r.Context(), p.ShopID, id); err != nil {
				return nil, nil, err
			}
			rows, next, err := c.q.Messages(r.Context(), conversations.MessageQuery{Shop: p.ShopID, Conversation: id,
				Desc: params.Sort.Desc, After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = ConversationMessageResource(&rows[i])
			}
			return items, next, err
		})
}

// ConversationAttributes are a conversation's attributes.
type ConversationAttributes struct {
	CustomerID string `json:"customer_id"`
	// Queue is ai_concierge, human or closed.
	Queue string `json:"queue"`
	// Assignee is null while nobody is assigned.
	Assignee      *string    `json:"assignee"`
	LastMessageAt time.Time  `json:"last_message_at"`
	LastInboundAt *time.Time `json:"last_inbound_at"`
	// ReplyWindowEndsAt is when the customer-service window closes (a
	// free-text reply is refused from then on); null without an inbound
	// message.
	ReplyWindowEndsAt *time.Time `json:"reply_window_ends_at"`
	UnreadCount       int        `json:"unread_count"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// ConversationResource renders a conversation.
func ConversationResource(c *conversations.Conversation) httpapi.Resource {
	a := ConversationAttributes{CustomerID: c.CustomerID, Queue: c.Queue, Assignee: optional(c.Assignee), LastMessageAt: c.LastMessageAt,
		LastInboundAt: zeroTimeAsNull(c.LastInboundAt), UnreadCount: c.UnreadCount, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if !c.LastInboundAt.IsZero() {
		a.ReplyWindowEndsAt = zeroTimeAsNull(c.LastInboundAt.Add(domain.CustomerServiceWindow))
	}
	return httpapi.Resource{ID: c.ID, Type: "conversation", Attributes: a}
}

// ConversationMessageAttributes are a conversation message's attributes.
type ConversationMessageAttributes struct {
	ConversationID string `json:"conversation_id"`
	// CustomerID is the conversation's customer (an erasure's clean-up
	// finds the idempotent answers naming it).
	CustomerID string `json:"customer_id"`
	// Direction is inbound (from the customer) or outbound (to them);
	// Author is customer, human or ai_concierge.
	Direction string `json:"direction"`
	Author    string `json:"author"`
	// Type is the WhatsApp message type (text, image…).
	Type string `json:"type"`
	// Text is null when the message has none or it was erased.
	Text     *string `json:"text"`
	Redacted bool    `json:"redacted"`
	// Status of an outbound message: queued, then sent, failed or
	// skipped (its delivery statuses are in the message log); null for
	// an inbound one.
	Status *string   `json:"status"`
	At     time.Time `json:"at"`
}

// ConversationMessageResource renders a conversation message.
func ConversationMessageResource(m *conversations.Message) httpapi.Resource {
	return httpapi.Resource{ID: m.ID, Type: "conversation_message", Attributes: ConversationMessageAttributes{
		ConversationID: m.ConversationID, CustomerID: m.CustomerID, Direction: m.Direction, Author: m.Author, Type: m.Type, Text: optional(m.Text),
		Redacted: m.Redacted, Status: optional(m.Status), At: m.At}}
}

// ConversationPath is the path of a conversation.
func ConversationPath(id string) string { return "/api/v1/conversations/" + id }
