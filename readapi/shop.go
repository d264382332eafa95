package readapi

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/notifications"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// ScopeShopSettings is the scope of the shop's settings (GET and PATCH
// /api/v1/shop): the specification's catalogue has no settings scope, so
// they are the full-access token's (`*`), as the admin interface's.
const ScopeShopSettings = domain.ScopeAll

// Shop serves the shop's settings.
type Shop struct {
	tenancy *tenancy.Queries
	q       *notifications.Queries
	auth    *auth.Authenticator
	wait    Waiter
}

// NewShop returns the shop settings' read handler.
func NewShop(t *tenancy.Queries, q *notifications.Queries, a *auth.Authenticator, wait Waiter) *Shop {
	return &Shop{tenancy: t, q: q, auth: a, wait: wait}
}

// Routes registers GET /api/v1/shop.
func (s *Shop) Routes(r *mux.Router) {
	r.Handle("/api/v1/shop", httpapi.Beta(s.auth.Require(ScopeShopSettings, http.HandlerFunc(s.handleGet)))).Methods(http.MethodGet)
}

func (s *Shop) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeOne(w, r, s.wait, notifications.Name, p.ShopID, s.Load, ShopResource)
}

// ShopView is what GET /api/v1/shop shows.
type ShopView struct {
	ID, Domain, Plan, ContactEmail string
	Notifications                  domain.NotificationSettings
}

// Load reads a shop's settings.
func (s *Shop) Load(ctx context.Context, shop string) (*ShopView, error) {
	sh, err := s.tenancy.ShopByID(ctx, shop)
	if err != nil {
		return nil, err
	}
	settings, contact, err := s.q.Settings(ctx, shop)
	if err != nil {
		return nil, err
	}
	return &ShopView{ID: sh.ID, Domain: sh.Domain, Plan: string(sh.Plan), ContactEmail: contact, Notifications: settings}, nil
}

// ShopAttributes are the shop's attributes in the admin API.
type ShopAttributes struct {
	Domain        string                 `json:"domain"`
	Plan          string                 `json:"plan"`
	ContactEmail  *string                `json:"contact_email"`
	Notifications NotificationSettingsIO `json:"notifications"`
}

// NotificationSettingsIO are the notification settings as the API shows
// them: the configured addresses (empty: the contact e-mail), the chat
// number, the channels of each severity besides in-app, the quiet hours.
type NotificationSettingsIO struct {
	Emails     []string            `json:"emails"`
	ChatNumber *string             `json:"chat_number"`
	Channels   map[string][]string `json:"channels"`
	QuietHours *domain.QuietHours  `json:"quiet_hours"`
}

// ShopResource renders a shop's settings.
func ShopResource(v *ShopView) httpapi.Resource {
	ch := map[string][]string{}
	for _, sev := range domain.Severities() {
		ch[sev] = v.Notifications.Channels[sev]
		if ch[sev] == nil {
			ch[sev] = []string{}
		}
	}
	emails := v.Notifications.Emails
	if emails == nil {
		emails = []string{}
	}
	return httpapi.Resource{ID: v.ID, Type: "shop", Attributes: ShopAttributes{Domain: v.Domain, Plan: v.Plan,
		ContactEmail: optional(v.ContactEmail), Notifications: NotificationSettingsIO{Emails: emails,
			ChatNumber: optional(v.Notifications.ChatNumber), Channels: ch, QuietHours: v.Notifications.QuietHours}}}
}
