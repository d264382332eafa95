package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Outcomes of a delivery attempt of an outbound webhook.
const (
	// WebhookAttemptSucceeded: the endpoint answered 2xx; the delivery is
	// done.
	WebhookAttemptSucceeded = "succeeded"
	// WebhookAttemptFailed: the attempt failed and the delivery is
	// attempted again at NextAttemptAt.
	WebhookAttemptFailed = "failed"
	// WebhookAttemptGivenUp: the attempt failed and was the last one (the
	// schedule is spent, or it was a test): the delivery has failed.
	WebhookAttemptGivenUp = "given_up"
)

// Bounds of a WebhookAttemptsRecorded event.
const (
	// MaxWebhookAttemptsPerEvent is how many attempts one event records.
	MaxWebhookAttemptsPerEvent = 100
	// MaxWebhookAttemptAnswer is how much of an endpoint's answer an
	// attempt keeps (the attempt log shows it).
	MaxWebhookAttemptAnswer = 4 << 10
)

// WebhookAttempt is one attempt to deliver an outbound event to a
// subscription, as the attempt log shows it. It never holds the event's
// body nor a secret: Answer is the first bytes of the endpoint's answer.
// Status is 0 when no answer came; ErrorCode names the failure (timeout,
// http_500, …) and is empty for a success. NextAttemptAt is set only for
// a failed attempt that is followed by another.
type WebhookAttempt struct {
	DeliveryID     string    `json:"delivery_id"`
	SubscriptionID string    `json:"subscription_id"`
	EventType      string    `json:"event_type"`
	Attempt        int       `json:"attempt"`
	Outcome        string    `json:"outcome"`
	Status         int       `json:"status,omitempty"`
	ErrorCode      string    `json:"error_code,omitempty"`
	At             time.Time `json:"at"`
	LatencyMS      int64     `json:"latency_ms"`
	Answer         string    `json:"answer,omitempty"`
	NextAttemptAt  time.Time `json:"next_attempt_at,omitzero"`
}

func (a *WebhookAttempt) check() error {
	switch {
	case !strings.HasPrefix(a.DeliveryID, PrefixWebhookDelivery) || !strings.HasPrefix(a.SubscriptionID, PrefixWebhookSubscription):
		return Invalid("attempts", "an attempt names its delivery (whd_…) and subscription (whs_…)")
	case a.Attempt < 1 || a.At.IsZero() || a.LatencyMS < 0:
		return Invalid("attempts", "an attempt has a number from 1, a time and a latency")
	case len(a.Answer) > MaxWebhookAttemptAnswer || !utf8.ValidString(a.Answer):
		return Invalid("attempts", "an attempt keeps at most %d bytes of text of the answer", MaxWebhookAttemptAnswer)
	}
	switch {
	case a.Outcome == WebhookAttemptSucceeded && a.ErrorCode == "" && a.NextAttemptAt.IsZero():
	case a.Outcome == WebhookAttemptFailed && a.ErrorCode != "" && !a.NextAttemptAt.IsZero():
	case a.Outcome == WebhookAttemptGivenUp && a.ErrorCode != "" && a.NextAttemptAt.IsZero():
	default:
		return Invalid("attempts", "an attempt succeeded, failed with an error code and a next attempt, or was given up with an error code")
	}
	return nil
}

// WebhookAttemptsRecorded: the outcomes of a batch of attempts to deliver
// one shop's outbound events, each (delivery, attempt) once. The
// dispatcher records its attempts in batches; every server folds them into
// its delivery store, so that the attempt log reads the same on each, and
// the server that takes the deliveries over knows what was delivered.
type WebhookAttemptsRecorded struct {
	ShopID   string           `json:"shop_id"`
	BatchID  string           `json:"batch_id"`
	Attempts []WebhookAttempt `json:"attempts"`
}

// EventType implements Event.
func (WebhookAttemptsRecorded) EventType() string { return "WebhookAttemptsRecorded" }

// WebhookAttemptsStream is the stream of a shop's recorded delivery
// attempts (appended with "any": each batch carries an id derived from
// its attempts, so the same batch recorded twice is recorded once).
func WebhookAttemptsStream(shopID string) string { return "webhookattempts-" + shopID }

// RecordWebhookAttempts decides the record of a batch of one shop's
// attempts (1 to MaxWebhookAttemptsPerEvent); the batch id derives from
// the shop and the attempts' (delivery, number), so the same batch
// decided again has the same id.
func RecordWebhookAttempts(shopID string, attempts []WebhookAttempt) (*WebhookAttemptsRecorded, error) {
	if len(attempts) == 0 || len(attempts) > MaxWebhookAttemptsPerEvent {
		return nil, Invalid("attempts", "record 1 to %d attempts at once", MaxWebhookAttemptsPerEvent)
	}
	out := make([]WebhookAttempt, len(attempts))
	keys := make([]string, len(attempts))
	for i, a := range attempts {
		if err := a.check(); err != nil {
			return nil, err
		}
		a.At = a.At.UTC()
		if !a.NextAttemptAt.IsZero() {
			a.NextAttemptAt = a.NextAttemptAt.UTC()
		}
		out[i], keys[i] = a, fmt.Sprintf("%s/%d", a.DeliveryID, a.Attempt)
	}
	slices.Sort(keys)
	if len(slices.Compact(slices.Clone(keys))) != len(keys) {
		return nil, Invalid("attempts", "a batch holds each attempt of a delivery once")
	}
	return &WebhookAttemptsRecorded{ShopID: shopID, BatchID: hashParts(append([]string{shopID}, keys...)...), Attempts: out}, nil
}
