package domain

// intelligenceEvents lists the intelligence event types.
func intelligenceEvents() []EventSpec { return nil }
