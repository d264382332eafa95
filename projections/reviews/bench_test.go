package reviews_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/reviews"
)

// BenchmarkProductPage reads what GET /api/public/reviews reads for a
// product with 10,000 published reviews: the first page of 20, newest
// first and best first, and the summary.
func BenchmarkProductPage(b *testing.B) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	core := testenv.New(b, func() time.Time { return clock })
	cmds, read := core.Commands, core.ReadSide(b, reviews.Projector(core.Codec))
	q := reviews.NewQueries(read.DB())
	acc, err := cmds.CreateAccount(ctx, commands.CreateAccount{Name: "Acme", Plan: "pro"}, meta())
	if err != nil {
		b.Fatal(err)
	}
	s, err := cmds.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: "bench.example.com", Plan: "pro",
		WebhookSecret: "0123456789abcdef"}, meta())
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	var last commands.Result
	for i := 0; i < n; i++ {
		clock = clock.Add(time.Second)
		last, err = cmds.SubmitReview(ctx, commands.SubmitReview{Draft: domain.ReviewDraft{ShopID: s.ID,
			CustomerID: domain.CustomerIDFromExternal(s.ID, fmt.Sprint(i)), ProductID: "prd_bench", VerifyingOrderID: "ord_1",
			Rating: 4 + i%2, Body: "Fits well, soft linen.", AuthorName: "Buyer", AuthorEmail: "buyer@example.com"}}, meta())
		if err != nil {
			b.Fatal(err)
		}
	}
	read.WaitFor(b, last.Position)
	for _, sort := range []string{reviews.SortNewest, reviews.SortRating} {
		b.Run("page_"+sort, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rows, _, err := q.Reviews(ctx, reviews.ListQuery{Shop: s.ID, Product: "prd_bench", Status: domain.ReviewStatusPublished,
					Public: true, Sort: sort, Desc: true, Limit: 20})
				if err != nil || len(rows) != 20 {
					b.Fatal(len(rows), err)
				}
			}
		})
	}
	b.Run("summary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if sum, err := q.Summary(ctx, s.ID, "prd_bench"); err != nil || sum.Count != n {
				b.Fatal(sum, err)
			}
		}
	})
}
