package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
)

// The CLI twins of the shop's storefront access settings (issue 20,
// point 4): `cgp shops origins list|add|remove` and `cgp public-keys
// list|rotate|revoke` (beside `public-keys create`). Secrets appear only
// under "token".

func newShopsOrigins(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	return group("origins", "Manage the shop's CORS allow-list (https origins whose pages may call the public endpoints)",
		newOriginsList(cfg, stdout, stderr), newOriginsAdd(cfg, stdout, stderr), newOriginsRemove(cfg, stdout, stderr))
}

func newOriginsList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "list", Short: "List the shop's allowed origins", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				list, err := app.ListAllowedOrigins(cmd.Context(), c, shop)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "allowed_origins": list})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}

func newOriginsAdd(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.AllowOrigin
	cmd := &cobra.Command{Use: "add", Short: "Add an https origin (https://host, no path or port) to the allow-list", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "origin"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.AllowOrigin(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": in.ShopID, "origin": "https://" + res.Host, "host": res.Host,
					"changed": res.Changed, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.Origin, "origin", "", "origin, e.g. https://www.example.com")
	return cmd
}

func newOriginsRemove(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.RemoveOrigin
	cmd := &cobra.Command{Use: "remove", Short: "Remove an origin (https://host or the host) from the allow-list", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "origin"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.RemoveOrigin(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": in.ShopID, "origin": "https://" + res.Host, "host": res.Host,
					"removed": true, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.Origin, "origin", "", "origin, e.g. https://www.example.com")
	return cmd
}

func newPublicKeysList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "list", Short: "List a shop's public keys (never the keys themselves)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				keys, err := app.ListPublicKeys(cmd.Context(), c, shop)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "public_keys": keys})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}

func newPublicKeysRotate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.RotatePublicKey
	cmd := &cobra.Command{Use: "rotate", Short: "Give a public key a new secret (shown once); the old one stops working at once", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "id"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.RotatePublicKey(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": in.KeyID, "shop_id": in.ShopID, "token": res.Token,
					"environment": res.Key.Environment, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.KeyID, "id", "", "public key id (pkk_…)")
	return cmd
}

func newPublicKeysRevoke(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.RevokePublicKey
	cmd := &cobra.Command{Use: "revoke", Short: "Revoke a public key for good", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "id"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.RevokePublicKey(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": in.KeyID, "shop_id": in.ShopID, "revoked": true, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.KeyID, "id", "", "public key id (pkk_…)")
	return cmd
}
