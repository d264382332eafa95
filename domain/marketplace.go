package domain

// marketplaceEvents lists the marketplaces' event types.
func marketplaceEvents() []EventSpec { return nil }
