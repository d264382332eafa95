package readapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/reviews"
)

// Reviews serves the moderation reads of the product reviews (issue 20,
// point 3): every review of the shop, whatever its status. Reviews are
// about products: products:read. The author's e-mail is not in the read
// model and never shown.
type Reviews struct {
	q       *reviews.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewReviews returns the moderation read handlers.
func NewReviews(q *reviews.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Reviews {
	return &Reviews{q: q, auth: a, cursors: cursors, wait: wait}
}

// ReviewListSpec is the allow-list of GET /api/v1/reviews.
var ReviewListSpec = httpapi.ListSpec{
	Resource: "reviews",
	Filters: map[string]httpapi.FilterKind{"status": httpapi.EnumFilter(domain.ReviewStatuses()...),
		"rating": httpapi.EnumFilter("1", "2", "3", "4", "5"), "product_id": httpapi.StringFilter(),
		"verified": httpapi.EnumFilter("true", "false")},
	Sorts:       []string{reviews.SortNewest, reviews.SortRating, reviews.SortHelpful},
	DefaultSort: "-" + reviews.SortNewest,
}

// Routes registers the reads (beta).
func (v *Reviews) Routes(r *mux.Router) {
	read := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(httpapi.Compressed(v.auth.Require(domain.ScopeProductsRead, h)))
	}
	r.Handle("/api/v1/reviews", read(v.handleList)).Methods(http.MethodGet)
	// Before /api/v1/reviews/{id}: "settings" is no review id.
	r.Handle("/api/v1/reviews/settings", read(v.handleSettings)).Methods(http.MethodGet)
	r.Handle("/api/v1/reviews/{id}", read(v.handleGet)).Methods(http.MethodGet)
}

func (v *Reviews) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, v.cursors, v.wait, reviews.Name, ReviewListSpec,
		func(params httpapi.ListParams, after *reviews.Key) ([]httpapi.Resource, *reviews.Key, error) {
			lq := reviews.ListQuery{Shop: p.ShopID, Product: params.Filters["product_id"], Status: params.Filters["status"],
				Sort: params.Sort.Field, Desc: params.Sort.Desc, After: after, Limit: params.Limit}
			lq.Rating, _ = strconv.Atoi(params.Filters["rating"])
			if s, ok := params.Filters["verified"]; ok {
				b := s == "true"
				lq.Verified = &b
			}
			rows, next, err := v.q.Reviews(r.Context(), lq)
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = ReviewResource(&rows[i])
			}
			return items, next, err
		})
}

func (v *Reviews) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, v.wait, reviews.Name, p.ShopID, func(ctx context.Context, shop string) (*reviews.Review, error) {
		return v.q.Review(ctx, shop, id)
	}, ReviewResource)
}

// ReviewAttributes are a review's attributes for moderators.
type ReviewAttributes struct {
	ProductID  string  `json:"product_id"`
	CustomerID string  `json:"customer_id"`
	OrderID    *string `json:"order_id"`
	Verified   bool    `json:"verified"`
	Status     string  `json:"status"`
	Rating     int     `json:"rating"`
	// Title, Body and AuthorName are null once the author was erased
	// (Redacted).
	Title      *string      `json:"title"`
	Body       *string      `json:"body"`
	AuthorName *string      `json:"author_name"`
	Redacted   bool         `json:"redacted"`
	Reply      *ReviewReply `json:"reply"`
	// RejectionReason is the moderator's reason of a rejected review.
	RejectionReason *string `json:"rejection_reason"`
	// HelpfulCount counts the storefront's "helpful" votes.
	HelpfulCount int       `json:"helpful_count"`
	CreatedAt    time.Time `json:"created_at"`
}

// ReviewResource renders a review for moderators.
func ReviewResource(v *reviews.Review) httpapi.Resource {
	a := ReviewAttributes{ProductID: v.ProductID, CustomerID: v.CustomerID, OrderID: optional(v.OrderID), Verified: v.Verified,
		Status: v.Status, Rating: v.Rating, Title: optional(v.Title), Body: optional(v.Body), AuthorName: optional(v.AuthorName),
		Redacted: v.Redacted, Reply: replyOf(v), HelpfulCount: v.HelpfulCount, CreatedAt: v.SubmittedAt}
	if v.Status == domain.ReviewStatusRejected {
		a.RejectionReason = optional(v.Reason)
	}
	return httpapi.Resource{ID: v.ID, Type: "review", Attributes: a}
}

func (v *Reviews) handleSettings(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeOne(w, r, v.wait, reviews.Name, p.ShopID, func(ctx context.Context, shop string) (ReviewSettings, error) {
		rule, at, err := v.q.Rule(ctx, shop)
		return ReviewSettings{ShopID: shop, Rule: rule, SetAt: at}, err
	}, ReviewSettingsResource)
}

// ReviewSettings are a shop's review settings: its auto-publish rule and
// when it was set (zero while the default applies).
type ReviewSettings struct {
	ShopID string
	Rule   domain.ReviewRule
	SetAt  time.Time
}

// ReviewSettingsAttributes are the review settings' attributes.
type ReviewSettingsAttributes struct {
	AutoPublish domain.ReviewRule `json:"auto_publish"`
	// SetAt is null while the default rule applies.
	SetAt *time.Time `json:"set_at"`
}

// ReviewSettingsResource renders a shop's review settings (id: the shop).
func ReviewSettingsResource(s ReviewSettings) httpapi.Resource {
	a := ReviewSettingsAttributes{AutoPublish: s.Rule}
	if !s.SetAt.IsZero() {
		a.SetAt = &s.SetAt
	}
	return httpapi.Resource{ID: s.ShopID, Type: "review_settings", Attributes: a}
}
