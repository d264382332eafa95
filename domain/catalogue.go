package domain

// Events returns the catalogue of every event type the service writes. Each
// call builds a new, read-only catalogue; cmd builds one and passes it down.
func Events() *Catalogue {
	return NewCatalogue(
		EventSpec{Name: "AccountCreated", Version: 1, New: func() Event { return &AccountCreated{} }},
		EventSpec{Name: "ShopDomainClaimed", Version: 1, New: func() Event { return &ShopDomainClaimed{} }},
		EventSpec{Name: "ShopCreated", Version: 1, New: func() Event { return &ShopCreated{} }},
		EventSpec{Name: "TokenIssued", Version: 1, New: func() Event { return &TokenIssued{} }},
		EventSpec{Name: "CustomerCreated", Version: 1, New: func() Event { return &CustomerCreated{} }},
		EventSpec{Name: "CustomerUpdated", Version: 1, New: func() Event { return &CustomerUpdated{} }},
		EventSpec{Name: "CustomerTagsSet", Version: 1, New: func() Event { return &CustomerTagsSet{} }},
		EventSpec{Name: "MasterTokenIssued", Version: 1, New: func() Event { return &MasterTokenIssued{} }},
		EventSpec{Name: "TokenRotated", Version: 1, New: func() Event { return &TokenRotated{} }},
		EventSpec{Name: "TokenRevoked", Version: 1, New: func() Event { return &TokenRevoked{} }},
		EventSpec{Name: "ShopPlanChanged", Version: 1, New: func() Event { return &ShopPlanChanged{} }},
		EventSpec{Name: "PublicKeyIssued", Version: 1, New: func() Event { return &PublicKeyIssued{} }},
		EventSpec{Name: "ImageKeyIssued", Version: 1, New: func() Event { return &ImageKeyIssued{} }},
		EventSpec{Name: "ShopScopesUpdated", Version: 1, New: func() Event { return &ShopScopesUpdated{} }},
		EventSpec{Name: "StorefrontEventRecorded", Version: 1, New: func() Event { return &StorefrontEventRecorded{} }},
		EventSpec{Name: "WebhookDeliveryRecorded", Version: 1, New: func() Event { return &WebhookDeliveryRecorded{} }},
	)
}
