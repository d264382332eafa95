package adminui

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
)

// The conversations page: the customers' WhatsApp conversations (GET
// /api/v1/conversations), the human queue first (filter[queue]=human: the
// conversations waiting for a person), one conversation with its messages,
// and the team's actions: reply (sent through the messaging platform),
// assign to the signed-in user (their e-mail) or unassign, close. Each is
// the API's endpoint, called as the user.

func (ui *UI) conversationPages() []shopPage {
	return []shopPage{
		{"conversations", http.MethodGet, "conversations", ui.conversationsPage},
		{"conversations/{conversation_id}", http.MethodGet, "conversations", ui.conversationPage},
		{"conversations/{conversation_id}/reply", http.MethodPost, "conversations", ui.replyToConversation},
		{"conversations/{conversation_id}/assign", http.MethodPost, "conversations", ui.assignConversation},
		{"conversations/{conversation_id}/close", http.MethodPost, "conversations", ui.closeConversation},
	}
}

// conversationViews are the list's views: a queue of the API's, or "all".
func conversationViews() []string { return append(domain.ConversationQueues(), "all") }

func (ui *UI) conversationsPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	q := r.URL.Query()
	view := q.Get("queue")
	if view == "" {
		view = domain.QueueHuman
	}
	if !slices.Contains(conversationViews(), view) {
		ui.fail(w, r, domain.NotFound("queue"))
		return
	}
	api := url.Values{"limit": {"25"}}
	if view != "all" {
		api.Set("filter[queue]", view)
	}
	if cur := q.Get("cursor"); cur != "" {
		api.Set("cursor", cur)
	}
	list, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/conversations?"+api.Encode(), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	next := ""
	if cur := nextCursor(list); cur != "" {
		next = c.Base() + "/conversations?" + url.Values{"queue": {view}, "cursor": {cur}}.Encode()
	}
	status := http.StatusOK
	if !list.OK() {
		status = list.Status
	}
	ui.renderShop(w, r, c, status, "conversations", "Conversations", page{Notice: notice(r), Data: map[string]any{
		"Conversations": list.List(), "ListError": list.Problem(), "View": view, "Views": conversationViews(), "Next": next}})
}

func (ui *UI) conversationPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showConversation(w, r, c, http.StatusOK, page{Notice: notice(r)}, "")
}

// showConversation renders one conversation with its messages (the
// latest 100, oldest first, or the 100 before the `earlier` cursor); reply is the reply form's text to keep
// after a refusal.
func (ui *UI) showConversation(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, reply string) {
	id := mux.Vars(r)["conversation_id"]
	path := "/api/v1/conversations/" + url.PathEscape(id)
	cv, err := ui.call(r, c.as(), http.MethodGet, path, nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if cv.Status == http.StatusNotFound {
		ui.fail(w, r, domain.NotFound("conversation"))
		return
	}
	if !cv.OK() {
		ui.renderShop(w, r, c, cv.Status, "error", "Conversation", page{Error: cv.Problem()})
		return
	}
	q := url.Values{"sort": {"-created_at"}, "limit": {"100"}}
	if cur := r.URL.Query().Get("earlier"); cur != "" && r.Method == http.MethodGet {
		q.Set("cursor", cur)
	}
	msgs, err := ui.call(r, c.as(), http.MethodGet, path+"/messages?"+q.Encode(), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	thread := msgs.List()
	slices.Reverse(thread)
	assignee, _ := cv.Attrs()["assignee"].(string)
	p.Data = map[string]any{"Conversation": cv.Data(), "Messages": thread, "MessagesError": msgs.Problem(), "Reply": reply,
		"Mine": assignee != "" && assignee == c.User.Email, "Earlier": nextCursor(msgs), "Paged": q.Has("cursor")}
	ui.renderShop(w, r, c, status, "conversation", "Conversation", p)
}

func (ui *UI) replyToConversation(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["conversation_id"]
	text := r.PostForm.Get("text")
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/conversations/"+url.PathEscape(id)+"/messages",
		map[string]any{"text": text}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if a.Status == http.StatusNotFound {
		ui.fail(w, r, domain.NotFound("conversation"))
		return
	}
	if !a.OK() {
		ui.showConversation(w, r, c, a.Status, page{Error: "The reply was not sent: " + a.Problem()}, text)
		return
	}
	backAt(w, r, c, "conversations/"+url.PathEscape(id), "Your reply is queued: it goes out through WhatsApp.", a)
}

// assignConversation gives the conversation to the signed-in user
// (their e-mail is the assignee), or unassigns it (unassign=yes).
func (ui *UI) assignConversation(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["conversation_id"]
	assignee, msg := c.User.Email, "The conversation is assigned to you."
	if r.PostForm.Get("unassign") == "yes" {
		assignee, msg = "", "The conversation is unassigned."
	}
	ui.conversationAction(w, r, c, id, "assign", map[string]any{"assignee": assignee}, msg)
}

func (ui *UI) closeConversation(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["conversation_id"]
	ui.conversationAction(w, r, c, id, "close", nil,
		"The conversation is closed; the customer's next message opens it again.")
}

// conversationAction posts body to the conversation's action and goes
// back to the conversation with msg, or shows the API's refusal.
func (ui *UI) conversationAction(w http.ResponseWriter, r *http.Request, c *shopCtx, id, action string, body map[string]any, msg string) {
	var b any
	if body != nil {
		b = body
	}
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/conversations/"+url.PathEscape(id)+"/"+action, b, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if a.Status == http.StatusNotFound {
		ui.fail(w, r, domain.NotFound("conversation"))
		return
	}
	if !a.OK() {
		ui.showConversation(w, r, c, a.Status, page{Error: a.Problem()}, "")
		return
	}
	backAt(w, r, c, "conversations/"+url.PathEscape(id), msg, a)
}
