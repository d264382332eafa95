package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/marketplace"
)

// marketplacesCommands returns the CLI commands of marketplaces.
func marketplacesCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{group("marketplaces", "Connect marketplace seller accounts", newMarketplacesConnect(cfg, stdout, stderr))}
}

func newMarketplacesConnect(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.ConnectMarketplace
	var contracts []string
	for _, c := range marketplace.Contracts() {
		contracts = append(contracts, "  "+c.Describe())
	}
	cmd := &cobra.Command{Use: "connect", Short: "Connect a marketplace seller account to a shop (reconnecting rotates its secret)",
		Long: "Connect a seller account of a marketplace to a shop, with the secret the marketplace signs its webhooks with.\n" +
			"Its deliveries are then taken at POST /webhooks/marketplaces/NAME. A seller account belongs to one shop;\n" +
			"the shop holding it connects it again to rotate the secret. The secret is never printed: prefer CGP_SECRET\n" +
			"to --secret, which other users of the machine can see in the process list.\n\nContracts:\n" + strings.Join(contracts, "\n"),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "marketplace", "account-id", "secret"); err != nil {
				return err
			}
			if err := checkMarketplaceCredentials(in); err != nil {
				return usageError{err}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.ConnectMarketplace(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "shop_id": in.ShopID, "marketplace": in.Marketplace,
					"account_id": res.AccountID, "rotated": res.Rotated, "webhook_path": "/webhooks/marketplaces/" + in.Marketplace,
					"position": res.Position})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&in.ShopID, "shop", "", "shop id (shop_…) (env CGP_SHOP)")
	f.StringVar(&in.Marketplace, "marketplace", "", "marketplace: "+strings.Join(domain.Marketplaces(), ", ")+" (env CGP_MARKETPLACE)")
	f.StringVar(&in.AccountID, "account-id", "", "the seller account id the marketplace names in its deliveries (Etsy and TikTok Shop: shop_id) (env CGP_ACCOUNT_ID)")
	f.StringVar(&in.Secret, "secret", "", "the secret the marketplace signs webhooks with (etsy: whsec_…) (env CGP_SECRET, preferred)")
	f.StringVar(&in.AppKey, "app-key", "", "app key, for marketplaces that sign with it (tiktok_shop) (env CGP_APP_KEY)")
	return cmd
}

// checkMarketplaceCredentials refuses, before anything is written, a
// marketplace without a contract and credentials its contract cannot
// verify with (exit 2).
func checkMarketplaceCredentials(in commands.ConnectMarketplace) error {
	c, ok := marketplace.Lookup(in.Marketplace)
	if !ok {
		return fmt.Errorf("unknown marketplace %q: one of %s", in.Marketplace, strings.Join(domain.Marketplaces(), ", "))
	}
	if err := c.CheckCredentials(in.Secret, in.AppKey); err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return fmt.Errorf("--%s: %s", strings.ReplaceAll(de.Field, "_", "-"), de.Message)
		}
		return err
	}
	return nil
}
