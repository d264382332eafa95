package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// RecordConsent records a customer's marketing consent decision on one
// channel (CustomerConsentChanged on the customer's consent stream): from
// a WhatsApp STOP/START reply (the consent reactor), an unsubscribe link
// or the admin API.
type RecordConsent struct {
	Decision domain.ConsentDecision
	// SourceEventID, when set, is the id of the event the decision comes
	// from (an inbound message's): the event id derives from it and the
	// channel, so the same source event twice records once. Empty: every
	// call records (a second click on a link is a decision of its own).
	SourceEventID string
}

// consentAggregate is the consent stream; decisions depend on nothing
// recorded before (the read model weighs them against the platform's
// states by time), so it keeps nothing.
type consentAggregate struct{}

// Apply implements aggregate.
func (*consentAggregate) Apply(domain.Event) {}

// RecordConsent runs the command. A decision failing validation is a
// domain error naming the field.
func (h *Handler) RecordConsent(ctx context.Context, cmd RecordConsent, meta Meta) (Result, error) {
	ev, err := cmd.Decision.Decide(h.now())
	if err != nil {
		return Result{}, err
	}
	var id uuid.UUID
	if cmd.SourceEventID != "" {
		id = eventlog.DeterministicID("consent", cmd.SourceEventID, ev.Channel)
	}
	return execute(ctx, h, ev.ShopID, domain.ConsentStream(ev.CustomerID),
		func() *consentAggregate { return &consentAggregate{} },
		func(*consentAggregate) (decision, error) {
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{id}}, nil
		}, meta)
}
