package writeapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/reviews"
)

// maxReviewBody bounds a review submission (the texts' limits are far
// below it).
const maxReviewBody = 32 << 10

// Default spam limits of review submissions (counted before anything else,
// the honeypot's too): an address may submit 5 at once and 10 an hour, a
// shop 100 at once and 600 an hour from all its storefront's visitors.
var (
	DefaultReviewAddressLimit = limits.Limit{Rate: 10, Period: time.Hour, Burst: 5}
	DefaultReviewShopLimit    = limits.Limit{Rate: 600, Period: time.Hour, Burst: 100}
)

// ReviewRules reads a shop's auto-publish rule (the default when the shop
// never set one).
type ReviewRules interface {
	Rule(ctx context.Context, shop string) (domain.ReviewRule, error)
}

// ReviewOrders are what a submission needs of the commerce read model: the
// order an order id names and the order that verifies a review.
type ReviewOrders interface {
	Order(ctx context.Context, shop, id string) (*commerce.Order, error)
	VerifyingOrder(ctx context.Context, shop, customer, product, prefer string) (string, error)
}

// PublicReviewsConfig configures the review submissions.
type PublicReviewsConfig struct {
	Commands *commands.Handler
	Auth     *auth.Authenticator
	Shops    auth.PublicShops
	Orders   ReviewOrders
	Rules    ReviewRules
	Tokens   reviews.Tokens
	// Limiter counts the submissions per address and per shop (the
	// server's in-process or Redis limiter); AddressKey keys the address
	// counters (a keyed hash: no address is stored in clear).
	Limiter                 limits.Limiter
	AddressKey              []byte
	AddressLimit, ShopLimit limits.Limit
	Now                     func() time.Time
}

// PublicReviews serves POST /api/public/reviews (issue 20, point 2) and
// the preflight of the public reviews path.
type PublicReviews struct{ cfg PublicReviewsConfig }

