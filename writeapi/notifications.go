package writeapi

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/notifications"
	"github.com/cgp-platform/cgp/readapi"
)

// Notifications serves the notification writes: marking one read.
type Notifications struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	q    *notifications.Queries
}

// NewNotifications returns the notification write handlers.
func NewNotifications(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler,
	q *notifications.Queries) *Notifications {
	return &Notifications{cmds: cmds, auth: a, idem: idem, q: q}
}

// Routes registers POST /api/v1/notifications/{id}/read and POST
// /api/v1/notifications/read (all of them). Marking read takes the
// reading scope: it is the reader's own state, no business data.
func (n *Notifications) Routes(r *mux.Router) {
	r.Handle("/api/v1/notifications/{id}/read", httpapi.Beta(n.auth.Require(readapi.ScopeNotificationsRead,
		n.idem(http.HandlerFunc(n.handleRead))))).Methods(http.MethodPost)
	r.Handle("/api/v1/notifications/read", httpapi.Beta(n.auth.Require(readapi.ScopeNotificationsRead,
		n.idem(http.HandlerFunc(n.handleReadAll))))).Methods(http.MethodPost)
}

// maxReadAll bounds the notifications one "mark all read" marks (the
// oldest first; the rest stay unread and are counted in remaining).
const maxReadAll = 1000

// handleReadAll marks every unread notification of the shop read, each as
// its own command (the same as marking them one by one), and answers 200
// with how many it marked; more is true when it stopped at maxReadAll
// (call again).
func (n *Notifications) handleReadAll(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	marked := 0
	var last uint64
	var after *notifications.Key
	for marked < maxReadAll {
		page, next, err := n.q.List(r.Context(), notifications.Filter{ShopID: p.ShopID, Unread: "true", After: after, Limit: min(100, maxReadAll-marked)})
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		for _, found := range page {
			res, ev, err := n.cmds.MarkNotificationRead(r.Context(), commands.MarkNotificationRead{ShopID: p.ShopID, NotificationID: found.ID,
				AnomalyID: found.AnomalyID}, meta(r, p))
			if err != nil {
				httpapi.WriteError(w, r, err)
				return
			}
			if ev != nil {
				marked++
				last = max(last, uint64(res.Position))
			}
		}
		if next == nil || len(page) == 0 {
			break
		}
		after = next
	}
	if last > 0 {
		w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(last, 10))
	}
	httpapi.WriteResource(w, r, http.StatusOK, httpapi.Resource{ID: p.ShopID, Type: "notifications_read",
		Attributes: map[string]any{"marked": marked, "more": marked == maxReadAll}})
}

// handleRead marks a notification read (no body; reading one read already
// changes nothing) and answers 200 with it.
func (n *Notifications) handleRead(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	found, err := n.q.Get(r.Context(), p.ShopID, mux.Vars(r)["id"])
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, ev, err := n.cmds.MarkNotificationRead(r.Context(), commands.MarkNotificationRead{ShopID: p.ShopID, NotificationID: found.ID,
		AnomalyID: found.AnomalyID}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if ev != nil {
		found.ReadAt = ev.ReadAt
		w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	}
	httpapi.WriteResource(w, r, http.StatusOK, readapi.NotificationResource(found))
}
