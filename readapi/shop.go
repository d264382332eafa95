package readapi

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/conciergereplies"
	"github.com/cgp-platform/cgp/projections/notifications"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// ScopeShopSettings is the scope of the shop's settings (GET and PATCH
// /api/v1/shop): the specification's catalogue has no settings scope, so
// they are the full-access token's (`*`), as the admin interface's.
const ScopeShopSettings = domain.ScopeAll

// Shop serves the shop's settings.
type Shop struct {
	tenancy   *tenancy.Queries
	q         *notifications.Queries
	concierge *conciergereplies.Queries
	auth      *auth.Authenticator
	wait      Waiter
	platform  PlatformGrants
}

// PlatformGrants is what the shop view's platform section needs: the
// scopes the app declares and the re-authorisation link of a domain.
type PlatformGrants struct {
	Declared    []string
	Reauthorize func(shopDomain string) string
}

// NewShop returns the shop settings' read handler: the notification
// settings from the notifications read model, the concierge's from the
// concierge reactor's table.
func NewShop(t *tenancy.Queries, q *notifications.Queries, c *conciergereplies.Queries, a *auth.Authenticator, wait Waiter, pg PlatformGrants) *Shop {
	return &Shop{tenancy: t, q: q, concierge: c, auth: a, wait: wait, platform: pg}
}

// Routes registers GET /api/v1/shop.
func (s *Shop) Routes(r *mux.Router) {
	r.Handle("/api/v1/shop", httpapi.Beta(s.auth.Require(ScopeShopSettings, http.HandlerFunc(s.handleGet)))).Methods(http.MethodGet)
}

func (s *Shop) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	if err := WaitForPosition(r, s.wait, notifications.Name, conciergereplies.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	v, err := s.Load(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteResource(w, r, http.StatusOK, ShopResource(v))
}

// ShopView is what GET /api/v1/shop shows.
type ShopView struct {
	ID, Domain, Plan, ContactEmail string
	Notifications                  domain.NotificationSettings
	Concierge                      domain.ConciergeSettings
	Platform                       PlatformIO
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
	cs, err := s.concierge.Settings(ctx, shop)
	if err != nil {
		return nil, err
	}
	pv, err := s.platformView(ctx, shop, sh.Domain)
	if err != nil {
		return nil, err
	}
	return &ShopView{ID: sh.ID, Domain: sh.Domain, Plan: string(sh.Plan), ContactEmail: contact, Notifications: settings, Concierge: cs,
		Platform: pv}, nil
}

// PlatformIO is the shop's connection to the commerce platform as the API
// shows it: whether a session is stored, the declared, granted and
// implied scopes, the declared ones missing (re-consent), and every
// feature gated on a platform scope with whether it is on and why not.
type PlatformIO struct {
	Connected      bool                `json:"connected"`
	GrantKnown     bool                `json:"grant_known"`
	Declared       []string            `json:"declared"`
	Granted        []string            `json:"granted"`
	Implied        []string            `json:"implied"`
	Missing        []string            `json:"missing"`
	NeedsReconsent bool                `json:"needs_reconsent"`
	ReauthorizeURL string              `json:"reauthorize_url"`
	Features       []PlatformFeatureIO `json:"features"`
}

// PlatformFeatureIO is one feature gated on a platform scope.
type PlatformFeatureIO struct {
	Name          string  `json:"name"`
	PlatformScope string  `json:"platform_scope"`
	Description   string  `json:"description"`
	Available     bool    `json:"available"`
	Reason        *string `json:"reason"`
}

// platformView builds the platform section of a shop.
func (s *Shop) platformView(ctx context.Context, shop, shopDomain string) (PlatformIO, error) {
	ps, err := s.tenancy.ShopPlatformScopes(ctx, shop)
	if err != nil {
		return PlatformIO{}, err
	}
	connected, err := s.tenancy.HasSession(ctx, shop)
	if err != nil {
		return PlatformIO{}, err
	}
	declared := s.platform.Declared
	if declared == nil {
		declared = domain.DeclaredPlatformScopes()
	}
	v := PlatformIO{Connected: connected, GrantKnown: ps.Known, Declared: declared, Granted: nonNil(ps.Granted),
		Implied: nonNil(ps.Implied), Missing: nonNil(ps.Missing(declared))}
	v.NeedsReconsent = ps.Known && len(v.Missing) > 0
	if s.platform.Reauthorize != nil {
		v.ReauthorizeURL = s.platform.Reauthorize(shopDomain)
	}
	for _, f := range domain.PlatformFeatures() {
		fv := PlatformFeatureIO{Name: f.Name, PlatformScope: f.Scope, Description: f.Description, Available: ps.Known && ps.Has(f.Scope)}
		if !fv.Available {
			fv.Reason = optional(PlatformScopeReason(ps.Known, f.Scope))
		}
		v.Features = append(v.Features, fv)
	}
	return v, nil
}

// PlatformScopeReason says why a feature needing scope is off.
func PlatformScopeReason(known bool, scope string) string {
	if !known {
		return "the shop's platform grant is not known: it was not installed through /auth/install and the platform has not reported its scopes"
	}
	return "the shop has not granted the platform scope " + scope + ": the merchant re-authorises the app to grant it"
}

// ShopAttributes are the shop's attributes in the admin API.
type ShopAttributes struct {
	Domain        string                 `json:"domain"`
	Plan          string                 `json:"plan"`
	ContactEmail  *string                `json:"contact_email"`
	Notifications NotificationSettingsIO `json:"notifications"`
	Concierge     ConciergeSettingsIO    `json:"concierge"`
	Platform      PlatformIO             `json:"platform"`
}

// ConciergeSettingsIO are the AI concierge's settings as the API shows
// them: every policy topic (null when not entered), the merchant's own
// escalation keywords, the confidence threshold.
type ConciergeSettingsIO struct {
	Policies  map[string]*string `json:"policies"`
	Keywords  []string           `json:"keywords"`
	Threshold float64            `json:"threshold"`
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
	policies := map[string]*string{}
	for _, topic := range domain.ConciergePolicyTopics() {
		policies[topic] = optional(v.Concierge.Policies[topic])
	}
	keywords := v.Concierge.Keywords
	if keywords == nil {
		keywords = []string{}
	}
	return httpapi.Resource{ID: v.ID, Type: "shop", Attributes: ShopAttributes{Domain: v.Domain, Plan: v.Plan,
		ContactEmail: optional(v.ContactEmail), Notifications: NotificationSettingsIO{Emails: emails,
			ChatNumber: optional(v.Notifications.ChatNumber), Channels: ch, QuietHours: v.Notifications.QuietHours},
		Concierge: ConciergeSettingsIO{Policies: policies, Keywords: keywords, Threshold: v.Concierge.Threshold},
		Platform:  v.Platform}}
}
