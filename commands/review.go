package commands

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// SubmitReview records a storefront review of a product by a buyer; the
// caller found the buyer (review token or order) and the verifying order
// in the read models. The review's stream is new: a second review of the
// same product by the same customer is a conflict (409).
type SubmitReview struct {
	Draft domain.ReviewDraft
}

// SubmitReview runs the command; the result's ID is the review's id.
func (h *Handler) SubmitReview(ctx context.Context, cmd SubmitReview, meta Meta) (Result, error) {
	id := domain.ReviewID(cmd.Draft.ShopID, cmd.Draft.CustomerID, cmd.Draft.ProductID)
	res, err := executeOn(ctx, h, cmd.Draft.ShopID, domain.ReviewStream(id), true, func() *domain.Review { return &domain.Review{} },
		func(r *domain.Review) (decision, error) {
			evs, err := domain.SubmitReview(r, cmd.Draft, h.now())
			return decision{events: evs}, err
		}, meta)
	res.ID = id
	return res, err
}

// ModerateReview publishes, rejects or answers a review of a shop.
type ModerateReview struct {
	ShopID, ReviewID string
	// Decide is domain.PublishReview, RejectReview or ReplyToReview with
	// its arguments bound.
	Decide func(r *domain.Review, now time.Time) (domain.Event, error)
}

// ModerateReview runs the command: a review of another shop is not found.
func (h *Handler) ModerateReview(ctx context.Context, cmd ModerateReview, meta Meta) (Result, error) {
	res, err := execute(ctx, h, cmd.ShopID, domain.ReviewStream(cmd.ReviewID), func() *domain.Review { return &domain.Review{} },
		func(r *domain.Review) (decision, error) {
			if r.ShopID != cmd.ShopID {
				return decision{}, domain.NotFound("review")
			}
			ev, err := cmd.Decide(r, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ReviewID
	return res, err
}

// SetReviewRule sets a shop's auto-publish rule of reviews.
type SetReviewRule struct {
	ShopID string
	Rule   domain.ReviewRule
}

// SetReviewRule runs the command: one event on the shop's review-settings
// stream.
func (h *Handler) SetReviewRule(ctx context.Context, cmd SetReviewRule, meta Meta) (Result, error) {
	ev, err := domain.SetReviewRule(cmd.ShopID, cmd.Rule, h.now())
	if err != nil {
		return Result{}, err
	}
	res, err := h.appendOne(ctx, cmd.ShopID, domain.ReviewSettingsStream(cmd.ShopID), eventlog.Any(), newEventID(), ev, h.now(), meta)
	res.ID = cmd.ShopID
	return res, err
}

// MarkReviewHelpful records a storefront visitor's helpfulness vote on a
// published review of a shop. Voter is the keyed hash of the visitor's
// address and the review (the caller computes it; no address reaches the
// log). The vote is its own stream's only event, appended with "no
// stream" under an id derived from the shop, review and voter: a repeat
// (or a race of two servers) appends nothing and its result is the first
// vote's, whose position a read can wait for.
type MarkReviewHelpful struct {
	ShopID, ReviewID, Voter string
}

// MarkReviewHelpful runs the command: an unknown, unpublished or other
// shop's review is not found. The result's ID is the review's.
func (h *Handler) MarkReviewHelpful(ctx context.Context, cmd MarkReviewHelpful, meta Meta) (Result, error) {
	var r domain.Review
	if _, _, err := h.load(ctx, domain.ReviewStream(cmd.ReviewID), &r); err != nil {
		return Result{}, err
	}
	ev, err := domain.MarkReviewHelpful(&r, cmd.ShopID, cmd.Voter, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("review-helpful", cmd.ShopID, cmd.ReviewID, cmd.Voter)
	res, err := h.appendOne(ctx, cmd.ShopID, domain.ReviewVoteStream(cmd.ShopID, cmd.ReviewID, cmd.Voter), eventlog.NoStream(), id, ev,
		h.now(), meta)
	res.ID = cmd.ReviewID
	return res, err
}
