package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks a failure of the command line itself (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Run executes the command line args and returns the exit code. Results go
// to stdout as one JSON object; errors go to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunStdin(ctx, args, os.Stdin, stdout, stderr)
}

// RunStdin is Run reading standard input from stdin (`cgp users create
// --password-stdin`).
func RunStdin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "cgp:", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) || domain.ErrorCode(err) == domain.CodeInvalid {
		return exitUsage // a flag value the command cannot accept is bad usage too
	}
	return exitFailure
}

// isCobraUsage recognises cobra's own argument errors (unknown command or
// flag, missing required flag), which it reports as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown command", "unknown flag", "unknown shorthand", "required flag", "accepts ", "invalid argument", "flag needs an argument"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	cfg := &Config{}
	root := &cobra.Command{
		Use:           "cgp",
		Short:         "Commerce-growth platform service",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), os.LookupEnv); err != nil {
				return usageError{err}
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			return nil
		},
	}
	bindCommon(cfg, root.PersistentFlags())
	root.AddCommand(
		newServeCommand(cfg, stdout, stderr),
		group("accounts", "Manage accounts", newAccountsCreate(cfg, stdout, stderr), newAccountsList(cfg, stdout, stderr)),
		group("shops", "Manage shops", newShopsCreate(cfg, stdout, stderr), newShopsSetPlan(cfg, stdout, stderr),
			newShopsAttribution(cfg, stdout, stderr), newShopsCredits(cfg, stdout, stderr), newShopsRetention(cfg, stdout, stderr), newShopsReinstall(cfg, stdout, stderr),
			newShopsPrivacy(cfg, stdout, stderr), newShopsNotifications(cfg, stdout, stderr), newShopsList(cfg, stdout, stderr), newShopsOrigins(cfg, stdout, stderr)),
		group("tokens", "Manage admin API tokens", newTokensCreate(cfg, stdout, stderr), newTokensCreateMaster(cfg, stdout, stderr),
			newTokensRevoke(cfg, stdout, stderr), newTokensList(cfg, stdout, stderr)),
		group("public-keys", "Manage storefront public keys", newPublicKeysCreate(cfg, stdout, stderr), newPublicKeysList(cfg, stdout, stderr),
			newPublicKeysRotate(cfg, stdout, stderr), newPublicKeysRevoke(cfg, stdout, stderr)),
		group("image-keys", "Manage image-operations API keys", newImageKeysMint(cfg, stdout, stderr), newImageKeysImport(cfg, stdout, stderr),
			newImageKeysRevoke(cfg, stdout, stderr)),
		group("audit", "Check the event history", newAuditVerify(cfg, stdout, stderr)),
		group("gdpr", "Personal-data requests and erasure", append(gdprCommands(cfg, stdout, stderr), newGDPRRequests(cfg, stdout, stderr))...),
		newReplayCommand(cfg, stdout, stderr),
		usersCommand(cfg, stdout, stderr),
	)
	root.AddCommand(messagingCommands(cfg, stdout, stderr)...)
	root.AddCommand(marketplacesCommands(cfg, stdout, stderr)...)
	root.AddCommand(intelligenceCommands(cfg, stdout, stderr)...)
	root.AddCommand(devCommands(cfg, stdout, stderr)...)
	root.AddCommand(webhooksCommand(cfg, stdout, stderr))
	root.AddCommand(imagesCommand(cfg, stdout, stderr))
	root.AddCommand(reviewsCommand(cfg, stdout, stderr))
	requireKnownShops(root, cfg)
	return root
}

func group(name, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: name, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("%s: missing subcommand", name)}
		}}
	g.AddCommand(subs...)
	return g
}

// withCore opens the core for a one-shot command.
func withCore(ctx context.Context, cfg *Config, stderr io.Writer, fn func(*Core) error) error {
	core, err := OpenCore(ctx, *cfg, newLogger(cfg, stderr))
	if err != nil {
		return err
	}
	return errors.Join(fn(core), core.Close())
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func cliMeta() commands.Meta { return commands.Meta{Actor: "cli", Source: "cli"} }

func requireFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		cmd.Flags().Lookup(n)
		if v, _ := cmd.Flags().GetString(n); v == "" {
			return usageError{fmt.Errorf("flag --%s is required", n)}
		}
	}
	return nil
}

func newAccountsCreate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var name, plan string
	cmd := &cobra.Command{Use: "create", Short: "Create an account", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "name", "plan"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.CreateAccount(cmd.Context(), commands.CreateAccount{Name: name, Plan: plan}, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "name": name, "plan": plan, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&name, "name", "", "account name")
	cmd.Flags().StringVar(&plan, "plan", "", "plan: starter, growth, pro, pro_plus, agency, enterprise")
	return cmd
}

