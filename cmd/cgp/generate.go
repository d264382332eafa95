package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
)

// devCommands returns the CLI commands for development and benchmarks.
func devCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{group("dev", "Development and benchmark tools", newDevGenerate(cfg, stdout, stderr),
		newDevGenerateReviews(cfg, stdout, stderr))}
}

// generateResult is what `cgp dev generate` prints.
type generateResult struct {
	Customers   int     `json:"customers"`
	Orders      int     `json:"orders"`
	Touchpoints int     `json:"touchpoints"`
	Position    uint64  `json:"position"`
	Seconds     float64 `json:"seconds"`
}

func newDevGenerate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	g := app.ShopGenerator{}
	cmd := &cobra.Command{Use: "generate --shop SHOP_ID --customers N --orders M",
		Short: "Record a synthetic shop (customers and their orders) through the command handler, deterministic from --seed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			if err := g.Validate(); err != nil {
				return usageError{err}
			}
			g.Until = time.Now().UTC().Truncate(24 * time.Hour)
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				start := time.Now()
				pos, err := g.Run(cmd.Context(), c.Commands)
				if err != nil {
					return err
				}
				return printJSON(stdout, generateResult{Customers: g.Customers, Orders: g.Orders,
					Touchpoints: g.Orders * g.Touchpoints, Position: pos,
					Seconds: time.Since(start).Seconds()})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&g.Shop, "shop", "", "shop id (shop_…)")
	f.IntVar(&g.Customers, "customers", 1000, "customers to record")
	f.IntVar(&g.Orders, "orders", 5000, "orders to record (each of one of the generated customers)")
	f.IntVar(&g.Touchpoints, "touchpoints-per-order", 0,
		fmt.Sprintf("checkout landings (touchpoints) recorded before each order, within its 30-day window (0 to %d)", app.MaxTouchpointsPerOrder))
	f.Uint64Var(&g.Seed, "seed", 1, "seed of the generated data")
	f.IntVar(&g.Workers, "workers", 16, "concurrent commands (group commit batches their appends)")
	f.BoolVar(&g.Phones, "phones", false, "give every customer a phone number")
	f.BoolVar(&g.WhatsAppOptIn, "whatsapp-opt-in", false, "record a WhatsApp marketing opt-in for every customer who accepts marketing (implies --phones)")
	return cmd
}

// generateReviewsResult is what `cgp dev generate-reviews` prints.
type generateReviewsResult struct {
	ShopID    string  `json:"shop_id"`
	ProductID string  `json:"product_id"`
	Reviews   int     `json:"reviews"`
	Created   int     `json:"created"`
	Existing  int     `json:"existing"`
	Published int     `json:"published"`
	Position  uint64  `json:"position"`
	Seconds   float64 `json:"seconds"`
}

func newDevGenerateReviews(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	g := app.ReviewGenerator{}
	cmd := &cobra.Command{Use: "generate-reviews --shop SHOP_ID --product PRODUCT_ID --reviews N",
		Short: "Record synthetic reviews of a product (each by its own customer) through the command handler, deterministic from --seed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "product"); err != nil {
				return err
			}
			if err := g.Validate(); err != nil {
				return usageError{err}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				start := time.Now()
				res, err := g.Run(cmd.Context(), c)
				if err != nil {
					return err
				}
				return printJSON(stdout, generateReviewsResult{ShopID: g.Shop, ProductID: g.ProductID(), Reviews: g.Reviews,
					Created: res.Created, Existing: res.Existing, Published: res.Published, Position: res.Position,
					Seconds: time.Since(start).Seconds()})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&g.Shop, "shop", "", "shop id (shop_…)")
	f.StringVar(&g.Product, "product", "", "the reviewed product: prd_… or the platform's numeric product id (it need not be synced)")
	f.IntVar(&g.Reviews, "reviews", 10000, "reviews to record, each by its own synthetic customer")
	f.Uint64Var(&g.Seed, "seed", 1, "seed of the generated reviews")
	f.IntVar(&g.Workers, "workers", 16, "concurrent commands (group commit batches their appends)")
	f.BoolVar(&g.PublishAll, "publish-all", true, "publish (as a moderator) every review the shop's auto-publish rule leaves pending")
	return cmd
}
