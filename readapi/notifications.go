package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/notifications"
)

// ScopeNotificationsRead is the scope of the in-app notifications: they
// are the shop's dashboard alerts (analytics:read, "dashboards"); the
// specification's catalogue has no scope of their own.
const ScopeNotificationsRead = domain.ScopeAnalyticsRead

// Notifications serves the merchant's in-app notifications.
type Notifications struct {
	q       *notifications.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewNotifications returns the notifications' read handlers.
func NewNotifications(q *notifications.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Notifications {
	return &Notifications{q: q, auth: a, cursors: cursors, wait: wait}
}

// NotificationListSpec is the allow-list of GET /api/v1/notifications
// (newest first).
var NotificationListSpec = httpapi.ListSpec{
	Resource: "notifications",
	Filters: map[string]httpapi.FilterKind{
		"severity": httpapi.EnumFilter(domain.Severities()...), "kind": httpapi.EnumFilter(domain.AnomalyKinds()...),
		"unread": httpapi.EnumFilter("true", "false"),
	},
	Sorts:       []string{"created_at"},
	DefaultSort: "-created_at",
}

// Routes registers the notification reads.
func (n *Notifications) Routes(r *mux.Router) {
	r.Handle("/api/v1/notifications", httpapi.Beta(n.auth.Require(ScopeNotificationsRead, http.HandlerFunc(n.handleList)))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/notifications/{id}", httpapi.Beta(n.auth.Require(ScopeNotificationsRead, http.HandlerFunc(n.handleGet)))).
		Methods(http.MethodGet)
}

func (n *Notifications) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeysetMeta(w, r, n.cursors, n.wait, notifications.Name, NotificationListSpec,
		func(params httpapi.ListParams, after *notifications.Key) ([]httpapi.Resource, *notifications.Key, error) {
			if !params.Sort.Desc {
				return nil, nil, domain.Invalid("sort", "notifications are listed newest first (sort=-created_at)")
			}
			f := params.Filters
			rows, next, err := n.q.List(r.Context(), notifications.Filter{ShopID: p.ShopID, Severity: f["severity"], Kind: f["kind"],
				Unread: f["unread"], After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = NotificationResource(&rows[i])
			}
			return items, next, err
		},
		func(ctx context.Context) (map[string]any, error) {
			unread, err := n.q.Unread(ctx, p.ShopID)
			return map[string]any{"unread_count": unread}, err
		})
}

func (n *Notifications) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, n.wait, notifications.Name, p.ShopID,
		func(ctx context.Context, shop string) (*notifications.Notification, error) {
			return n.q.Get(ctx, shop, id)
		},
		NotificationResource)
}

// NotificationAttributes are a notification's attributes in the admin
// API: its anomaly's severity, kind, title, body and resources, with when
// it was raised, read and resolved.
type NotificationAttributes struct {
	AnomalyID  string                   `json:"anomaly_id"`
	Severity   string                   `json:"severity"`
	Kind       string                   `json:"kind"`
	Title      string                   `json:"title"`
	Body       string                   `json:"body"`
	Resources  []domain.AnomalyResource `json:"resources"`
	CreatedAt  time.Time                `json:"created_at"`
	ReadAt     *time.Time               `json:"read_at"`
	ResolvedAt *time.Time               `json:"resolved_at"`
}

// NotificationResource renders a notification.
func NotificationResource(n *notifications.Notification) httpapi.Resource {
	res := n.Resources
	if res == nil {
		res = []domain.AnomalyResource{}
	}
	return httpapi.Resource{ID: n.ID, Type: "notification", Attributes: NotificationAttributes{AnomalyID: n.AnomalyID,
		Severity: n.Severity, Kind: n.Kind, Title: n.Title, Body: n.Summary, Resources: res, CreatedAt: n.CreatedAt,
		ReadAt: zeroTimeAsNull(n.ReadAt), ResolvedAt: zeroTimeAsNull(n.ResolvedAt)}}
}
