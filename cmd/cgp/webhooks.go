package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// webhooksCommand is `cgp webhooks`, the outbound webhook subscriptions'
// commands. --outbound-allow-private (CGP_OUTBOUND_ALLOW_PRIVATE) lets
// create and update name private addresses and plain http, as on the
// server.
func webhooksCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	run := func(cmd *cobra.Command, fn func(c *Core) (any, error)) error {
		return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
			out, err := fn(c)
			if err != nil {
				return err
			}
			return printJSON(stdout, out)
		})
	}
	var create commands.CreateWebhookSubscription
	createCmd := &cobra.Command{Use: "create", Short: "Subscribe an HTTPS endpoint of a shop to event types; prints the signing secret (shown once)",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "url"); err != nil {
				return err
			}
			create.AllowPrivate = cfg.OutboundAllowPrivate
			return run(cmd, func(c *Core) (any, error) { return app.CreateWebhookSubscription(cmd.Context(), c, create) })
		}}
	f := createCmd.Flags()
	f.StringVar(&create.ShopID, "shop", "", "shop id (shop_…)")
	f.StringVar(&create.URL, "url", "", "the endpoint's https:// URL")
	f.StringSliceVar(&create.EventTypes, "event-types", nil, "event types, comma-separated (order.created,order.paid), or * for all")
	f.StringVar(&create.Description, "description", "", "what the endpoint is for")

	var list struct{ shop string }
	listCmd := &cobra.Command{Use: "list", Short: "List a shop's webhook subscriptions, newest first (never their secrets)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return run(cmd, func(c *Core) (any, error) {
				rows, err := app.WebhookSubscriptions(cmd.Context(), c.Config, list.shop)
				return map[string]any{"shop_id": list.shop, "subscriptions": rows}, err
			})
		}}
	listCmd.Flags().StringVar(&list.shop, "shop", "", "shop id (shop_…)")

	var update commands.UpdateWebhookSubscription
	var url, description string
	var types []string
	var enabled bool
	updateCmd := &cobra.Command{Use: "update", Short: "Change a webhook subscription's URL, event types or description, or enable or disable it",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "id"); err != nil {
				return err
			}
			fl := cmd.Flags()
			update.Patch = domain.WebhookPatch{}
			if fl.Changed("url") {
				update.Patch.URL = &url
			}
			if fl.Changed("event-types") {
				update.Patch.EventTypes = append([]string{}, types...)
			}
			if fl.Changed("description") {
				update.Patch.Description = &description
			}
			if fl.Changed("enabled") {
				update.Patch.Enabled = &enabled
			}
			update.AllowPrivate = cfg.OutboundAllowPrivate
			return run(cmd, func(c *Core) (any, error) { return app.UpdateWebhookSubscription(cmd.Context(), c, update) })
		}}
	f = updateCmd.Flags()
	f.StringVar(&update.ShopID, "shop", "", "shop id (shop_…)")
	f.StringVar(&update.SubscriptionID, "id", "", "subscription id (whs_…)")
	f.StringVar(&url, "url", "", "new https:// URL")
	f.StringSliceVar(&types, "event-types", nil, "new event types, comma-separated, or *")
	f.StringVar(&description, "description", "", "new description")
	f.BoolVar(&enabled, "enabled", true, "--enabled=false stops deliveries, --enabled=true resumes them")

	var rotate commands.RotateWebhookSecret
	var overlap time.Duration
	rotateCmd := &cobra.Command{Use: "rotate-secret", Short: "Give a webhook subscription a new signing secret (shown once); the previous one signs too during the overlap",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "id"); err != nil {
				return err
			}
			rotate.Overlap = &overlap
			return run(cmd, func(c *Core) (any, error) { return app.RotateWebhookSecret(cmd.Context(), c, rotate) })
		}}
	f = rotateCmd.Flags()
	f.StringVar(&rotate.ShopID, "shop", "", "shop id (shop_…)")
	f.StringVar(&rotate.SubscriptionID, "id", "", "subscription id (whs_…)")
	f.DurationVar(&overlap, "overlap", domain.DefaultWebhookSecretOverlap, "how long the previous secret still signs, 0 to 168h")

	var del commands.DeleteWebhookSubscription
	deleteCmd := &cobra.Command{Use: "delete", Short: "Delete a webhook subscription", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "id"); err != nil {
				return err
			}
			return run(cmd, func(c *Core) (any, error) {
				pos, err := app.DeleteWebhookSubscription(cmd.Context(), c, del)
				return map[string]any{"id": del.SubscriptionID, "shop_id": del.ShopID, "deleted": true, "position": pos}, err
			})
		}}
	deleteCmd.Flags().StringVar(&del.ShopID, "shop", "", "shop id (shop_…)")
	deleteCmd.Flags().StringVar(&del.SubscriptionID, "id", "", "subscription id (whs_…)")

	return group("webhooks", "Outbound webhook subscriptions and their deliveries",
		append([]*cobra.Command{createCmd, listCmd, updateCmd, rotateCmd, deleteCmd}, webhookDeliveryCommands(cfg, stdout, stderr)...)...)
}
