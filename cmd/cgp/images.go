package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
)

// imagesCommand is `cgp images`: the operators' view of the image
// operations.
func imagesCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	g := &cobra.Command{Use: "images", Short: "Image operations (background removal, upscaling, lifestyle scenes)"}
	var shop, status string
	var limit int
	list := &cobra.Command{Use: "list", Short: "List a shop's image operations, newest first, as GET /api/v1/images shows them",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return usageError{fmt.Errorf("--limit must be from 1 to 1000")}
			}
			if status != "" && !slices.Contains(domain.ImageStatuses(), status) {
				return usageError{fmt.Errorf("--status must be one of queued, processing, succeeded, failed")}
			}
			ops, err := app.ImageOperations(cmd.Context(), *cfg, shop, status, limit)
			if err != nil {
				return err
			}
			return printJSON(stdout, map[string]any{"shop_id": shop, "operations": ops})
		}}
	f := list.Flags()
	f.StringVar(&shop, "shop", "", "shop id (shop_…)")
	f.StringVar(&status, "status", "", "only operations in this status: queued, processing, succeeded or failed")
	f.IntVar(&limit, "limit", 100, "most operations listed (1 to 1000)")
	g.AddCommand(list)
	return g
}
