package readapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/reviews"
)

// PublicReviewsCacheControl is the Cache-Control of a public reviews
// answer: only published reviews with the display name their author chose
// appear, so a storefront's browser and shared caches may keep it a
// minute; an erasure reaches the cached copies within that minute.
const PublicReviewsCacheControl = "public, max-age=60"

// ProductHandles finds a shop's product by its handle (the commerce read
// model).
type ProductHandles interface {
	ProductIDByHandle(ctx context.Context, shop, handle string) (string, error)
}

// PublicReviews serves GET /api/public/reviews (issue 20, point 1): the
// published reviews of a shop's product, or of the whole shop, with their
// summary, for the storefront.
type PublicReviews struct {
	q        *reviews.Queries
	products ProductHandles
	auth     *auth.Authenticator
	shops    auth.PublicShops
	cursors  *httpapi.CursorCodec
	wait     Waiter
}

// NewPublicReviews returns the public reviews read.
func NewPublicReviews(q *reviews.Queries, products ProductHandles, a *auth.Authenticator, shops auth.PublicShops,
	cursors *httpapi.CursorCodec, wait Waiter) *PublicReviews {
	return &PublicReviews{q: q, products: products, auth: a, shops: shops, cursors: cursors, wait: wait}
}

// Routes registers the read (beta); POST and the preflight are the
// write side's (writeapi.PublicReviews).
func (p *PublicReviews) Routes(r *mux.Router) {
	r.Handle("/api/public/reviews", httpapi.Beta(p.auth.Public(p.shops, http.HandlerFunc(p.handleList)))).Methods(http.MethodGet)
}

// publicReviewSpec is the allow-list of the public list: newest first by
// default; "-rating" lists the best rated first, "-helpful" the most
// helpful (ties: the newest). The product is bound to the cursor through
// the resource name.
func publicReviewSpec(shop, product string) httpapi.ListSpec {
	return httpapi.ListSpec{Resource: "public_reviews:" + shop + ":" + product,
		Sorts:       []string{reviews.SortNewest, reviews.SortRating, reviews.SortHelpful},
		DefaultSort: "-" + reviews.SortNewest, Params: []string{"product_id", "product_handle"}}
}

