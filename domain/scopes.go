package domain

// The admin-token scopes, named: handlers and route registration use these,
// never a string literal.
const (
	ScopeCustomersRead   Scope = "customers:read"
	ScopeCustomersWrite  Scope = "customers:write"
	ScopeOrdersRead      Scope = "orders:read"
	ScopeOrdersWrite     Scope = "orders:write"
	ScopeAttributionRead Scope = "attribution:read"
	ScopeCampaignsRead   Scope = "campaigns:read"
	ScopeCampaignsWrite  Scope = "campaigns:write"
	ScopeJourneysRead    Scope = "journeys:read"
	ScopeJourneysWrite   Scope = "journeys:write"
	ScopeProductsRead    Scope = "products:read"
	ScopeProductsWrite   Scope = "products:write"
	ScopeAnalyticsRead   Scope = "analytics:read"
	ScopeWebhooksRead    Scope = "webhooks:read"
	ScopeWebhooksWrite   Scope = "webhooks:write"
	ScopeAuditRead       Scope = "audit:read"
)
