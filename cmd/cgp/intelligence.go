package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/intelligence"
)

// intelligenceCommands returns the CLI commands of intelligence.
func intelligenceCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{
		group("seo", "SEO intelligence", newSEOImport(cfg, stdout, stderr)),
		group("di", "Decision intelligence", newDIRun(cfg, stdout, stderr)),
	}
}

func newSEOImport(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "import --shop SHOP_ID FILE.csv",
		Short: "Import a keyword ranking report (CSV with header: keyword, url, position, search_volume, clicks, impressions, date); all rows or none",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return usageError{fmt.Errorf("open report: %w", err)}
			}
			defer f.Close()
			rows, err := intelligence.ParseRankings(f)
			if err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.RecordKeywordRankings(cmd.Context(), commands.RecordKeywordRankings{ShopID: shop, Rankings: rows}, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "rows": len(rows), "keywords": res.Keywords,
					"appended": res.Appended, "unchanged": res.Unchanged, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}

// newDIRun is `cgp di run --shop SHOP_ID`: one decision-intelligence run
// of a shop, on demand, with a new run id each time. The daily run per
// shop is not this command: `cgp serve` runs every installed shop once a
// day at --di-daily-at (app/jobs.go, app.DISchedule) under a run
// id derived from shop and day, so several servers on one log, or a
// restart, still record one scheduled run per shop and day. The run reads
// the read models of the data directory as far as the server's projectors
// have built them, and records its result as events; --trigger schedule
// only labels an on-demand run (it is not de-duplicated).
func newDIRun(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, trigger string
	cmd := &cobra.Command{Use: "run", Short: "Run decision intelligence for a shop and record its recommendations", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			if trigger != "cli" && trigger != "schedule" {
				return usageError{fmt.Errorf("flag --trigger: cli or schedule")}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				store, err := c.Config.OpenReadModels()
				if err != nil {
					return err
				}
				defer store.Close()
				out, err := app.DIRunner(c.Commands, store.DB()).Run(cmd.Context(), shop, trigger, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": out.RunID, "shop_id": shop, "status": out.Status,
					"recommendations": out.Recommendations, "position": out.Position})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&trigger, "trigger", "cli", "why the run happens: cli (on demand) or schedule (an external scheduler's run; cgp serve runs the daily one itself)")
	return cmd
}