func (p *PublicReviews) handleList(w http.ResponseWriter, r *http.Request) {
	shop, _ := auth.PublicShopFromContext(r.Context())
	product, err := p.product(r, shop)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	rec := &bufferedAnswer{w: w}
	ServeKeysetMeta(rec, r, p.cursors, p.wait, reviews.Name, publicReviewSpec(shop, product),
		func(params httpapi.ListParams, after *reviews.Key) ([]httpapi.Resource, *reviews.Key, error) {
			rows, next, err := p.q.Reviews(r.Context(), reviews.ListQuery{Shop: shop, Product: product, Status: domain.ReviewStatusPublished,
				Public: true, Sort: params.Sort.Field, Desc: params.Sort.Desc, After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = PublicReviewResource(&rows[i])
			}
			return items, next, err
		}, func(ctx context.Context) (map[string]any, error) {
			s, err := p.q.Summary(ctx, shop, product)
			if err != nil {
				return nil, err
			}
			return map[string]any{"summary": summaryOf(s), "json_ld": jsonLD(s)}, nil
		})
	rec.finish(r)
}

// product resolves the query's product: product_id (prd_… or the
// platform's numeric id) or product_handle, "" for the whole shop.
func (p *PublicReviews) product(r *http.Request, shop string) (string, error) {
	q := r.URL.Query()
	id, handle := q.Get("product_id"), q.Get("product_handle")
	switch {
	case id != "" && handle != "":
		return "", httpapi.InvalidParameter("product_handle", "give product_id or product_handle, not both")
	case id != "":
		prd := domain.ReviewProductID(shop, id)
		if prd == "" {
			return "", httpapi.InvalidParameter("product_id", "product_id is a product id (prd_…) or the platform's numeric product id")
		}
		return prd, nil
	case handle != "":
		if len(handle) > 255 {
			return "", httpapi.InvalidParameter("product_handle", "product_handle has at most 255 characters")
		}
		prd, err := p.products.ProductIDByHandle(r.Context(), shop, handle)
		if domain.ErrorCode(err) == domain.CodeNotFound {
			// An unknown handle (a product not synced yet) has no
			// reviews: an id no product has gives the empty list.
			return domain.IDFromExternal(domain.PrefixProduct, "unknown_handle", shop, handle), nil
		}
		return prd, err
	}
	return "", nil
}

// PublicReviewAttributes are a published review's public attributes: no
// e-mail, no customer or order id.
type PublicReviewAttributes struct {
	ProductID  string       `json:"product_id"`
	Rating     int          `json:"rating"`
	Title      *string      `json:"title"`
	Body       string       `json:"body"`
	AuthorName string       `json:"author_name"`
	Verified   bool         `json:"verified"`
	Reply      *ReviewReply `json:"reply"`
	// HelpfulCount counts the "helpful" votes (one per address).
	HelpfulCount int       `json:"helpful_count"`
	CreatedAt    time.Time `json:"created_at"`
}

// ReviewReply is the merchant's public reply to a review.
type ReviewReply struct {
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// PublicReviewResource renders a published review for the storefront.
func PublicReviewResource(v *reviews.Review) httpapi.Resource {
	return httpapi.Resource{ID: v.ID, Type: "review", Attributes: PublicReviewAttributes{ProductID: v.ProductID, Rating: v.Rating,
		Title: optional(v.Title), Body: v.Body, AuthorName: v.AuthorName, Verified: v.Verified, Reply: replyOf(v), HelpfulCount: v.HelpfulCount,
		CreatedAt: v.SubmittedAt}}
}

func replyOf(v *reviews.Review) *ReviewReply {
	if v.Reply == "" {
		return nil
	}
	return &ReviewReply{Body: v.Reply, CreatedAt: v.RepliedAt}
}

// summaryOf is meta.summary: average_rating (two decimals, 0 without
// reviews), count, histogram {"1": n, …, "5": n}.
func summaryOf(s reviews.Summary) map[string]any {
	h := map[string]int{}
	for i, n := range s.Histogram {
		h[string(rune('1'+i))] = n
	}
	return map[string]any{"average_rating": math.Round(s.Average*100) / 100, "count": s.Count, "histogram": h}
}

// jsonLD is meta.json_ld: the schema.org AggregateRating to embed as the
// aggregateRating of the page's Product; null without a published review
// (search engines refuse a rating of nothing).
func jsonLD(s reviews.Summary) any {
	if s.Count == 0 {
		return nil
	}
	return map[string]any{"@context": "https://schema.org", "@type": "AggregateRating",
		"ratingValue": math.Round(s.Average*100) / 100, "reviewCount": s.Count, "bestRating": 5, "worstRating": 1}
}

// bufferedAnswer holds a list answer so that its ETag can be computed from
// its body: a 200 gets ETag and the public Cache-Control, and a request
// whose If-None-Match names the ETag gets 304 without a body. Errors pass
// through as they are (not cacheable).
type bufferedAnswer struct {
	w      http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.w.Header() }

func (b *bufferedAnswer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

func (b *bufferedAnswer) finish(r *http.Request) {
	h := b.w.Header()
	if b.status != http.StatusOK {
		b.w.WriteHeader(b.status)
		_, _ = b.w.Write(b.body.Bytes())
		return
	}
	sum := sha256.Sum256(b.body.Bytes())
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", PublicReviewsCacheControl)
	h.Add("Vary", "X-Shop-Domain, X-Public-Key")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		h.Del("Content-Type")
		h.Del("Content-Length")
		b.w.WriteHeader(http.StatusNotModified)
		return
	}
	b.w.WriteHeader(http.StatusOK)
	_, _ = b.w.Write(b.body.Bytes())
}

// etagMatches reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match; "*" matches).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
