package writeapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/conversations"
	"github.com/cgp-platform/cgp/readapi"
)

// Conversations serves the conversation writes (issue 18, point 3): a
// human reply, an assignment, a close. They act on the customers'
// conversations: customers:write.
type Conversations struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	q    *conversations.Queries
	wait readapi.Waiter
}

// NewConversations returns the conversation write handlers. idem wraps
// every POST in Idempotency-Key handling; q and wait find the
// conversation (after the position the request waits for) and answer a
// change with the conversation once the read model caught up.
func NewConversations(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *conversations.Queries,
	wait readapi.Waiter) *Conversations {
	return &Conversations{cmds: cmds, auth: a, idem: idem, q: q, wait: wait}
}

// Routes registers the writes (beta).
func (c *Conversations) Routes(r *mux.Router) {
	write := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(c.auth.Require(domain.ScopeCustomersWrite, c.idem(h)))
	}
	r.Handle("/api/v1/conversations/{id}/messages", write(c.handleReply)).Methods(http.MethodPost)
	r.Handle("/api/v1/conversations/{id}/assign", write(c.handleAssign)).Methods(http.MethodPost)
	r.Handle("/api/v1/conversations/{id}/close", write(c.handleClose)).Methods(http.MethodPost)
}

// conversation reads the caller's conversation named in the path, after
// the position the request waits for; another shop's is not found.
func (c *Conversations) conversation(r *http.Request) (*conversations.Conversation, error) {
	p, _ := auth.FromContext(r.Context())
	if err := readapi.WaitForPosition(r, c.wait, conversations.Name); err != nil {
		return nil, err
	}
	return c.q.Conversation(r.Context(), p.ShopID, mux.Vars(r)["id"])
}

type replyBody struct {
	Text string `json:"text"`
}

// handleReply queues a human reply, sent as a WhatsApp text message
// within the customer-service window, and answers 202 with the message
// (status queued).
func (c *Conversations) handleReply(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body replyBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cv, err := c.conversation(r)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, ev, err := c.cmds.ReplyToConversation(r.Context(), commands.ReplyToConversation{Conversation: cv.Facts(), Text: body.Text,
		Author: p.TokenID}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteResource(w, r, http.StatusAccepted, readapi.ConversationMessageResource(&conversations.Message{ID: ev.MessageID,
		ConversationID: ev.ConversationID, CustomerID: ev.CustomerID, Direction: conversations.DirectionOutbound,
		Author: conversations.AuthorHuman, Type: "text", Text: ev.Text, Status: conversations.StatusQueued, At: ev.RequestedAt}))
}

type assignBody struct {
	Assignee *string `json:"assignee"`
}

// handleAssign gives the conversation to an assignee ("" or null
// unassigns it) and answers 200 with the conversation.
func (c *Conversations) handleAssign(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body assignBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cv, err := c.conversation(r)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	assignee := ""
	if body.Assignee != nil {
		assignee = *body.Assignee
	}
	res, err := c.cmds.AssignConversation(r.Context(), commands.AssignConversation{Conversation: cv.Facts(), Assignee: assignee}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	c.serve(w, r, cv, res, func(s *conversations.Conversation) { s.Assignee = assignee })
}

// handleClose closes the conversation (the customer's next message
// reopens it) and answers 200 with the conversation. The body is
// optional.
func (c *Conversations) handleClose(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body struct{}
	if err := decodeOptionalData(w, r, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cv, err := c.conversation(r)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := c.cmds.CloseConversation(r.Context(), commands.CloseConversation{Conversation: cv.Facts()}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	c.serve(w, r, cv, res, func(s *conversations.Conversation) { s.Queue, s.UnreadCount = domain.QueueClosed, 0 })
}

// serve answers a change with the conversation read back once the read
// model reached the command (bounded), else with pending applied.
func (c *Conversations) serve(w http.ResponseWriter, r *http.Request, cv *conversations.Conversation, res commands.Result,
	pending func(*conversations.Conversation)) {
	readapi.ServeWritten(w, r, c.wait, conversations.Name, res.Position, http.StatusOK,
		func(ctx context.Context) (*conversations.Conversation, error) {
			return c.q.Conversation(ctx, cv.ShopID, cv.ID)
		},
		pending, readapi.ConversationResource)
}
