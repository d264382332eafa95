package domain

// commerceEvents lists the commerce platform's event types.
func commerceEvents() []EventSpec { return nil }
