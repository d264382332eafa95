package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/readmodel"
)

// shopErasureName is the stable name of the shop-erasure reactor.
const shopErasureName = "shop_erasure"

// shopErasureTypes are the events the reactor handles: the tokens it must
// find again once the shop's key is gone, the platform's shop/redact, and
// the erasure itself.
var shopErasureTypes = []string{"TokenIssued", "ShopRedactRequested", "ShopErased"}

var shopErasureMigrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE shop_erasure_tokens (
	shop_id  TEXT NOT NULL,
	token_id TEXT NOT NULL,
	PRIMARY KEY (shop_id, token_id)
) WITHOUT ROWID;
CREATE TABLE shop_erasure_pending (
	shop_id  TEXT PRIMARY KEY,
	position INTEGER NOT NULL
);
`}}

// shopErasureProjectors returns the shop-erasure reactor:
//
//   - on ShopRedactRequested it records ShopErased (EraseShop, whose event
//     id derives from the shop id: recorded once, whatever asked);
//   - on ShopErased it erases what the read models do not hold: it shreds
//     the shop's key and every customer key of the shop (through the app's
//     vault cache, so no cached key survives), deletes the idempotency
//     records and last-use rows of the shop's tokens, and records the
//     follow-up (shop_erasure_pending) that, once every projector dropped
//     the shop's rows, erases them in the warehouse, deletes the tokens'
//     last uses again and checkpoints the read models' WAL (retention.go).
//
// Every step is idempotent, so a redelivery, a crash between steps (the
// event is handled again from the checkpoint) or a replay repeats them
// harmlessly. Each projector drops the shop's rows itself when it folds
// ShopErased; the tenancy projector keeps a tombstone.
func shopErasureProjectors(a *App) []projections.Projector {
	return []projections.Projector{{
		Name:       shopErasureName,
		Migrations: shopErasureMigrations,
		Types:      shopErasureTypes,
		Handle: projections.Decoding(a.Codec, shopErasureTypes, func(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
			return a.reactShopErasure(ctx, tx, e, d)
		}),
	}}
}

func (a *App) reactShopErasure(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
	switch ev := d.Event.(type) {
	case *domain.TokenIssued:
		if ev.ShopID == "" {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO shop_erasure_tokens (shop_id, token_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			ev.ShopID, ev.TokenID)
		return err
	case *domain.ShopRedactRequested:
		meta := commands.Meta{RequestID: e.ID.String(), Actor: "system:" + shopErasureName, Source: "system"}
		_, err := a.Commands.EraseShop(ctx, commands.EraseShop{ShopID: ev.ShopID, Reason: domain.ShopErasedRedact,
			RequestEventID: e.ID.String()}, meta)
		if domain.ErrorCode(err) != "" {
			// Not found, conflict or invalid: retrying cannot help.
			a.Logger.Warn().Err(err).Str("shop_id", ev.ShopID).Str("projector", shopErasureName).Msg("shop/redact not acted on")
			return nil
		}
		return err
	case *domain.ShopErased:
		return a.eraseShopData(ctx, tx, ev.ShopID, e.Position)
	}
	return nil
}

// idempotencyEraser is implemented by the idempotency stores that can
// delete a scope's records (SQLite; Redis records expire with their
// window, 24 hours).
type idempotencyEraser interface {
	DeleteScopes(ctx context.Context, scopes []string) error
}

// eraseShopData erases what of shop lives outside the read models. Each
// step is idempotent; a failure is returned, so the runtime retries the
// whole event.
func (a *App) eraseShopData(ctx context.Context, tx *sql.Tx, shop string, pos eventlog.Position) error {
	tokens, err := readmodel.Strings(ctx, tx, `SELECT token_id FROM shop_erasure_tokens WHERE shop_id = ?`, shop)
	if err != nil {
		return fmt.Errorf("tokens of erased shop: %w", err)
	}
	if err := a.Vault.ShredShop(ctx, shop); err != nil {
		return fmt.Errorf("shred shop keys: %w", err)
	}
	if st, ok := a.Idempotency.(idempotencyEraser); ok {
		if err := st.DeleteScopes(ctx, tokens); err != nil {
			return err
		}
	}
	if a.LastUse != nil {
		if err := a.LastUse.DeleteShop(ctx, shop, tokens); err != nil {
			return err
		}
	}
	// The token ids stay until the follow-up, which deletes the last uses
	// again: a use recorded just before the tokens stopped authenticating
	// may be saved after this point (auth.LastUsed flushes every 5 s).
	if _, err := tx.ExecContext(ctx, `INSERT INTO shop_erasure_pending (shop_id, position) VALUES (?, ?) ON CONFLICT DO NOTHING`,
		shop, int64(pos)); err != nil {
		return err
	}
	// No log here: a replay runs this handler too, beside other lanes
	// (the follow-up logs the erasure's completion).
	return nil
}

// newShopsRetention is `cgp shops retention [--shop ID]`: the pending
// retention countdowns (app uninstalled, data not erased yet), soonest
// first, as the tenancy read model keeps them.
func newShopsRetention(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "retention", Short: "List the pending retention countdowns after app/uninstalled, with their due dates", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				store, err := c.Config.openReadModels()
				if err != nil {
					return err
				}
				defer store.Close()
				q := tenancy.NewQueries(store.DB())
				list, err := q.Countdowns(cmd.Context(), shop)
				if err != nil {
					return err
				}
				if list == nil {
					list = []tenancy.Countdown{}
				}
				out := map[string]any{"countdowns": list}
				if shop != "" {
					// An erased shop has no countdown any more: say when it ended.
					at, erased, err := q.ErasedAt(cmd.Context(), shop)
					if err != nil {
						return err
					}
					if erased {
						out["erased_at"] = at
					}
				}
				return printJSON(stdout, out)
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "only this shop's countdown (shop_…)")
	return cmd
}

// newShopsReinstall is `cgp shops reinstall --shop ID`: the app was
// installed again (the platform's install flow is outside the service),
// which cancels the shop's retention countdown.
func newShopsReinstall(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var in commands.ReinstallApp
	cmd := &cobra.Command{Use: "reinstall", Short: "Record that the app was installed again, cancelling the retention countdown", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				res, err := c.Commands.ReinstallApp(cmd.Context(), in, cliMeta())
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"id": in.ShopID, "installed": true, "position": res.Position})
			})
		}}
	cmd.Flags().StringVar(&in.ShopID, "shop", "", "shop id (shop_…)")
	return cmd
}
