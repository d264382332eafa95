package domain

import (
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Product reviews (issue 20, points 1–3): a buyer reviews a product of a
// shop from the storefront. A review belongs to the customer who wrote it
// (the buyer's customer id, from the review token or the order) and to the
// product: one review per customer per product, so its id derives from
// the shop, the customer and the product (ReviewID) and its stream is
// created once ("no stream"). Its text, the author's display name and
// e-mail are personal data sealed with the customer's key: a
// customers/redact makes them unreadable while the rating stays counted.

// PrefixReview is the id prefix of a review.
const PrefixReview = "rev_"

// Review statuses.
const (
	ReviewStatusPending   = "pending"
	ReviewStatusPublished = "published"
	ReviewStatusRejected  = "rejected"
)

// ReviewStatuses lists the statuses of a review.
func ReviewStatuses() []string {
	return []string{ReviewStatusPending, ReviewStatusPublished, ReviewStatusRejected}
}

// Review limits, in characters after the markup and links are stripped.
const (
	MaxReviewTitle  = 150
	MaxReviewBody   = 5000
	MaxReviewAuthor = 80
	MaxReviewEmail  = 254
	MaxReviewReason = 500
	MaxReviewReply  = 5000
)

// ReviewRule is a shop's auto-publish rule: when Enabled, a review rated
// at least MinRating (and verified, when RequireVerified) is published at
// once; every other review waits for moderation.
type ReviewRule struct {
	Enabled         bool `json:"enabled"`
	RequireVerified bool `json:"require_verified"`
	MinRating       int  `json:"min_rating"`
}

// DefaultReviewRule is the rule of a shop that never set one: verified and
// rated 4 or 5.
func DefaultReviewRule() ReviewRule {
	return ReviewRule{Enabled: true, RequireVerified: true, MinRating: 4}
}

// Publishes reports whether the rule publishes a review at once.
func (r ReviewRule) Publishes(verified bool, rating int) bool {
	return r.Enabled && (verified || !r.RequireVerified) && rating >= r.MinRating
}

// ReviewSettingsStream is the stream of a shop's review settings.
func ReviewSettingsStream(shopID string) string { return "reviewsettings-" + shopID }

// ReviewRuleSet: the shop's auto-publish rule changed.
type ReviewRuleSet struct {
	ShopID string `json:"shop_id"`
	ReviewRule
	SetAt time.Time `json:"set_at"`
}

// EventType implements Event.
func (ReviewRuleSet) EventType() string { return "ReviewRuleSet" }

// SetReviewRule decides a shop's new auto-publish rule (min_rating 1 to
// 5).
func SetReviewRule(shopID string, rule ReviewRule, now time.Time) (*ReviewRuleSet, error) {
	if rule.MinRating < 1 || rule.MinRating > 5 {
		return nil, Invalid("min_rating", "min_rating is an integer from 1 to 5")
	}
	return &ReviewRuleSet{ShopID: shopID, ReviewRule: rule, SetAt: now.UTC()}, nil
}

// ReviewID derives the review of a customer of a shop for a product.
func ReviewID(shopID, customerID, productID string) string {
	return IDFromExternal(PrefixReview, "review", shopID, customerID+"\x00"+productID)
}

// ReviewStream is the stream of a review.
func ReviewStream(reviewID string) string { return "review-" + reviewID }

func reviewEvents() []EventSpec {
	return []EventSpec{
		{Name: "ReviewSubmitted", Version: 1, New: func() Event { return &ReviewSubmitted{} }},
		{Name: "ReviewPublished", Version: 1, New: func() Event { return &ReviewPublished{} }},
		{Name: "ReviewRejected", Version: 1, New: func() Event { return &ReviewRejected{} }},
		{Name: "ReviewReplied", Version: 1, New: func() Event { return &ReviewReplied{} }},
		{Name: "ReviewRuleSet", Version: 1, New: func() Event { return &ReviewRuleSet{} }},
		{Name: "ReviewMarkedHelpful", Version: 1, New: func() Event { return &ReviewMarkedHelpful{} }},
	}
}

// ReviewSubmitted: a customer reviewed a product. Verified says a
// fulfilled order of the customer containing the product (OrderID) backs
// it; Proof says how the customer was identified (review_token or order).
// Title, Body, AuthorName and AuthorEmail are personal data, sealed with
// the customer's key.
type ReviewSubmitted struct {
	ReviewID    string    `json:"review_id"`
	ShopID      string    `json:"shop_id"`
	CustomerID  string    `json:"customer_id"`
	ProductID   string    `json:"product_id"`
	OrderID     string    `json:"order_id,omitempty"`
	Verified    bool      `json:"verified"`
	Proof       string    `json:"proof"`
	Rating      int       `json:"rating"`
	Title       string    `json:"title,omitempty"`
	Body        string    `json:"body"`
	AuthorName  string    `json:"author_name"`
	AuthorEmail string    `json:"author_email"`
	SubmittedAt time.Time `json:"submitted_at"`
}

// EventType implements Event.
func (ReviewSubmitted) EventType() string { return "ReviewSubmitted" }

// Subject implements Personal.
func (e ReviewSubmitted) Subject() string { return e.CustomerID }

// PersonalFields implements Personal.
func (ReviewSubmitted) PersonalFields() []string {
	return []string{"title", "body", "author_name", "author_email"}
}

// ReviewPublished: the review shows on the storefront (Rule names the
// auto-publish rule that published it, "" for a moderator).
type ReviewPublished struct {
	ReviewID    string    `json:"review_id"`
	ShopID      string    `json:"shop_id"`
	Rule        string    `json:"rule,omitempty"`
	PublishedAt time.Time `json:"published_at"`
}

// EventType implements Event.
func (ReviewPublished) EventType() string { return "ReviewPublished" }

// ReviewRejected: a moderator rejected the review for Reason (the
// merchant's words about the review, not personal data of the author).
type ReviewRejected struct {
	ReviewID   string    `json:"review_id"`
	ShopID     string    `json:"shop_id"`
	Reason     string    `json:"reason"`
	RejectedAt time.Time `json:"rejected_at"`
}

// EventType implements Event.
func (ReviewRejected) EventType() string { return "ReviewRejected" }

// ReviewReplied: the merchant answered the review publicly.
type ReviewReplied struct {
	ReviewID  string    `json:"review_id"`
	ShopID    string    `json:"shop_id"`
	Reply     string    `json:"reply"`
	RepliedAt time.Time `json:"replied_at"`
}

// EventType implements Event.
func (ReviewReplied) EventType() string { return "ReviewReplied" }

// ReviewMarkedHelpful: a storefront visitor marked a published review
// helpful ("Was this review helpful?"). Voter is a keyed hash (HMAC with
// a server key) of the visitor's address and the review: it identifies no
// one and cannot be linked to the same address's votes on other reviews;
// it only makes the vote's stream (ReviewVoteStream) unique, so an
// address counts once per review.
type ReviewMarkedHelpful struct {
	ReviewID string    `json:"review_id"`
	ShopID   string    `json:"shop_id"`
	Voter    string    `json:"voter"`
	MarkedAt time.Time `json:"marked_at"`
}

// EventType implements Event.
func (ReviewMarkedHelpful) EventType() string { return "ReviewMarkedHelpful" }

// ReviewVoteStream is the stream of one voter's helpfulness vote on a
// review: created once ("no stream"), so a repeated vote appends nothing.
func ReviewVoteStream(shopID, reviewID, voter string) string {
	return "reviewvote-" + IDFromExternal("rvv_", "review_vote", shopID, reviewID+"\x00"+voter)
}

// MarkReviewHelpful decides a helpfulness vote on a review of shopID by
// voter (a keyed hash, 16 to 128 characters): only a published review of
// that shop takes votes; any other (unknown, pending, rejected, another
// shop's) is not found, as the storefront cannot see it.
func MarkReviewHelpful(r *Review, shopID, voter string, now time.Time) (*ReviewMarkedHelpful, error) {
	if r.ID == "" || r.ShopID != shopID || r.Status != ReviewStatusPublished {
		return nil, NotFound("review")
	}
	if len(voter) < 16 || len(voter) > 128 {
		return nil, Invalid("voter", "the voter is a keyed hash of 16 to 128 characters")
	}
	return &ReviewMarkedHelpful{ReviewID: r.ID, ShopID: shopID, Voter: voter, MarkedAt: now.UTC()}, nil
}

// Review is the review aggregate: whether it exists and its status.
type Review struct {
	ID, ShopID, Status string
}

// Apply folds an event of the review's stream.
func (r *Review) Apply(e Event) {
	switch ev := e.(type) {
	case *ReviewSubmitted:
		r.ID, r.ShopID, r.Status = ev.ReviewID, ev.ShopID, ReviewStatusPending
	case *ReviewPublished:
		r.Status = ReviewStatusPublished
	case *ReviewRejected:
		r.Status = ReviewStatusRejected
	}
}

// ReviewDraft is what a storefront submits, with what the service found
// out about the author: the customer and, when a fulfilled order of theirs
// contains the product, that order.
type ReviewDraft struct {
	ShopID, CustomerID, ProductID string
	// VerifyingOrderID is the fulfilled order of the customer containing
	// the product ("" when none: the review is not verified).
	VerifyingOrderID string
	// Proof is how the customer was identified: review_token or order.
	Proof string
	// Rule is the shop's auto-publish rule (nil: DefaultReviewRule).
	Rule                                 *ReviewRule
	Rating                               int
	Title, Body, AuthorName, AuthorEmail string
}

// ReviewRuleAuto is the Rule of a review published by the shop's
// auto-publish rule.
const ReviewRuleAuto = "auto_publish"

// Review proofs.
const (
	ReviewProofToken = "review_token"
	ReviewProofOrder = "order"
)

// SubmitReview decides a new review: it strips markup and links from the
// texts, checks every limit (the first failing field in the order of the
// form is reported), then refuses a second review of the product by the
// customer (conflict), and publishes it at once when the shop's
// auto-publish rule says so (d.Rule; by default verified and rated at
// least 4).
func SubmitReview(r *Review, d ReviewDraft, now time.Time) ([]Event, error) {
	if d.CustomerID == "" || d.ProductID == "" {
		return nil, Invalid("product_id", "the review needs a product and a buyer")
	}
	if d.Rating < 1 || d.Rating > 5 {
		return nil, Invalid("rating", "rating is an integer from 1 to 5")
	}
	title, body := StripReviewText(d.Title), StripReviewText(d.Body)
	name := strings.TrimSpace(StripReviewText(d.AuthorName))
	if err := checkReviewText("title", title, MaxReviewTitle, false); err != nil {
		return nil, err
	}
	if err := checkReviewText("body", body, MaxReviewBody, true); err != nil {
		return nil, err
	}
	if err := checkReviewText("author_name", name, MaxReviewAuthor, true); err != nil {
		return nil, err
	}
	email, err := ReviewEmail(d.AuthorEmail)
	if err != nil {
		return nil, err
	}
	if r.ID != "" {
		return nil, Conflict("this customer has already reviewed this product")
	}
	ev := &ReviewSubmitted{ReviewID: ReviewID(d.ShopID, d.CustomerID, d.ProductID), ShopID: d.ShopID, CustomerID: d.CustomerID,
		ProductID: d.ProductID, OrderID: d.VerifyingOrderID, Verified: d.VerifyingOrderID != "", Proof: d.Proof, Rating: d.Rating,
		Title: title, Body: body, AuthorName: name, AuthorEmail: email, SubmittedAt: now.UTC()}
	out := []Event{ev}
	rule := DefaultReviewRule()
	if d.Rule != nil {
		rule = *d.Rule
	}
	if rule.Publishes(ev.Verified, ev.Rating) {
		out = append(out, &ReviewPublished{ReviewID: ev.ReviewID, ShopID: ev.ShopID, Rule: ReviewRuleAuto, PublishedAt: now.UTC()})
	}
	return out, nil
}

// ReviewEmail validates an author's e-mail address (a bare address of at
// most MaxReviewEmail characters) and returns it trimmed and lowercased.
func ReviewEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	a, err := mail.ParseAddress(s)
	if s == "" || err != nil || a.Address != s || len(s) > MaxReviewEmail || a.Name != "" {
		return "", Invalid("author_email", "author_email must be an e-mail address of at most %d characters", MaxReviewEmail)
	}
	return s, nil
}

