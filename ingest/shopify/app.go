package shopify

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Theme roles as the platform names them.
const (
	ThemeRoleMain        = "main" // the published, live theme
	ThemeRoleUnpublished = "unpublished"
	ThemeRoleDemo        = "demo"
	ThemeRoleDevelopment = "development"
)

// Theme is a themes/publish or themes/update payload.
type Theme struct {
	ID        string
	Name      string
	Role      string // one of the ThemeRole constants
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IsMain reports whether the theme is the shop's live theme; themes/update
// also fires for draft and development themes, which the service ignores.
func (t Theme) IsMain() bool { return t.Role == ThemeRoleMain }

// ParseTheme parses a themes/publish or themes/update payload. It rejects a
// payload without a theme id.
func ParseTheme(body []byte) (Theme, error) {
	var r struct {
		ID        json.Number `json:"id"`
		Name      string      `json:"name"`
		Role      string      `json:"role"`
		CreatedAt string      `json:"created_at"`
		UpdatedAt string      `json:"updated_at"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return Theme{}, err
	}
	var c conv
	t := Theme{
		ID:        c.id("id", r.ID),
		Name:      r.Name,
		Role:      strings.TrimSpace(r.Role),
		CreatedAt: c.time("created_at", r.CreatedAt),
		UpdatedAt: c.time("updated_at", r.UpdatedAt),
	}
	if c.err != nil {
		return Theme{}, c.err
	}
	return t, nil
}

// AppSubscription is the app_subscription object of an
// app_subscriptions/update payload: the shop's plan for this app.
type AppSubscription struct {
	AdminGraphQLAPIID     string // gid://shopify/AppSubscription/…; the identity
	Name                  string // the plan name
	Status                string // ACTIVE, CANCELLED, DECLINED, EXPIRED, FROZEN, PENDING, ACCEPTED
	AdminGraphQLAPIShopID string // gid://shopify/Shop/…
	CreatedAt             time.Time
	UpdatedAt             time.Time
	Currency              string
	// CappedAmount is the usage cap; nil when the plan has none.
	CappedAmount *domain.Amount
}

// ParseAppSubscription parses an app_subscriptions/update payload. It
// rejects a payload without app_subscription.admin_graphql_api_id.
func ParseAppSubscription(body []byte) (AppSubscription, error) {
	var r struct {
		AppSubscription struct {
			AdminGraphQLAPIID     string  `json:"admin_graphql_api_id"`
			Name                  string  `json:"name"`
			Status                string  `json:"status"`
			AdminGraphQLAPIShopID string  `json:"admin_graphql_api_shop_id"`
			CreatedAt             string  `json:"created_at"`
			UpdatedAt             string  `json:"updated_at"`
			Currency              string  `json:"currency"`
			CappedAmount          decimal `json:"capped_amount"`
		} `json:"app_subscription"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return AppSubscription{}, err
	}
	var c conv
	s := r.AppSubscription
	as := AppSubscription{
		AdminGraphQLAPIID:     c.str("app_subscription.admin_graphql_api_id", s.AdminGraphQLAPIID),
		Name:                  s.Name,
		Status:                strings.TrimSpace(s.Status),
		AdminGraphQLAPIShopID: strings.TrimSpace(s.AdminGraphQLAPIShopID),
		CreatedAt:             c.time("app_subscription.created_at", s.CreatedAt),
		UpdatedAt:             c.time("app_subscription.updated_at", s.UpdatedAt),
		Currency:              s.Currency,
		CappedAmount:          c.optAmount("app_subscription.capped_amount", s.CappedAmount),
	}
	if c.err != nil {
		return AppSubscription{}, c.err
	}
	return as, nil
}

// Shop is the shop object an app/uninstalled payload carries.
type Shop struct {
	ID              string
	Domain          string // the primary domain, possibly a custom one
	MyshopifyDomain string // the platform domain, stable for the shop's life
}

// ParseAppUninstalled parses an app/uninstalled payload. It rejects a
// payload without a shop id.
func ParseAppUninstalled(body []byte) (Shop, error) {
	var r struct {
		ID              json.Number `json:"id"`
		Domain          string      `json:"domain"`
		MyshopifyDomain string      `json:"myshopify_domain"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return Shop{}, err
	}
	var c conv
	s := Shop{
		ID:              c.id("id", r.ID),
		Domain:          strings.ToLower(strings.TrimSpace(r.Domain)),
		MyshopifyDomain: strings.ToLower(strings.TrimSpace(r.MyshopifyDomain)),
	}
	if c.err != nil {
		return Shop{}, c.err
	}
	return s, nil
}

// ScopesUpdate is an app/scopes_update payload: the access scopes granted
// before and after the change.
type ScopesUpdate struct {
	ID        string
	Previous  []string
	Current   []string
	UpdatedAt time.Time
}

// ParseScopesUpdate parses an app/scopes_update payload. It rejects a
// payload without its id.
func ParseScopesUpdate(body []byte) (ScopesUpdate, error) {
	var r struct {
		ID        json.Number `json:"id"`
		Previous  []string    `json:"previous"`
		Current   []string    `json:"current"`
		UpdatedAt string      `json:"updated_at"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return ScopesUpdate{}, err
	}
	var c conv
	s := ScopesUpdate{
		ID:        c.id("id", r.ID),
		Previous:  scopes(r.Previous),
		Current:   scopes(r.Current),
		UpdatedAt: c.time("updated_at", r.UpdatedAt),
	}
	if c.err != nil {
		return ScopesUpdate{}, c.err
	}
	return s, nil
}

// scopes trims scope names and drops empty ones.
func scopes(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
