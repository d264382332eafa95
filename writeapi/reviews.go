package writeapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/reviews"
	"github.com/cgp-platform/cgp/readapi"
)

// Reviews serves the moderation of the product reviews (issue 20, point
// 3): publish, reject with a reason, reply. Moderating is writing about
// the shop's products: products:write.
type Reviews struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	q    *reviews.Queries
	wait readapi.Waiter
}

// NewReviews returns the moderation handlers.
func NewReviews(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *reviews.Queries,
	wait readapi.Waiter) *Reviews {
	return &Reviews{cmds: cmds, auth: a, idem: idem, q: q, wait: wait}
}

// Routes registers the writes (beta).
func (v *Reviews) Routes(r *mux.Router) {
	write := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(v.auth.Require(domain.ScopeProductsWrite, v.idem(h)))
	}
	r.Handle("/api/v1/reviews/settings", write(v.handleSettings)).Methods(http.MethodPatch)
	r.Handle("/api/v1/reviews/{id}/publish", write(v.handlePublish)).Methods(http.MethodPost)
	r.Handle("/api/v1/reviews/{id}/reject", write(v.handleReject)).Methods(http.MethodPost)
	r.Handle("/api/v1/reviews/{id}/reply", write(v.handleReply)).Methods(http.MethodPost)
}

func (v *Reviews) handlePublish(w http.ResponseWriter, r *http.Request) {
	var body struct{}
	if err := decodeOptionalData(w, r, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	v.moderate(w, r, func(rv *domain.Review, now time.Time) (domain.Event, error) { return domain.PublishReview(rv, now) })
}

type rejectBody struct {
	Reason string `json:"reason"`
}

func (v *Reviews) handleReject(w http.ResponseWriter, r *http.Request) {
	var body rejectBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	v.moderate(w, r, func(rv *domain.Review, now time.Time) (domain.Event, error) {
		return domain.RejectReview(rv, body.Reason, now)
	})
}

type reviewReplyBody struct {
	Body string `json:"body"`
}

func (v *Reviews) handleReply(w http.ResponseWriter, r *http.Request) {
	var body reviewReplyBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	v.moderate(w, r, func(rv *domain.Review, now time.Time) (domain.Event, error) {
		return domain.ReplyToReview(rv, body.Body, now)
	})
}

// moderate runs the decision on the caller's review named in the path
// (another shop's is not found) and answers 200 with the review read back.
func (v *Reviews) moderate(w http.ResponseWriter, r *http.Request, decide func(*domain.Review, time.Time) (domain.Event, error)) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	if !domain.HasPrefixID(id, domain.PrefixReview) {
		httpapi.WriteError(w, r, domain.NotFound("review"))
		return
	}
	res, err := v.cmds.ModerateReview(r.Context(), commands.ModerateReview{ShopID: p.ShopID, ReviewID: id, Decide: decide}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	// Publishing a published review appends nothing: position 0 reads
	// the row as it is.
	readapi.ServeWritten(w, r, v.wait, reviews.Name, res.Position, http.StatusOK, func(ctx context.Context) (*reviews.Review, error) {
		return v.q.Review(ctx, p.ShopID, id)
	}, nil, readapi.ReviewResource)
}

// reviewSettingsBody is a partial edit of the auto-publish rule: absent
// members stay as they are.
type reviewSettingsBody struct {
	AutoPublish *struct {
		Enabled         *bool `json:"enabled"`
		RequireVerified *bool `json:"require_verified"`
		MinRating       *int  `json:"min_rating"`
	} `json:"auto_publish"`
}

// handleSettings edits the shop's auto-publish rule and answers 200 with
// the settings.
func (v *Reviews) handleSettings(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body reviewSettingsBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if err := readapi.WaitForPosition(r, v.wait, reviews.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	rule, _, err := v.q.Rule(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if a := body.AutoPublish; a != nil {
		if a.Enabled != nil {
			rule.Enabled = *a.Enabled
		}
		if a.RequireVerified != nil {
			rule.RequireVerified = *a.RequireVerified
		}
		if a.MinRating != nil {
			rule.MinRating = *a.MinRating
		}
	}
	res, err := v.cmds.SetReviewRule(r.Context(), commands.SetReviewRule{ShopID: p.ShopID, Rule: rule}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	readapi.ServeWritten(w, r, v.wait, reviews.Name, res.Position, http.StatusOK, func(ctx context.Context) (readapi.ReviewSettings, error) {
		rule, at, err := v.q.Rule(ctx, p.ShopID)
		return readapi.ReviewSettings{ShopID: p.ShopID, Rule: rule, SetAt: at}, err
	}, nil, readapi.ReviewSettingsResource)
}