// NewPublicReviews returns the review submissions' handler; zero limits
// take the defaults.
func NewPublicReviews(cfg PublicReviewsConfig) *PublicReviews {
	if cfg.AddressLimit.Rate == 0 {
		cfg.AddressLimit = DefaultReviewAddressLimit
	}
	if cfg.ShopLimit.Rate == 0 {
		cfg.ShopLimit = DefaultReviewShopLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &PublicReviews{cfg: cfg}
}

// Routes registers the submission and the path's CORS preflight (beta).
func (p *PublicReviews) Routes(r *mux.Router) {
	r.Handle("/api/public/reviews", httpapi.Beta(p.cfg.Auth.Public(p.cfg.Shops, http.HandlerFunc(p.handleSubmit)))).Methods(http.MethodPost)
	r.Handle("/api/public/reviews", httpapi.Beta(p.cfg.Auth.Preflight(p.cfg.Shops, "GET, POST"))).Methods(http.MethodOptions)
}

// reviewSubmission is the body's attributes. Website is the honeypot: a
// field the storefront's form hides from people, which bots fill in.
type reviewSubmission struct {
	ProductID   string `json:"product_id"`
	Rating      int    `json:"rating"`
	Title       string `json:"title"`
	Body        string `json:"body"`
	AuthorName  string `json:"author_name"`
	AuthorEmail string `json:"author_email"`
	ReviewToken string `json:"review_token"`
	OrderID     string `json:"order_id"`
	Website     string `json:"website"`
}

func (p *PublicReviews) handleSubmit(w http.ResponseWriter, r *http.Request) {
	shop, _ := auth.PublicShopFromContext(r.Context())
	if err := p.throttle(r, shop); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	var body reviewSubmission
	if err := httpapi.DecodeData(w, r, maxReviewBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.Website != "" {
		// A bot: answered like a person, nothing recorded.
		httpapi.WriteResource(w, r, http.StatusAccepted, httpapi.Resource{ID: domain.NewID(domain.PrefixReview), Type: "review",
			Attributes: submittedAttributes{ProductID: domain.ReviewProductID(shop, body.ProductID), Rating: body.Rating,
				Status: domain.ReviewStatusPending}})
		return
	}
	draft, err := p.draft(r.Context(), shop, &body)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := p.cfg.Commands.SubmitReview(r.Context(), commands.SubmitReview{Draft: draft},
		commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "storefront", Source: "api"})
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	status := domain.ReviewStatusPending
	if draft.Rule.Publishes(draft.VerifyingOrderID != "", draft.Rating) {
		status = domain.ReviewStatusPublished
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(uint64(res.Position), 10))
	httpapi.WriteResource(w, r, http.StatusAccepted, httpapi.Resource{ID: res.ID, Type: "review", Attributes: submittedAttributes{
		ProductID: draft.ProductID, Rating: draft.Rating, Status: status, Verified: draft.VerifyingOrderID != ""}})
}

// submittedAttributes are what a submission answers: nothing personal.
type submittedAttributes struct {
	ProductID string `json:"product_id"`
	Rating    int    `json:"rating"`
	Status    string `json:"status"`
	Verified  bool   `json:"verified"`
}

// throttle counts the submission against the address's, then the shop's
// limit (an address over its limit does not use the shop's).
func (p *PublicReviews) throttle(r *http.Request, shop string) error {
	return throttle(r, p.cfg.Limiter, p.cfg.AddressKey, httpapi.ClientIP(r), "review", shop, p.cfg.AddressLimit, p.cfg.ShopLimit)
}

// draft identifies the buyer (review token, or order id and the order's
// e-mail) and finds the order that verifies the review.
func (p *PublicReviews) draft(ctx context.Context, shop string, b *reviewSubmission) (domain.ReviewDraft, error) {
	d := domain.ReviewDraft{ShopID: shop, Rating: b.Rating, Title: b.Title, Body: b.Body, AuthorName: b.AuthorName,
		AuthorEmail: b.AuthorEmail}
	if d.ProductID = domain.ReviewProductID(shop, strings.TrimSpace(b.ProductID)); d.ProductID == "" {
		return d, domain.Invalid("product_id", "product_id is required: a product id (prd_…) or the platform's numeric product id")
	}
	var prefer string
	switch {
	case b.ReviewToken != "":
		c, err := p.cfg.Tokens.Parse(b.ReviewToken, p.cfg.Now())
		if err != nil || c.ShopID != shop {
			return d, domain.Invalid("review_token", "the review token is not valid for this shop, or it expired")
		}
		d.CustomerID, prefer, d.Proof = c.CustomerID, c.OrderID, domain.ReviewProofToken
	case b.OrderID != "":
		email, err := domain.ReviewEmail(b.AuthorEmail)
		if err != nil {
			return d, err
		}
		ord := domain.ReviewOrderID(shop, strings.TrimSpace(b.OrderID))
		var o *commerce.Order
		if ord != "" {
			if o, err = p.cfg.Orders.Order(ctx, shop, ord); err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
				return d, err
			}
		}
		// One answer for an unknown order and a wrong e-mail: the form
		// must not tell which orders exist.
		if o == nil || o.Email == nil || !strings.EqualFold(strings.TrimSpace(*o.Email), email) || o.CustomerID == "" {
			return d, domain.Invalid("order_id", "no order of this shop has this order id and author_email")
		}
		d.CustomerID, prefer, d.Proof = o.CustomerID, o.ID, domain.ReviewProofOrder
	default:
		return d, domain.Invalid("review_token", "send the review_token of the review request, or order_id with the order's e-mail as author_email")
	}
	order, err := p.cfg.Orders.VerifyingOrder(ctx, shop, d.CustomerID, d.ProductID, prefer)
	if err != nil {
		return d, err
	}
	rule, err := p.cfg.Rules.Rule(ctx, shop)
	if err != nil {
		return d, err
	}
	d.VerifyingOrderID, d.Rule = order, &rule
	return d, nil
}
