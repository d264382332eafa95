package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
)

func newGDPRVerify(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, customer string
	var search []string
	cmd := &cobra.Command{Use: "verify --shop SHOP_ID --customer CUS_ID [--search VALUE]...",
		Short: "Check that a customer's erasure is complete: key shredded, audit entry, read models nulled, no value left in any file",
		Long: `Checks, for an operator or a data-protection officer, that a customers/redact was carried out:
the customer's data key is shredded, the CustomerErased audit entry is in the log, no read model
holds the customer's personal data, identity links and active journey enrollments are gone, no
clean-up is pending, and none of the values given with --search (the e-mail address, names, phone
number the request named) appears in any byte of any file of the data directory (event log, read
models, vault, SQLite WAL files and free pages, idempotency store, everything). Prints a JSON report;
exits 1 when the erasure is not complete.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "customer"); err != nil {
				return err
			}
			if !domain.HasPrefixID(customer, domain.PrefixCustomer) {
				return usageError{errors.New("--customer must be a customer id (cus_…)")}
			}
			for _, v := range search {
				if len(strings.TrimSpace(v)) < 3 {
					return usageError{errors.New("--search values must have at least 3 characters")}
				}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				src, err := app.ErasureSourcesOf(c, *cfg)
				if err != nil {
					return err
				}
				rep, err := app.VerifyErasure(cmd.Context(), src, shop, customer, search)
				if err != nil {
					return err
				}
				if err := printJSON(stdout, rep); err != nil {
					return err
				}
				if !rep.Erased {
					return fmt.Errorf("the erasure of customer %s is not complete", customer)
				}
				return nil
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&customer, "customer", "", "customer id (cus_…)")
	cmd.Flags().StringArrayVar(&search, "search", nil, "a value that must appear in no file (repeatable)")
	cmd.Flags().StringVar(&cfg.Warehouse, "warehouse", app.WarehouseNone, "the warehouse cgp serve ships to (none, sqlite or clickhouse; env CGP_WAREHOUSE): its copy of the profile is checked too")
	cmd.Flags().StringVar(&cfg.WarehouseURL, "warehouse-url", "", "ClickHouse URL with --warehouse clickhouse (env CGP_WAREHOUSE_URL)")
	return cmd
}

// gdprCommands are the subcommands of `cgp gdpr`.
func gdprCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{newGDPRVerify(cfg, stdout, stderr)}
}