func newShopsCreate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.CreateShop
	cmd := &cobra.Command{Use: "create", Short: "Create a shop", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "account", "domain", "plan", "webhook-secret"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.CreateShop(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "account_id": in.AccountID, "domain": in.Domain, "plan": in.Plan, "position": res.Position})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&in.AccountID, "account", "", "account id (acc_…)")
	f.StringVar(&in.Domain, "domain", "", "shop domain, e.g. example.myshopify.com")
	f.StringVar(&in.Plan, "plan", "", "plan: starter, growth, pro, pro_plus, agency, enterprise")
	f.StringVar(&in.WebhookSecret, "webhook-secret", "", "secret the commerce platform signs webhooks with (16 to 256 characters)")
	f.StringVar(&in.ContactEmail, "contact-email", "", "merchant contact e-mail")
	f.StringSliceVar(&in.CORSAllowList, "cors-allow-list", nil, "storefront domains allowed to call the public endpoints")
	return cmd
}

func newTokensCreate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.IssueToken
	var scopes string
	cmd := &cobra.Command{Use: "create", Short: "Create an admin API token (shown once)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "scopes"); err != nil {
				return err
			}
			in.Scopes = strings.Split(scopes, ",")
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.IssueToken(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "shop_id": in.ShopID, "token": res.Token, "scopes": in.Scopes, "environment": in.Environment, "position": res.Position})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	f.StringVar(&scopes, "scopes", "", "comma-separated scopes, e.g. customers:read,customers:write, or *")
	f.StringVar(&in.Environment, "env", "live", "token environment: live or test")
	f.StringVar(&in.Name, "name", "", "a name to recognise the token by")
	return cmd
}

func newAuditVerify(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "verify", Short: "Recompute the hash chains of a shop's event history", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				rep, err := app.VerifyShop(cmd.Context(), c, shop)
				if err != nil {
					return err
				}
				if err := printJSON(stdout, rep); err != nil {
					return err
				}
				if !rep.Intact {
					return fmt.Errorf("history of shop %s is not intact: %s", shop, rep.Problem)
				}
				return nil
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}

func newTokensCreateMaster(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.IssueMasterToken
	cmd := &cobra.Command{Use: "create-master", Short: "Create an account master token (enterprise; shown once)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "account"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.IssueMasterToken(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "account_id": in.AccountID, "token": res.Token, "environment": in.Environment, "position": res.Position})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&in.AccountID, "account", "", "account id (acc_…)")
	f.StringVar(&in.Environment, "env", "live", "token environment: live or test")
	f.StringVar(&in.Name, "name", "", "a name to recognise the token by")
	return cmd
}

func newTokensRevoke(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var id string
	cmd := &cobra.Command{Use: "revoke", Short: "Revoke an admin token for good", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "token-id"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.RevokeToken(cmd.Context(), commands.RevokeToken{TokenID: id}, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": id, "revoked": true, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&id, "token-id", "", "token id (tok_…)")
	return cmd
}

func newShopsSetPlan(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.ChangeShopPlan
	cmd := &cobra.Command{Use: "set-plan", Short: "Move a shop to another plan", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "plan"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.ChangeShopPlan(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": in.ShopID, "plan": in.Plan, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.Plan, "plan", "", "plan: starter, growth, pro, pro_plus, agency, enterprise")
	return cmd
}

func newPublicKeysCreate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.IssuePublicKey
	cmd := &cobra.Command{Use: "create", Short: "Create a storefront public key pk_… (shown once)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.IssuePublicKey(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "shop_id": in.ShopID, "token": res.Token, "environment": in.Environment, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.Environment, "env", "live", "key environment: live or test")
	return cmd
}

func newImageKeysRevoke(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.RevokeImageKey
	cmd := &cobra.Command{Use: "revoke", Short: "Revoke an image-operations API key for good", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "key-id"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.RevokeImageKey(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": in.KeyID, "shop_id": in.ShopID, "revoked": true, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.KeyID, "key-id", "", "image-key id (cik_id_…)")
	return cmd
}

func newImageKeysMint(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, scopes string
	cmd := &cobra.Command{Use: "mint", Short: "Mint an image-operations API key (shown once)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			in := commands.MintImageKey{ShopID: shop}
			if cmd.Flags().Changed("scopes") {
				in.Scopes = []string{} // --scopes "" is an inert key
				for _, s := range strings.Split(scopes, ",") {
					if s = strings.TrimSpace(s); s != "" {
						in.Scopes = append(in.Scopes, s)
					}
				}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.MintImageKey(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				for _, s := range res.Scopes {
					if domain.ImageScopeMutating(s) {
						fmt.Fprintf(stderr, "warning: scope %s lets this key run image operations that spend the shop's AI credits\n", s)
					}
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "shop_id": shop, "token": res.Token, "scopes": res.Scopes, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&scopes, "scopes", "", `comma-separated scopes: usage:read, images:read, images:write, *; omitted: read-only; "" grants nothing`)
	return cmd
}

func newImageKeysImport(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.ImportImageKey
	cmd := &cobra.Command{Use: "import", Short: "Import a key of the system before scopes, by its SHA-256 (no scopes recorded)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "sha256"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.ImportImageKey(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": res.ID, "shop_id": in.ShopID, "scopes": nil, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&in.SHA256, "sha256", "", "hex SHA-256 of the existing raw key")
	return cmd
}

func newTokensList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "list", Short: "List a shop's admin tokens (never the tokens themselves)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				tokens, err := app.ListTokens(cmd.Context(), c, shop)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "tokens": tokens})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}
