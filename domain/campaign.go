package domain

// campaignEvents lists the campaign event types.
func campaignEvents() []EventSpec { return nil }
