package domain

import (
	"sort"
	"strings"
	"time"
)

// declaredPlatformScopes are the commerce-platform scopes the app requests
// at install (specification table "Commerce-platform scopes").
var declaredPlatformScopes = []string{
	"read_customers", "write_customers", "read_orders", "read_all_orders",
	"read_products", "write_products", "read_inventory", "write_inventory", "read_locations",
	"write_discounts", "read_discounts", "read_own_subscription_contracts", "write_purchase_options",
	"write_pixels", "read_customer_events", "read_markets", "write_marketing_events",
	"read_content", "write_content", "read_online_store_pages", "write_online_store_pages",
	"read_online_store_navigation", "read_publications", "write_publications",
	"read_files", "write_files", "read_translations", "write_translations",
	"write_legal_policies", "read_themes",
}

// DeclaredPlatformScopes returns the scopes the app requests at install.
func DeclaredPlatformScopes() []string { return append([]string(nil), declaredPlatformScopes...) }

// ImpliedPlatformScopes expands a granted scope list the way the platform
// collapses it: write_X implies read_X. The result is sorted and without
// duplicates.
func ImpliedPlatformScopes(granted []string) []string {
	set := map[string]bool{}
	for _, s := range granted {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		set[s] = true
		if rest, ok := strings.CutPrefix(s, "write_"); ok {
			set["read_"+rest] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// MissingPlatformScopes lists the declared scopes a granted list does not
// cover, compared on the implied set (e.g. read_themes until an install
// re-consents).
func MissingPlatformScopes(granted []string) []string {
	have := map[string]bool{}
	for _, s := range ImpliedPlatformScopes(granted) {
		have[s] = true
	}
	var out []string
	for _, s := range declaredPlatformScopes {
		if !have[s] {
			out = append(out, s)
		}
	}
	return out
}

// ShopScopesUpdated: the platform reported the scopes granted to the app on
// a shop (app/scopes_update), as the stored session holds them.
type ShopScopesUpdated struct {
	ShopID    string    `json:"shop_id"`
	Granted   []string  `json:"granted"`
	Previous  []string  `json:"previous,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// EventType implements Event.
func (ShopScopesUpdated) EventType() string { return "ShopScopesUpdated" }
