package domain

// Events returns the catalogue of every event type the service writes. Each
// call builds a new, read-only catalogue; cmd builds one and passes it down.
// Each area of the domain lists its own event types (tenancyEvents in this
// file, commerceEvents in commerce.go, messagingEvents in messaging.go,
// marketplaceEvents in marketplace.go).
func Events() *Catalogue {
	var specs []EventSpec
	for _, area := range [][]EventSpec{tenancyEvents(), commerceEvents(), messagingEvents(), marketplaceEvents(), catalogEvents(), campaignEvents(), journeyEvents(), intelligenceEvents(), attributionEvents(), erasureEvents(), shopErasureEvents(), privacyEvents(), webhookEvents(), consentEvents(), sendingEvents(), flowEvents(), anomalyEvents(), notificationEvents(), conversationEvents(), conciergeEvents(), creditEvents(), imageOperationEvents(), storefrontAccessEvents(), reviewEvents(), installEvents(), orderActionEvents(), userEvents(), invitationEvents()} {
		specs = append(specs, area...)
	}
	return NewCatalogue(specs...)
}

// tenancyEvents lists accounts, shops, keys, customers, the storefront pixel
// and recorded deliveries.
func tenancyEvents() []EventSpec {
	return []EventSpec{
		{Name: "AccountCreated", Version: 1, New: func() Event { return &AccountCreated{} }},
		{Name: "ShopDomainClaimed", Version: 1, New: func() Event { return &ShopDomainClaimed{} }},
		{Name: "ShopCreated", Version: 1, New: func() Event { return &ShopCreated{} }},
		{Name: "TokenIssued", Version: 1, New: func() Event { return &TokenIssued{} }},
		{Name: "CustomerCreated", Version: 1, New: func() Event { return &CustomerCreated{} }},
		{Name: "CustomerUpdated", Version: 1, New: func() Event { return &CustomerUpdated{} }},
		{Name: "CustomerTagsSet", Version: 1, New: func() Event { return &CustomerTagsSet{} }},
		{Name: "MasterTokenIssued", Version: 1, New: func() Event { return &MasterTokenIssued{} }},
		{Name: "TokenRotated", Version: 1, New: func() Event { return &TokenRotated{} }},
		{Name: "TokenRevoked", Version: 1, New: func() Event { return &TokenRevoked{} }},
		{Name: "ShopPlanChanged", Version: 1, New: func() Event { return &ShopPlanChanged{} }},
		{Name: "PublicKeyIssued", Version: 1, New: func() Event { return &PublicKeyIssued{} }},
		{Name: "ImageKeyIssued", Version: 1, New: func() Event { return &ImageKeyIssued{} }},
		{Name: "ImageKeyRevoked", Version: 1, New: func() Event { return &ImageKeyRevoked{} }},
		{Name: "ShopScopesUpdated", Version: 1, New: func() Event { return &ShopScopesUpdated{} }},
		{Name: "StorefrontEventRecorded", Version: 1, New: func() Event { return &StorefrontEventRecorded{} }},
		{Name: "WebhookDeliveryRecorded", Version: 1, New: func() Event { return &WebhookDeliveryRecorded{} }},
	}
}
