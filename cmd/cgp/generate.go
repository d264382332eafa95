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
	return []*cobra.Command{group("dev", "Development and benchmark tools", newDevGenerate(cfg, stdout, stderr))}
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
