package domain

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// declaredPlatformScopes are the commerce-platform scopes the app requests
// at install by default (specification table "Commerce-platform scopes",
// and write_orders for the order actions of issue 21: cancel and refund).
// The configuration may declare more (--platform-scopes); an install
// whose implied grant lacks one needs re-consent.
var declaredPlatformScopes = []string{
	"read_customers", "write_customers", "read_orders", "write_orders", "read_all_orders",
	"read_products", "write_products", "read_inventory", "write_inventory", "read_locations",
	"write_discounts", "read_discounts", "read_own_subscription_contracts", "write_purchase_options",
	"write_pixels", "read_customer_events", "read_markets", "write_marketing_events",
	"read_content", "write_content", "read_online_store_pages", "write_online_store_pages",
	"read_online_store_navigation", "read_publications", "write_publications",
	"read_files", "write_files", "read_translations", "write_translations",
	"write_legal_policies", "read_themes",
}

// DeclaredPlatformScopes returns the scopes the app requests at install
// by default.
func DeclaredPlatformScopes() []string { return append([]string(nil), declaredPlatformScopes...) }

var platformScopeRE = regexp.MustCompile(`^(unauthenticated_)?(read|write)_[a-z][a-z_]{0,62}$`)

// ValidPlatformScope reports whether s has the form of a platform scope
// (read_X, write_X, unauthenticated_read_X, unauthenticated_write_X).
func ValidPlatformScope(s string) bool { return platformScopeRE.MatchString(s) }

// ParsePlatformScopes splits the platform's scope string ("write_orders,
// read_themes", as the token response and the stored session hold it)
// into its scopes, in order, without blanks and duplicates.
func ParsePlatformScopes(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

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
		if rest, ok := strings.CutPrefix(s, "unauthenticated_write_"); ok {
			set["unauthenticated_read_"+rest] = true
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
// re-consents), in the declared order.
func MissingPlatformScopes(declared, granted []string) []string {
	have := map[string]bool{}
	for _, s := range ImpliedPlatformScopes(granted) {
		have[s] = true
	}
	var out []string
	for _, s := range declared {
		if !have[s] {
			out = append(out, s)
		}
	}
	return out
}

// PlatformScopeGranted reports whether scope is in the implied set of
// granted.
func PlatformScopeGranted(granted []string, scope string) bool {
	return slices.Contains(ImpliedPlatformScopes(granted), scope)
}

// PlatformFeature is a power of the service that needs a platform scope
// the shop granted (the specification's scope table, "Powers").
type PlatformFeature struct {
	// Name is stable: the API and the errors name the feature by it.
	Name string
	// Scope is the platform scope it needs (on the implied set).
	Scope string
	// Description says what the feature does, for the shop view.
	Description string
}

// Features that the service gates on a granted platform scope.
const (
	FeatureSubscriptionRevenue = "subscription_revenue"
	FeatureThemeIncidents      = "theme_incidents"
	FeatureOrderActions        = "order_actions"
	FeatureCatalogueSync       = "catalogue_sync"
)

// platformFeatures is the specification's table of powers, one row per
// scope; the features named by constants are the ones the service
// degrades itself.
var platformFeatures = []PlatformFeature{
	{"customer_profiles", "read_customers", "Customer profiles, journeys, loyalty enrolment"},
	{"customer_writes", "write_customers", "Customer tags and loyalty enrolment written to the platform"},
	{"order_history", "read_orders", "Order history, attribution and journeys triggered by orders"},
	{FeatureOrderActions, "write_orders", "Cancelling and refunding orders from the admin API"},
	{"extended_order_history", "read_all_orders", "Extended order retention for predictive lifetime value"},
	{"catalogue", "read_products", "Catalogue reads"},
	{FeatureCatalogueSync, "write_products", "Product and price changes pushed to the platform"},
	{"inventory_forecast", "read_inventory", "Inventory forecast"},
	{"inventory_writes", "write_inventory", "Inventory writes"},
	{"location_inventory", "read_locations", "Location-scoped inventory writes"},
	{"discount_codes", "write_discounts", "Loyalty redemption and campaign discount codes"},
	{"discount_reads", "read_discounts", "Discount reads for loyalty and campaigns"},
	{FeatureSubscriptionRevenue, "read_own_subscription_contracts", "Subscription revenue, churn, dunning"},
	{"selling_plans", "write_purchase_options", "Pre-order and subscription selling plans"},
	{"web_pixel", "write_pixels", "Web pixel"},
	{"utm_capture", "read_customer_events", "UTM attribution capture"},
	{"markets", "read_markets", "Markets and currency routing"},
	{"marketing_events", "write_marketing_events", "Campaign and marketing-event reporting"},
	{"blog_reads", "read_content", "Blog engine"},
	{"blog_publishing", "write_content", "Blog publishing"},
	{"page_reads", "read_online_store_pages", "Storefront pages and internal links"},
	{"page_writes", "write_online_store_pages", "Storefront page writes"},
	{"navigation", "read_online_store_navigation", "Menu structure"},
	{"publication_reads", "read_publications", "Sales-channel publication reads"},
	{"publication_writes", "write_publications", "Sales-channel publication"},
	{"media_reads", "read_files", "Generated images and media reads"},
	{"media_writes", "write_files", "Generated images and media uploads"},
	{"translation_reads", "read_translations", "Translation reads"},
	{"translation_writes", "write_translations", "Translations"},
	{"legal_policies", "write_legal_policies", "Policy content"},
	{FeatureThemeIncidents, "read_themes", "Correlating theme publishes with SEO crawl regressions"},
}

// PlatformFeatures returns the features gated on a platform scope.
func PlatformFeatures() []PlatformFeature { return append([]PlatformFeature(nil), platformFeatures...) }

// PlatformFeatureScope returns the scope a feature needs.
func PlatformFeatureScope(feature string) string {
	for _, f := range platformFeatures {
		if f.Name == feature {
			return f.Scope
		}
	}
	return ""
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