// PublishReview decides publishing a review (a rejected one too: a
// moderator may change their mind); publishing a published review
// changes nothing.
func PublishReview(r *Review, now time.Time) (Event, error) {
	if r.ID == "" {
		return nil, NotFound("review")
	}
	if r.Status == ReviewStatusPublished {
		return nil, nil
	}
	return &ReviewPublished{ReviewID: r.ID, ShopID: r.ShopID, PublishedAt: now.UTC()}, nil
}

// RejectReview decides rejecting a review for reason (1 to
// MaxReviewReason characters).
func RejectReview(r *Review, reason string, now time.Time) (Event, error) {
	if r.ID == "" {
		return nil, NotFound("review")
	}
	if err := required("reason", reason, MaxReviewReason); err != nil {
		return nil, err
	}
	return &ReviewRejected{ReviewID: r.ID, ShopID: r.ShopID, Reason: reason, RejectedAt: now.UTC()}, nil
}

// ReplyToReview decides the merchant's public reply (markup and links
// stripped, 1 to MaxReviewReply characters).
func ReplyToReview(r *Review, reply string, now time.Time) (Event, error) {
	if r.ID == "" {
		return nil, NotFound("review")
	}
	reply = StripReviewText(reply)
	if err := checkReviewText("reply", reply, MaxReviewReply, true); err != nil {
		return nil, err
	}
	return &ReviewReplied{ReviewID: r.ID, ShopID: r.ShopID, Reply: reply, RepliedAt: now.UTC()}, nil
}

