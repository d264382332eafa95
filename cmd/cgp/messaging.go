package main

import (
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/ingest/providers"
	"github.com/cgp-platform/cgp/ingest/whatsapp"
)

// messagingCommands returns the CLI commands of messaging.
func messagingCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{group("messaging", "Connect the messaging platform and providers",
		newMessagingConnect(cfg, stdout, stderr), newMessagingConnectProvider(cfg, stdout, stderr))}
}

func newMessagingConnect(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.ConnectWhatsApp
	cmd := &cobra.Command{Use: "connect", Short: "Connect a WhatsApp business account to a shop (again: rotate its secret, verify token and access token)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "business-account-id", "phone-number-id", "app-secret", "verify-token"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.ConnectWhatsApp(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				// The app secret, the verify token and the access token are never printed.
				return printJSON(stdout, map[string]any{"shop_id": in.ShopID, "business_account_id": in.BusinessAccountID,
					"phone_number_id": in.PhoneNumberID, "rotated": res.Rotated, "webhook_path": whatsapp.Path, "position": res.Position})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	f.StringVar(&in.BusinessAccountID, "business-account-id", "", "WhatsApp business account id (digits)")
	f.StringVar(&in.PhoneNumberID, "phone-number-id", "", "business phone number id (digits)")
	f.StringVar(&in.AppSecret, "app-secret", "", "app secret the platform signs deliveries with (prefer the env twin CGP_APP_SECRET)")
	f.StringVar(&in.VerifyToken, "verify-token", "", "verify token of the subscription handshake (prefer the env twin CGP_VERIFY_TOKEN)")
	f.StringVar(&in.AccessToken, "access-token", "", "business account's access token messages are sent with; omitted: none, or the current one kept (prefer the env twin CGP_ACCESS_TOKEN)")
	return cmd
}

func newMessagingConnectProvider(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.ConnectMessagingProvider
	cmd := &cobra.Command{Use: "connect-provider", Short: "Mint the callback token of a messaging provider (shown once; again: rotate it)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "provider"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.ConnectMessagingProvider(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				path := strings.Replace(providers.Path, "{provider}", in.Provider, 1) + "?" +
					url.Values{providers.TokenParameter: {res.Token}}.Encode()
				return printJSON(stdout, map[string]any{"shop_id": in.ShopID, "provider": in.Provider, "token": res.Token,
					"callback_path": path, "rotated": res.Rotated, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.Provider, "provider", "", "provider name: a lowercase letter, then lowercase letters, digits, '_' or '-'")
	return cmd
}
