package app

import (
	"context"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/reviews"
	"github.com/cgp-platform/cgp/readapi"
)

// The CLI twins of the review moderation (`cgp reviews`): the same
// commands as the admin API, with the CLI as actor.

// Reviews lists a shop's reviews, newest first, as GET /api/v1/reviews
// shows them (status filters when set), from the read models.
func Reviews(ctx context.Context, cfg Config, shop, status string, limit int) ([]any, error) {
	store, err := cfg.OpenReadModels()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	rows, _, err := reviews.NewQueries(store.DB()).Reviews(ctx, reviews.ListQuery{Shop: shop, Status: status, Desc: true, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]any, len(rows))
	for i := range rows {
		r := readapi.ReviewResource(&rows[i])
		out[i] = map[string]any{"id": r.ID, "type": r.Type, "attributes": r.Attributes}
	}
	return out, nil
}

// ModerateReview publishes (action publish), rejects (reject, text the
// reason) or answers (reply, text the reply) a review of a shop.
func ModerateReview(ctx context.Context, c *Core, shop, id, action, text string) (commands.Result, error) {
	var decide func(*domain.Review, time.Time) (domain.Event, error)
	switch action {
	case "publish":
		decide = domain.PublishReview
	case "reject":
		decide = func(r *domain.Review, now time.Time) (domain.Event, error) { return domain.RejectReview(r, text, now) }
	case "reply":
		decide = func(r *domain.Review, now time.Time) (domain.Event, error) { return domain.ReplyToReview(r, text, now) }
	default:
		return commands.Result{}, fmt.Errorf("unknown review action %q", action)
	}
	return c.Commands.ModerateReview(ctx, commands.ModerateReview{ShopID: shop, ReviewID: id, Decide: decide}, commands.Meta{Actor: "cli", Source: "cli"})
}

// SetReviewRule changes a shop's auto-publish rule: edit applies the
// flags given to the rule the read models hold.
func SetReviewRule(ctx context.Context, c *Core, shop string, edit func(*domain.ReviewRule)) (domain.ReviewRule, commands.Result, error) {
	store, err := c.Config.OpenReadModels()
	if err != nil {
		return domain.ReviewRule{}, commands.Result{}, err
	}
	rule, _, err := reviews.NewQueries(store.DB()).Rule(ctx, shop)
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rule, commands.Result{}, err
	}
	edit(&rule)
	res, err := c.Commands.SetReviewRule(ctx, commands.SetReviewRule{ShopID: shop, Rule: rule}, commands.Meta{Actor: "cli", Source: "cli"})
	return rule, res, err
}
