package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
)

// newShopsRetention is `cgp shops retention [--shop ID]`: the pending
// retention countdowns (app uninstalled, data not erased yet), soonest
// first, as the tenancy read model keeps them.
func newShopsRetention(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "retention", Short: "List the pending retention countdowns after app/uninstalled, with their due dates", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				out, err := app.RetentionCountdowns(cmd.Context(), c.Config, shop)
				if err != nil {
					return err
				}
				return printJSON(stdout, out)
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "only this shop's countdown (shop_…)")
	return cmd
}

// newShopsReinstall is `cgp shops reinstall --shop ID`: the app was
// installed again (the platform's install flow is outside the service),
// which cancels the shop's retention countdown.
func newShopsReinstall(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.ReinstallApp
	cmd := &cobra.Command{Use: "reinstall", Short: "Record that the app was installed again, cancelling the retention countdown", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.ReinstallApp(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": in.ShopID, "installed": true, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	return cmd
}
