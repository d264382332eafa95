package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// RecordMarketingConsent records a customer's consent state on one channel
// (the consent reactor, from the platform's customer snapshots and from
// WhatsApp replies). It decides on the customer's consent stream whether
// the state changes; the event id derives from the source event and the
// channel, so a redelivered source event appends nothing.
type RecordMarketingConsent struct {
	Change domain.ConsentChange
	// SourceEventID is the id of the event the change comes from.
	SourceEventID string
}

// RecordMarketingConsent runs the command; the result's revision is the
// consent stream's (nothing appended when the state did not change).
func (h *Handler) RecordMarketingConsent(ctx context.Context, cmd RecordMarketingConsent, meta Meta) (Result, error) {
	in := cmd.Change
	if cmd.SourceEventID == "" {
		return Result{}, domain.Invalid("source_event_id", "a consent change needs the event it comes from")
	}
	return execute(ctx, h, in.ShopID, domain.ConsentStream(in.CustomerID),
		func() *domain.MarketingConsent { return &domain.MarketingConsent{} },
		func(a *domain.MarketingConsent) (decision, error) {
			ev, err := a.Record(in, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{eventlog.DeterministicID("consent", cmd.SourceEventID, in.Channel)}}, nil
		}, meta)
}
