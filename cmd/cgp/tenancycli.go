package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
)

// requireKnownShops makes every command of the tree that takes --shop
// check, before it runs, that the shop exists: one check for all of them
// (and for commands added later), so no command answers an unknown shop
// with an empty or "intact" result.
func requireKnownShops(cmd *cobra.Command, cfg *Config) {
	for _, sub := range cmd.Commands() {
		requireKnownShops(sub, cfg)
	}
	if cmd.Flags().Lookup("shop") == nil || cmd.RunE == nil {
		return
	}
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if shop, _ := cmd.Flags().GetString("shop"); shop != "" {
			if err := checkShopExists(cmd.Context(), cfg, shop); err != nil {
				return err
			}
		}
		return run(cmd, args)
	}
}

// checkShopExists reports app.ErrUnknownShop, with a hint, when no shop
// stream of the configured log holds shop.
func checkShopExists(ctx context.Context, cfg *Config, shop string) error {
	return withCore(ctx, cfg, io.Discard, func(c *Core) error { return app.CheckShopExists(ctx, c, shop) })
}

// ShopListing is one shop of `cgp shops list` (app.ShopListing).
type ShopListing = app.ShopListing

func newShopsList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var account string
	cmd := &cobra.Command{Use: "list", Short: "List the shops of the data directory (ids, domains, plans; never secrets)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				_, shops, err := app.ListTenancy(cmd.Context(), c)
				if err != nil {
					return err
				}
				if account != "" {
					kept := shops[:0]
					for _, s := range shops {
						if s.AccountID == account {
							kept = append(kept, s)
						}
					}
					shops = kept
				}
				return printJSON(stdout, map[string]any{"shops": shops})
			})
		}}
	cmd.Flags().StringVar(&account, "account", "", "only the shops of this account (acc_…)")
	return cmd
}

func newAccountsList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List the accounts of the data directory", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				accounts, _, err := app.ListTenancy(cmd.Context(), c)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"accounts": accounts})
			})
		}}
	return cmd
}