var (
	reviewMarkup = regexp.MustCompile(`<[^>]*>`)
	reviewLink   = regexp.MustCompile(`(?i)\S*://\S*|\bwww\.\S*|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|co|info|biz|ru|xyz|top|shop|store|link|click)\b(?:/\S*)?`)
	reviewSpaces = regexp.MustCompile(`[ \t]{2,}`)
)

// StripReviewText removes markup (anything between < and >, then any
// bracket left), control characters other than newlines and tabs, and
// links (anything with "://", www.…, and host names of common top-level
// domains) from a storefront text, collapses runs of spaces and trims it.
// Invalid UTF-8 is replaced.
func StripReviewText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = reviewMarkup.ReplaceAllString(s, "")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r == '\r' || unicode.IsControl(r) || r == '<' || r == '>' {
			return -1
		}
		return r
	}, s)
	s = reviewLink.ReplaceAllString(s, "")
	return strings.TrimSpace(reviewSpaces.ReplaceAllString(s, " "))
}

func checkReviewText(field, s string, max int, need bool) error {
	if need && s == "" {
		return Invalid(field, "%s is required: 1 to %d characters of text (markup and links are removed)", field, max)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return Invalid(field, "%s has %d characters, at most %d allowed", field, n, max)
	}
	return nil
}

// ReviewProductID returns the product a storefront names: our id (prd_…)
// as it is, or the commerce platform's numeric id (what a theme's
// product.id gives) mapped to ours; "" for anything else.
func ReviewProductID(shopID, s string) string {
	return platformRef(PrefixProduct, s, func(ext string) string { return ProductIDFromExternal(shopID, ext) })
}

// ReviewOrderID is ReviewProductID for an order (ord_… or the platform's
// numeric order id).
func ReviewOrderID(shopID, s string) string {
	return platformRef(PrefixOrder, s, func(ext string) string { return OrderIDFromExternal(shopID, ext) })
}

func platformRef(prefix, s string, fromExternal func(string) string) string {
	if len(s) > 64 || !utf8.ValidString(s) {
		return ""
	}
	if strings.HasPrefix(s, prefix) && len(s) > len(prefix) && strings.IndexFunc(s[len(prefix):], func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	if s == "" || len(s) > 20 || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return ""
	}
	return fromExternal(s)
}
