package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
)

// imagesCommand is `cgp images`: the operators' view of the image
// operations.
func imagesCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	g := &cobra.Command{Use: "images", Short: "Image operations (background removal, upscaling, lifestyle scenes)"}
	g.AddCommand(shopListCommand(stdout, "operations", "List a shop's image operations, newest first, as GET /api/v1/images shows them",
		domain.ImageStatuses(), func(ctx context.Context, shop, status string, limit int) (any, error) {
			return app.ImageOperations(ctx, *cfg, shop, status, limit)
		}))
	return g
}

// shopListCommand is a `list` subcommand of a shop's resources read from
// the read models: --shop (required), --status (one of statuses), --limit
// (1 to 1000, default 100); it prints {"shop_id", what: rows}.
func shopListCommand(stdout io.Writer, what, short string, statuses []string,
	list func(ctx context.Context, shop, status string, limit int) (any, error)) *cobra.Command {
	var shop, status string
	var limit int
	choices := strings.Join(statuses, ", ")
	cmd := &cobra.Command{Use: "list", Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return usageError{fmt.Errorf("--limit must be from 1 to 1000")}
			}
			if status != "" && !slices.Contains(statuses, status) {
				return usageError{fmt.Errorf("--status must be one of %s", choices)}
			}
			rows, err := list(cmd.Context(), shop, status, limit)
			if err != nil {
				return err
			}
			return printJSON(stdout, map[string]any{"shop_id": shop, what: rows})
		}}
	f := cmd.Flags()
	f.StringVar(&shop, "shop", "", "shop id (shop_…)")
	f.StringVar(&status, "status", "", "only "+what+" in this status: "+choices)
	f.IntVar(&limit, "limit", 100, "most "+what+" listed (1 to 1000)")
	return cmd
}
