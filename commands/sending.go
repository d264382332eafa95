package commands

import (
	"context"
	"errors"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The sending side's commands: a message's outcome, and a campaign's
// completion.

// RecordMessageOutcome records what became of one message the service
// sent (MessageSent, MessageFailed or MessageSkipped) on the message's own
// stream. The event id derives from the message id alone, so a message has
// one outcome: recording it again (a sender that restarted before it
// noted the first record) returns the first record's result, whatever the
// second says.
type RecordMessageOutcome struct {
	Outcome domain.MessageOutcome
}

// RecordMessageOutcome runs the command.
func (h *Handler) RecordMessageOutcome(ctx context.Context, cmd RecordMessageOutcome, meta Meta) (Result, error) {
	ev, err := domain.DecideOutcome(cmd.Outcome, h.now())
	if err != nil {
		return Result{}, err
	}
	ref := cmd.Outcome.Ref
	id := eventlog.DeterministicID("message-outcome", ref.MessageID)
	res, err := h.appendOne(ctx, ref.ShopID, domain.OutboundMessageStream(ref.MessageID), eventlog.NoStream(), id, ev, h.now(), meta)
	if errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		// Another outcome was recorded first (under the same id the log
		// would have answered with its result): the first one stands.
		return Result{ID: id.String()}, nil
	}
	return res, err
}

// CompleteCampaign completes a sending campaign whose recipients all have
// an outcome; nothing when it is not sending any more.
type CompleteCampaign struct {
	ShopID, CampaignID string
	Tally              domain.CampaignTally
}

// CompleteCampaign runs the command.
func (h *Handler) CompleteCampaign(ctx context.Context, cmd CompleteCampaign, meta Meta) (Result, error) {
	return execute(ctx, h, cmd.ShopID, domain.CampaignStream(cmd.CampaignID), func() *domain.Campaign { return &domain.Campaign{} },
		func(c *domain.Campaign) (decision, error) {
			ev, err := c.Complete(cmd.ShopID, cmd.CampaignID, cmd.Tally, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
}
