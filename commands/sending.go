package commands

import (
	"context"
	"errors"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The sending side's commands: a message's outcome, and a campaign's
// completion.

// RecordMessageOutcomes records what became of a batch of one shop's
// messages (MessageOutcomesRecorded on the batch's own stream, appended
// with "no stream" under an id derived from the batch's message ids): the
// same batch recorded again (a sender retrying an append whose answer it
// lost) is recorded once.
type RecordMessageOutcomes struct {
	ShopID   string
	Outcomes []domain.MessageOutcome
}

// RecordMessageOutcomes runs the command.
func (h *Handler) RecordMessageOutcomes(ctx context.Context, cmd RecordMessageOutcomes, meta Meta) (Result, error) {
	ev, err := domain.RecordOutcomes(cmd.ShopID, cmd.Outcomes, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("message-outcomes", ev.BatchID)
	res, err := h.appendOne(ctx, cmd.ShopID, domain.OutcomeBatchStream(ev.BatchID), eventlog.NoStream(), id, ev, h.now(), meta)
	if errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		return Result{ID: id.String()}, nil // recorded before
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

// RecordSendingLimit records a WhatsApp number's new daily allowance after
// a quality event (WhatsAppSendingLimitChanged on the number's stream),
// once per quality event.
type RecordSendingLimit struct {
	ShopID, DisplayPhoneNumber, Tier, Rating, QualityEventID string
}

// RecordSendingLimit runs the command.
func (h *Handler) RecordSendingLimit(ctx context.Context, cmd RecordSendingLimit, meta Meta) (Result, error) {
	ev := domain.NewSendingLimitChange(cmd.ShopID, cmd.DisplayPhoneNumber, cmd.Tier, cmd.Rating, cmd.QualityEventID, h.now())
	id := eventlog.DeterministicID("sending-limit", cmd.ShopID, cmd.QualityEventID)
	return h.appendOne(ctx, cmd.ShopID, domain.WhatsAppNumberStream(cmd.ShopID, cmd.DisplayPhoneNumber), eventlog.Any(), id, ev, h.now(), meta)
}
