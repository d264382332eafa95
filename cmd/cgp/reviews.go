package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
)

// reviewsCommand is `cgp reviews`: the CLI twins of the review moderation
// (list, publish, reject, reply) and of the shop's auto-publish rule.
func reviewsCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	g := &cobra.Command{Use: "reviews", Short: "Product reviews: list, publish, reject, reply, auto-publish rule"}
	g.AddCommand(shopListCommand(stdout, "reviews", "List a shop's reviews, newest first, as GET /api/v1/reviews shows them",
		domain.ReviewStatuses(), func(ctx context.Context, shop, status string, limit int) (any, error) {
			return app.Reviews(ctx, *cfg, shop, status, limit)
		}))
	for _, a := range []struct{ action, short, textFlag, textHelp string }{
		{"publish", "Publish a review on the storefront", "", ""},
		{"reject", "Reject a review with a reason", "reason", "why (1 to 500 characters, for the moderators)"},
		{"reply", "Answer a review publicly", "body", "the reply (1 to 5000 characters, markup and links removed)"},
	} {
		var shop, review, text string
		cmd := &cobra.Command{Use: a.action, Short: a.short, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				need := []string{"shop", "review"}
				if a.textFlag != "" {
					need = append(need, a.textFlag)
				}
				if err := requireFlags(cmd, need...); err != nil {
					return err
				}
				return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
					res, err := app.ModerateReview(cmd.Context(), c, shop, review, a.action, text)
					if err != nil {
						return err
					}
					return printJSON(stdout, map[string]any{"id": review, "action": a.action, "position": res.Position})
				})
			}}
		f := cmd.Flags()
		f.StringVar(&shop, "shop", "", "shop id (shop_…)")
		f.StringVar(&review, "review", "", "review id (rev_…)")
		if a.textFlag != "" {
			f.StringVar(&text, a.textFlag, "", a.textHelp)
		}
		g.AddCommand(cmd)
	}
	var ruleShop string
	var enabled, verified bool
	var minRating int
	settings := &cobra.Command{Use: "settings", Short: "Change a shop's auto-publish rule (a flag left out keeps its setting)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			fl := cmd.Flags()
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				rule, res, err := app.SetReviewRule(cmd.Context(), c, ruleShop, func(r *domain.ReviewRule) {
					if fl.Changed("auto-publish") {
						r.Enabled = enabled
					}
					if fl.Changed("require-verified") {
						r.RequireVerified = verified
					}
					if fl.Changed("min-rating") {
						r.MinRating = minRating
					}
				})
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": ruleShop, "auto_publish": rule, "position": res.Position})
			})
		}}
	f := settings.Flags()
	f.StringVar(&ruleShop, "shop", "", "shop id (shop_…)")
	f.BoolVar(&enabled, "auto-publish", true, "publish reviews the rule matches at once (false: every review waits for moderation)")
	f.BoolVar(&verified, "require-verified", true, "only verified reviews are published at once")
	f.IntVar(&minRating, "min-rating", 4, "the least rating published at once (1 to 5)")
	g.AddCommand(settings)
	return g
}
