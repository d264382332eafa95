package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
)

// webhookDeliveryCommands are the delivery side's commands of
// `cgp webhooks`: the attempt log and recover.
func webhookDeliveryCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	var shop, id, state, since string
	var limit int
	list := &cobra.Command{Use: "deliveries", Short: "List a subscription's latest deliveries and their attempts", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "id"); err != nil {
				return err
			}
			out, err := app.WebhookDeliveryList(cmd.Context(), *cfg, shop, id, state, limit)
			if err != nil {
				return err
			}
			return printJSON(stdout, out)
		}}
	recoverCmd := &cobra.Command{Use: "recover", Short: "Deliver again every failed, held or undelivered event since a time", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "id", "since"); err != nil {
				return err
			}
			t, err := time.Parse(time.RFC3339, since)
			if err != nil {
				return usageError{err}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.RedeliverWebhooks(cmd.Context(), commands.RedeliverWebhooks{ShopID: shop, SubscriptionID: id, Since: t}, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"subscription_id": id, "since": t.UTC(), "position": res.Position})
			})
		}}
	for _, c := range []*cobra.Command{list, recoverCmd} {
		c.Flags().StringVar(&shop, "shop", "", "shop id (shop_…) (env CGP_SHOP)")
		c.Flags().StringVar(&id, "id", "", "webhook subscription id (whs_…) (env CGP_ID)")
	}
	list.Flags().StringVar(&state, "state", "", "only deliveries in this state: pending, succeeded, failed, held (env CGP_STATE)")
	list.Flags().IntVar(&limit, "limit", 50, "how many deliveries, the latest first (env CGP_LIMIT)")
	recoverCmd.Flags().StringVar(&since, "since", "", "RFC 3339 time: the events recorded since then (env CGP_SINCE)")
	return []*cobra.Command{list, recoverCmd}
}
