package domain

// messagingEvents lists the messaging platform's and providers' event types.
func messagingEvents() []EventSpec { return nil }
