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
	ShopID string `json:"shop_id"`
	Source string `json:"source"` // commerce, whatsapp, …
	Topic  string `json:"topic"`
	Reason string `json:"reason"` // unhandled_topic, unprocessable, parked, ignored, refused
	// Detail says why a delivery was refused, ignored or unprocessable
	// (the member or rule; never a value of the payload).
	Detail string `json:"detail,omitempty"`
	// TriggeredAt is when the sender says it happened; null when unknown
	// (events recorded before it was a pointer hold the zero time).
	TriggeredAt *time.Time `json:"triggered_at"`
	Payload     []byte     `json:"payload"`
}

// EventType implements Event.
func (WebhookDeliveryRecorded) EventType() string { return "WebhookDeliveryRecorded" }
