package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// MaxGeneratedReviews bounds --reviews of `cgp dev generate-reviews`.
const MaxGeneratedReviews = 1_000_000

// ReviewGenerator records synthetic reviews of one product through the
// command handler (issue 20's figures): the public submission is rate
// limited and needs verified buyers, so a benchmark could not make 10,000
// reviews of a product through it. Review i is by its own synthetic
// customer (gen-r<i>), so one review per customer and product holds; its
// rating (1–5), whether a fulfilled order verifies it and its texts derive
// from the seed and i. The shop's auto-publish rule (read from the log)
// publishes what it publishes; with PublishAll a moderator's publication
// follows every review the rule left pending. A second run appends
// nothing (the reviews exist: their conflict is skipped).
type ReviewGenerator struct {
	Shop    string
	Product string // prd_… or the platform's numeric product id
	Reviews int
	Seed    uint64
	Workers int
	// PublishAll publishes every review the shop's rule leaves pending.
	PublishAll bool
}

// Validate checks the generator's settings (the CLI flags).
func (g *ReviewGenerator) Validate() error {
	switch {
	case domain.ReviewProductID(g.Shop, g.Product) == "":
		return fmt.Errorf("--product must be a product id (prd_…) or the platform's numeric product id")
	case g.Reviews < 0 || g.Reviews > MaxGeneratedReviews:
		return fmt.Errorf("--reviews must be between 0 and %d", MaxGeneratedReviews)
	case g.Workers < 1 || g.Workers > MaxGenerateWorkers:
		return fmt.Errorf("--workers must be between 1 and %d", MaxGenerateWorkers)
	}
	return nil
}

// ProductID is the product the reviews are of (prd_…).
func (g *ReviewGenerator) ProductID() string { return domain.ReviewProductID(g.Shop, g.Product) }

// GeneratedReviews is what a run recorded.
type GeneratedReviews struct {
	Created, Existing, Published int
	Position                     uint64
}

// Run records the reviews and returns what it recorded and the highest
// position appended.
func (g *ReviewGenerator) Run(ctx context.Context, core *Core) (GeneratedReviews, error) {
	rule, err := g.rule(ctx, core)
	if err != nil {
		return GeneratedReviews{}, err
	}
	meta := commands.Meta{Actor: "cli:generate-reviews", Source: "cli"}
	product := g.ProductID()
	var top atomic.Uint64
	var created, existing, published atomic.Int64
	keep := func(res commands.Result) {
		for {
			cur := top.Load()
			if res.Position <= cur || top.CompareAndSwap(cur, res.Position) {
				return
			}
		}
	}
	each := (&ShopGenerator{Workers: g.Workers}).each
	err = each(ctx, g.Reviews, func(i int) error {
		d := g.draft(i, product, &rule)
		res, err := core.Commands.SubmitReview(ctx, commands.SubmitReview{Draft: d}, meta)
		var de *domain.Error
		if errors.As(err, &de) && de.Code == domain.CodeConflict {
			existing.Add(1)
			return nil
		}
		if err != nil {
			return fmt.Errorf("review %d: %w", i, err)
		}
		keep(res)
		created.Add(1)
		if rule.Publishes(d.VerifyingOrderID != "", d.Rating) {
			published.Add(1)
			return nil
		}
		if !g.PublishAll {
			return nil
		}
		res, err = core.Commands.ModerateReview(ctx, commands.ModerateReview{ShopID: g.Shop, ReviewID: res.ID,
			Decide: func(r *domain.Review, now time.Time) (domain.Event, error) { return domain.PublishReview(r, now) }}, meta)
		if err != nil {
			return fmt.Errorf("publish review %d: %w", i, err)
		}
		keep(res)
		published.Add(1)
		return nil
	})
	return GeneratedReviews{Created: int(created.Load()), Existing: int(existing.Load()), Published: int(published.Load()),
		Position: top.Load()}, err
}

// rule is the shop's auto-publish rule: the last one set on its
// review-settings stream, else the default.
func (g *ReviewGenerator) rule(ctx context.Context, core *Core) (domain.ReviewRule, error) {
	rule := domain.DefaultReviewRule()
	evs, err := core.Log.ReadStream(ctx, domain.ReviewSettingsStream(g.Shop), 0, 100_000)
	if err != nil {
		return rule, fmt.Errorf("read the shop's review rule: %w", err)
	}
	for i := range evs {
		dec, err := core.Codec.Decode(ctx, &evs[i])
		if err != nil {
			return rule, fmt.Errorf("read the shop's review rule: %w", err)
		}
		if set, ok := dec.Event.(*domain.ReviewRuleSet); ok {
			rule = set.ReviewRule
		}
	}
	return rule, nil
}

var reviewTitles = []string{"Love it", "Good value", "As described", "Not for me", "Runs small", "Great quality", "Okay", "Would buy again"}

// draft is review i: by customer gen-r<i>, rated 1–5 (more good ratings
// than bad, as on a real shop), verified by a fulfilled order for two in
// three.
func (g *ReviewGenerator) draft(i int, product string, rule *domain.ReviewRule) domain.ReviewDraft {
	r := (&ShopGenerator{Seed: g.Seed}).rng("review", i)
	rating := []int{1, 2, 3, 3, 4, 4, 4, 5, 5, 5, 5, 5}[r.IntN(12)]
	ext := "gen-r" + strconv.Itoa(i)
	d := domain.ReviewDraft{ShopID: g.Shop, CustomerID: domain.CustomerIDFromExternal(g.Shop, ext), ProductID: product,
		Proof: domain.ReviewProofOrder, Rule: rule, Rating: rating,
		Body:        fmt.Sprintf("Synthetic review %d: %s, %d of 5.", i, reviewTitles[r.IntN(len(reviewTitles))], rating),
		AuthorName:  firstNames[r.IntN(len(firstNames))] + " " + lastNames[r.IntN(len(lastNames))][:1] + ".",
		AuthorEmail: fmt.Sprintf("reviewer%d@shop.example.test", i)}
	if r.IntN(3) > 0 {
		d.VerifyingOrderID = domain.OrderIDFromExternal(g.Shop, "gen-ro"+strconv.Itoa(i))
	}
	if r.IntN(2) == 0 {
		d.Title = reviewTitles[r.IntN(len(reviewTitles))]
	}
	return d
}
