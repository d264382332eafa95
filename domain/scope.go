package domain

import (
	"sort"
	"strings"
)

// Scope is an admin-token permission from the specification's table.
type Scope string

// ScopeAll grants every scope.
const ScopeAll Scope = "*"

// AdminScopes is the admin-token scope catalogue, in the specification's
// order.
var adminScopes = []Scope{
	ScopeCustomersRead, ScopeCustomersWrite,
	ScopeOrdersRead, ScopeOrdersWrite,
	ScopeAttributionRead,
	ScopeCampaignsRead, ScopeCampaignsWrite,
	ScopeJourneysRead, ScopeJourneysWrite,
	ScopeProductsRead, ScopeProductsWrite,
	ScopeAnalyticsRead,
	ScopeWebhooksRead, ScopeWebhooksWrite,
	ScopeAuditRead,
}

// AdminScopes returns the admin scope catalogue (a copy), without "*".
func AdminScopes() []Scope { return append([]Scope(nil), adminScopes...) }

func adminScopeIndex(s Scope) int {
	for i, c := range adminScopes {
		if c == s {
			return i
		}
	}
	return -1
}

// ParseAdminScopes validates a scope list for an admin token: every entry
// must be in the catalogue or "*". The result is de-duplicated, in
// catalogue order, and collapses to ["*"] when the wildcard is present.
func ParseAdminScopes(list []string) ([]Scope, error) {
	if len(list) == 0 {
		return nil, Invalid("scopes", "at least one scope is required")
	}
	seen := make(map[Scope]bool, len(list))
	for _, raw := range list {
		s := Scope(strings.TrimSpace(raw))
		if s == ScopeAll {
			return []Scope{ScopeAll}, nil
		}
		if adminScopeIndex(s) < 0 {
			return nil, Invalid("scopes", "unknown scope %q", raw)
		}
		seen[s] = true
	}
	out := make([]Scope, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return adminScopeIndex(out[i]) < adminScopeIndex(out[j]) })
	return out, nil
}

// Grants reports whether a granted list allows required: an exact match or
// the wildcard.
func Grants(granted []Scope, required Scope) bool {
	for _, g := range granted {
		if g == required || g == ScopeAll {
			return true
		}
	}
	return false
}
