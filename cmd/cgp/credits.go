package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/commands"
)

// newShopsCredits is `cgp shops credits`: it sets a shop's monthly AI
// credit budget (--monthly N) or drops the override (--plan-default), and
// prints the budget in force with the current month's use.
func newShopsCredits(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	var monthly int
	var planDefault bool
	cmd := &cobra.Command{Use: "credits", Short: "Set a shop's monthly AI credit budget (--monthly N or --plan-default) and show the month's use", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			set := cmd.Flags().Changed("monthly")
			if set == planDefault {
				return usageError{errors.New("give exactly one of --monthly N and --plan-default")}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				budget := commands.SetCreditBudget{ShopID: shop}
				if set {
					budget.Monthly = &monthly
				}
				res, _, err := c.Commands.SetCreditBudget(cmd.Context(), budget, cliMeta())
				if err != nil {
					return err
				}
				bal, override, err := c.Commands.ShopCredits(cmd.Context(), shop)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": shop, "monthly_override": override, "budget": bal.Budget,
					"month": bal.Month, "used": bal.Used, "reserved": bal.Reserved, "remaining": bal.Remaining,
					"resets_at": bal.ResetsAt, "changed": res.Position != 0, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	cmd.Flags().IntVar(&monthly, "monthly", 0, "monthly budget in credits (0 to 10000000), overriding the plan's")
	cmd.Flags().BoolVar(&planDefault, "plan-default", false, "drop the override: the plan's budget applies again")
	return cmd
}
