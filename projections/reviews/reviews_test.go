package reviews_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/reviews"
)

func meta() commands.Meta { return commands.Meta{Actor: "test", Source: "cli"} }

// TestReviewsFold folds submissions (auto-published or pending),
// moderation, a customer's erasure and a shop's erasure into the read
// model, and reads it back in pages by both sorts and as a summary.
func TestReviewsFold(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	cmds, read := core.Commands, core.ReadSide(t, reviews.Projector(core.Codec))
	q := reviews.NewQueries(read.DB())
	var last eventlog.Position
	done := func(res commands.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, res.Position)
		read.WaitFor(t, last)
	}
	acc, err := cmds.CreateAccount(ctx, commands.CreateAccount{Name: "Acme", Plan: "pro"}, meta())
	if err != nil {
		t.Fatal(err)
	}
	var shops []string
	for _, d := range []string{"a.example.com", "b.example.com"} {
		s, err := cmds.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: d, Plan: "pro", WebhookSecret: "0123456789abcdef"}, meta())
		if err != nil {
			t.Fatal(err)
		}
		shops = append(shops, s.ID)
	}
	a, b := shops[0], shops[1]
	submit := func(shop string, customer int, product string, rating int, verified bool) string {
		t.Helper()
		d := domain.ReviewDraft{ShopID: shop, CustomerID: domain.CustomerIDFromExternal(shop, fmt.Sprint(customer)), ProductID: product,
			Proof: domain.ReviewProofToken, Rating: rating, Title: "T", Body: fmt.Sprintf("body %d", customer),
			AuthorName: fmt.Sprintf("Author %d", customer), AuthorEmail: fmt.Sprintf("c%d@example.com", customer)}
		if verified {
			d.VerifyingOrderID = "ord_1"
		}
		clock = clock.Add(time.Minute)
		res, err := cmds.SubmitReview(ctx, commands.SubmitReview{Draft: d}, meta())
		done(res, err)
		return res.ID
	}
	r1 := submit(a, 1, "prd_1", 5, true)  // published
	r2 := submit(a, 2, "prd_1", 4, true)  // published
	r3 := submit(a, 3, "prd_1", 2, true)  // pending
	r4 := submit(a, 4, "prd_1", 5, false) // pending
	submit(a, 5, "prd_2", 5, true)
	submit(b, 1, "prd_1", 1, true)
	if _, err := cmds.SubmitReview(ctx, commands.SubmitReview{Draft: domain.ReviewDraft{ShopID: a,
		CustomerID: domain.CustomerIDFromExternal(a, "1"), ProductID: "prd_1", Rating: 3, Body: "again", AuthorName: "x",
		AuthorEmail: "x@example.com"}}, meta()); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("second review of a product: %v", err)
	}

	sum, err := q.Summary(ctx, a, "prd_1")
	if err != nil || sum.Count != 2 || sum.Average != 4.5 || sum.Histogram != [5]int{0, 0, 0, 1, 1} {
		t.Fatalf("summary %+v %v", sum, err)
	}
	if s, _ := q.Summary(ctx, a, ""); s.Count != 3 {
		t.Fatalf("shop-wide summary %+v", s)
	}
	page := func(lq reviews.ListQuery) []string {
		t.Helper()
		var ids []string
		for {
			rows, next, err := q.Reviews(ctx, lq)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				ids = append(ids, r.ID)
			}
			if next == nil {
				return ids
			}
			lq.After = next
		}
	}
	if got := page(reviews.ListQuery{Shop: a, Product: "prd_1", Limit: 1, Desc: true}); fmt.Sprint(got) != fmt.Sprint([]string{r4, r3, r2, r1}) {
		t.Fatalf("newest first: %v", got)
	}
	if got := page(reviews.ListQuery{Shop: a, Product: "prd_1", Limit: 1, Desc: true, Sort: reviews.SortRating}); fmt.Sprint(got) != fmt.Sprint([]string{r4, r1, r2, r3}) {
		t.Fatalf("best first: %v", got)
	}
	if got := page(reviews.ListQuery{Shop: a, Product: "prd_1", Status: domain.ReviewStatusPublished, Limit: 10}); fmt.Sprint(got) != fmt.Sprint([]string{r1, r2}) {
		t.Fatalf("published: %v", got)
	}

	// Helpfulness votes: one per voter per review (a repeat appends
	// nothing and reports the first vote); only a published review of the
	// shop takes votes; the most helpful first, ties by the newest.
	vote := func(shop, id, voter string) commands.Result {
		t.Helper()
		res, err := cmds.MarkReviewHelpful(ctx, commands.MarkReviewHelpful{ShopID: shop, ReviewID: id, Voter: voter}, meta())
		done(res, err)
		return res
	}
	voter := func(i int) string { return fmt.Sprintf("%032x", i) }
	first := vote(a, r1, voter(1))
	head, err := core.Log.HeadPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again := vote(a, r1, voter(1)); again.Position != first.Position || again.ID != r1 {
		t.Fatalf("a repeated vote: %+v, first %+v", again, first)
	}
	if now, _ := core.Log.HeadPosition(ctx); now != head {
		t.Fatalf("a repeated vote appended: head %d, was %d", now, head)
	}
	if v, _ := q.Review(ctx, a, r1); v.HelpfulCount != 1 {
		t.Fatalf("helpful count after a repeat %+v", v)
	}
	vote(a, r2, voter(1))
	vote(a, r2, voter(2))
	for _, c := range []struct{ shop, id string }{{a, r3}, {b, r1}, {a, "rev_unknown"}} {
		if _, err := cmds.MarkReviewHelpful(ctx, commands.MarkReviewHelpful{ShopID: c.shop, ReviewID: c.id, Voter: voter(1)}, meta()); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Fatalf("a vote on %s of %s: %v", c.id, c.shop, err)
		}
	}
	if v, _ := q.Review(ctx, a, r2); v.HelpfulCount != 2 {
		t.Fatalf("helpful count %+v", v)
	}
	if got := page(reviews.ListQuery{Shop: a, Product: "prd_1", Limit: 1, Desc: true, Sort: reviews.SortHelpful}); fmt.Sprint(got) != fmt.Sprint([]string{r2, r1, r4, r3}) {
		t.Fatalf("most helpful first: %v", got)
	}
	if got := page(reviews.ListQuery{Shop: a, Product: "prd_1", Limit: 1, Sort: reviews.SortHelpful}); fmt.Sprint(got) != fmt.Sprint([]string{r3, r4, r1, r2}) {
		t.Fatalf("least helpful first: %v", got)
	}

	// Moderation.
	moderate := func(id string, decide func(*domain.Review, time.Time) (domain.Event, error)) {
		t.Helper()
		done(cmds.ModerateReview(ctx, commands.ModerateReview{ShopID: a, ReviewID: id, Decide: decide}, meta()))
	}
	moderate(r4, domain.PublishReview)
	moderate(r3, func(r *domain.Review, now time.Time) (domain.Event, error) {
		return domain.RejectReview(r, "off topic", now)
	})
	moderate(r1, func(r *domain.Review, now time.Time) (domain.Event, error) {
		return domain.ReplyToReview(r, "Thanks!", now)
	})
	if _, err := cmds.ModerateReview(ctx, commands.ModerateReview{ShopID: b, ReviewID: r1, Decide: domain.PublishReview}, meta()); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's review: %v", err)
	}
	v1, _ := q.Review(ctx, a, r1)
	v3, _ := q.Review(ctx, a, r3)
	v4, _ := q.Review(ctx, a, r4)
	if v1.Reply != "Thanks!" || v3.Status != domain.ReviewStatusRejected || v3.Reason != "off topic" || v4.Status != domain.ReviewStatusPublished ||
		v4.Verified || v1.AuthorName != "Author 1" || v1.Body != "body 1" {
		t.Fatalf("moderated %+v %+v %+v", v1, v3, v4)
	}

	// The author's erasure nulls the texts and the name; the rating counts.
	done(cmds.RecordCustomerErased(ctx, commands.RecordCustomerErased{Erased: domain.CustomerErased{ShopID: a,
		CustomerID: domain.CustomerIDFromExternal(a, "1"), RequestEventID: "req-1"}}, meta()))
	if n, err := q.TextsLeft(ctx, a, domain.CustomerIDFromExternal(a, "1")); err != nil || n != 0 {
		t.Fatalf("texts left %d %v", n, err)
	}
	if v, _ := q.Review(ctx, a, r1); !v.Redacted || v.AuthorName != "" || v.Title != "" || v.Body != "" || v.Rating != 5 {
		t.Fatalf("erased review %+v", v)
	}
	if s, _ := q.Summary(ctx, a, "prd_1"); s.Count != 3 {
		t.Fatalf("summary after the erasure %+v", s)
	}
	if got := page(reviews.ListQuery{Shop: a, Product: "prd_1", Status: domain.ReviewStatusPublished, Public: true, Limit: 10}); fmt.Sprint(got) != fmt.Sprint([]string{r2, r4}) {
		t.Fatalf("public list after the erasure: %v", got)
	}
	if n, _ := q.TextsLeft(ctx, b, domain.CustomerIDFromExternal(b, "1")); n != 1 {
		t.Fatalf("the other shop's review lost its texts: %d", n)
	}

	// The shop's auto-publish rule: the default until set, then the set
	// one, per shop; an out-of-range rating is refused.
	if rule, at, err := q.Rule(ctx, a); err != nil || rule != domain.DefaultReviewRule() || !at.IsZero() {
		t.Fatalf("default rule %+v %v %v", rule, at, err)
	}
	lax := domain.ReviewRule{Enabled: true, RequireVerified: false, MinRating: 3}
	done(cmds.SetReviewRule(ctx, commands.SetReviewRule{ShopID: a, Rule: lax}, meta()))
	if rule, at, err := q.Rule(ctx, a); err != nil || rule != lax || at.IsZero() {
		t.Fatalf("set rule %+v %v %v", rule, at, err)
	}
	if rule, _, _ := q.Rule(ctx, b); rule != domain.DefaultReviewRule() {
		t.Fatalf("the other shop's rule %+v", rule)
	}
	if _, err := cmds.SetReviewRule(ctx, commands.SetReviewRule{ShopID: a, Rule: domain.ReviewRule{MinRating: 0}}, meta()); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("min rating 0: %v", err)
	}
	if !lax.Publishes(false, 3) || lax.Publishes(false, 2) || domain.DefaultReviewRule().Publishes(false, 5) ||
		(domain.ReviewRule{MinRating: 1}).Publishes(true, 5) {
		t.Fatal("ReviewRule.Publishes")
	}

	// The shop's erasure deletes its rows.
	done(cmds.EraseShop(ctx, commands.EraseShop{ShopID: a, Reason: domain.ShopErasedRedact}, meta()))
	if s, _ := q.Summary(ctx, a, ""); s.Count != 0 {
		t.Fatalf("reviews of the erased shop: %+v", s)
	}
	if got := page(reviews.ListQuery{Shop: b, Limit: 10}); len(got) != 1 {
		t.Fatalf("the other shop's reviews: %v", got)
	}
}
