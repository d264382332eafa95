package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
)

// newShopsPrivacy is `cgp shops privacy`: it sets where the shop's data
// exports go and prints the new signing secret once. A flag left out
// keeps its current value; an empty one clears it.
func newShopsPrivacy(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, url, email string
	cmd := &cobra.Command{Use: "privacy", Short: "Set a shop's data-request URL and contact e-mail; prints a new signing secret (shown once)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			in := app.PrivacyChange{ShopID: shop}
			if cmd.Flags().Changed("data-request-url") {
				in.DataRequestURL = &url
			}
			if cmd.Flags().Changed("contact-email") {
				in.ContactEmail = &email
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := app.ChangePrivacySettings(cmd.Context(), c, in, cfg.OutboundAllowPrivate)
				if err != nil {
					return err
				}
				return printJSON(stdout, res)
			})
		}}
	f := cmd.Flags()
	f.StringVar(&shop, "shop", "", "shop id (shop_…)")
	f.StringVar(&url, "data-request-url", "", "HTTPS URL that receives the signed data exports; empty: e-mail them")
	f.StringVar(&email, "contact-email", "", "e-mail address that receives the data exports when no URL is set; empty: the shop's contact e-mail")
	return cmd
}

// newGDPRRequests is `cgp gdpr requests --shop ID`: the shop's GDPR
// requests with their delivery status, as the read model keeps them.
func newGDPRRequests(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "requests", Short: "List a shop's GDPR data requests and their delivery status", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				rows, err := app.GDPRRequests(cmd.Context(), c.Config, shop)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "requests": rows})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}
