package domain

import "time"

// DeliveryStream is the stream of one inbound webhook delivery that was
// recorded as such (not mapped to a domain event).
func DeliveryStream(eventID string) string { return "delivery-" + eventID }

// WebhookDeliveryRecorded keeps an inbound delivery that the service did
// not map to a domain event: a topic it does not handle yet, or a payload it
// could not process. Nothing is dropped; a later release can map it by
// replay.
type WebhookDeliveryRecorded struct {
	ShopID      string    `json:"shop_id"`
	Source      string    `json:"source"` // commerce, whatsapp, …
	Topic       string    `json:"topic"`
	Reason      string    `json:"reason"` // unhandled_topic, unprocessable
	TriggeredAt time.Time `json:"triggered_at,omitempty"`
	Payload     []byte    `json:"payload"`
}

// EventType implements Event.
func (WebhookDeliveryRecorded) EventType() string { return "WebhookDeliveryRecorded" }
