package domain

// journeyEvents lists the journey event types.
func journeyEvents() []EventSpec { return nil }
