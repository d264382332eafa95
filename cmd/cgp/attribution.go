package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// newShopsAttribution is `cgp shops attribution`: it sets a shop's
// attribution lookback window (the specification has no attribution write
// scope for an admin API route). Credits computed afterwards use it.
func newShopsAttribution(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, lookback string
	cmd := &cobra.Command{Use: "attribution", Short: "Set a shop's attribution lookback window (1h to 365d, default 30d)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "lookback"); err != nil {
				return err
			}
			d, err := domain.ParseLookback(lookback)
			if err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.SetAttributionLookback(cmd.Context(), commands.SetAttributionLookback{ShopID: shop, Lookback: d}, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": shop, "lookback": domain.FormatLookback(d),
					"lookback_seconds": int64(d.Seconds()), "changed": res.Position != 0, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&lookback, "lookback", "", "lookback window: days (14d), hours (36h) or minutes (90m)")
	return cmd
}
