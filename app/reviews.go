package app

import (
	"context"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/reviews"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// mountPublicReviews registers the storefront's reviews (issue 20): the
// published reviews with their summary, the buyers' submissions and the
// shoppers' helpfulness votes, with
// the review tokens of the review requests (ReviewTokens) and the
// server's limiter for the spam limits.
func mountPublicReviews(a *App, r *mux.Router, _ Middleware) {
	shops, q := PublicShops{Q: a.Tenancy}, reviews.NewQueries(a.Store.DB())
	readapi.NewPublicReviews(q, a.Commerce, a.Auth, shops, a.cursors, a.Runtime).Routes(r)
	writeapi.NewPublicReviews(writeapi.PublicReviewsConfig{Commands: a.Commands, Auth: a.Auth, Shops: shops, Orders: a.Commerce,
		Rules:  reviewRules{q: q},
		Tokens: a.ReviewTokens(), Limiter: a.limiter, AddressKey: deriveKey(a.CursorKey, "cgp review address limits v1"),
		Now: time.Now}).Routes(r)
	writeapi.NewReviewVotes(writeapi.ReviewVotesConfig{Commands: a.Commands, Auth: a.Auth, Shops: shops, Reviews: q, Wait: a.Runtime,
		Limiter: a.limiter, AddressKey: deriveKey(a.CursorKey, "cgp review address limits v1"),
		VoterKey: deriveKey(a.CursorKey, "cgp review helpful voters v1")}).Routes(r)
}

// mountReviews registers the moderation of the reviews (admin API).
func mountReviews(a *App, r *mux.Router, idem Middleware) {
	q := reviews.NewQueries(a.Store.DB())
	readapi.NewReviews(q, a.Auth, a.cursors, a.Runtime).Routes(r)
	writeapi.NewReviews(a.Commands, a.Auth, idem, q, a.Runtime).Routes(r)
}

// reviewRules reads the shops' auto-publish rules for the submissions.
type reviewRules struct{ q *reviews.Queries }

func (r reviewRules) Rule(ctx context.Context, shop string) (domain.ReviewRule, error) {
	rule, _, err := r.q.Rule(ctx, shop)
	return rule, err
}
