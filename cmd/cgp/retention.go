package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/readmodel/versioned/outbox"
)

// defaultRetentionEvery is how often the countdown looks for shops whose
// retention after app/uninstalled ended, and the shop erasures' follow-ups
// run.
const defaultRetentionEvery = time.Minute

// startRetention runs, until ctx ends, at once and then every
// Config.retentionEvery (the channel is closed once it stopped):
//
//   - the countdown: every shop whose retention_due_at (tenancy read model)
//     is at or before now and that was not erased is erased (reason
//     retention_expired). The due date is in the log and the read model,
//     so a restart resumes the countdown where it was; the command decides
//     on the shop's stream, so a reinstall recorded meanwhile wins;
//   - the follow-ups of shop erasures every projector has folded: the
//     warehouse's rows of the shop are erased, then the read models' WAL is
//     truncated so the deleted rows live on neither there nor
//     (secure_delete) in free pages. They are durable: the reactor records
//     them in the read models (shop_erasure_pending) with ShopErased.
func (a *App) runRetention(ctx context.Context) error {
	every := a.Config.retentionEvery
	if every <= 0 {
		every = defaultRetentionEvery
	}
	now := a.Config.retentionClock
	if now == nil {
		now = time.Now
	}
	return everyTick(ctx, every, func(ctx context.Context) {
		a.retentionPass(ctx, now())
		if err := a.followUpShopErasures(ctx); err != nil && ctx.Err() == nil {
			a.Logger.Warn().Err(err).Msg("shop erasure follow-up; retried")
		}
	})
}

// retentionPass erases every shop whose countdown ended at or before now.
func (a *App) retentionPass(ctx context.Context, now time.Time) {
	due, err := a.Tenancy.RetentionDue(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			a.Logger.Warn().Err(err).Msg("retention countdown: listing the shops due")
		}
		return
	}
	for _, shop := range due {
		meta := commands.Meta{RequestID: "retention:" + shop, Actor: "system:retention", Source: "system"}
		_, err := a.Commands.EraseShop(ctx, commands.EraseShop{ShopID: shop, Reason: domain.ShopErasedRetention, At: now}, meta)
		switch {
		case err == nil:
			a.Logger.Info().Str("shop_id", shop).Msg("retention ended: shop erasure recorded")
		case domain.ErrorCode(err) != "":
			// Reinstalled or erased meanwhile: the read model lags.
			a.Logger.Debug().Err(err).Str("shop_id", shop).Msg("retention countdown: shop not erased")
		case ctx.Err() == nil:
			a.Logger.Warn().Err(err).Str("shop_id", shop).Msg("retention countdown: erasing the shop")
		}
	}
}

// pendingShopErasure is a shop erasure whose follow-up is not done.
type pendingShopErasure struct {
	shop string
	pos  eventlog.Position
}

// followUpShopErasures completes the erasures every projector folded.
func (a *App) followUpShopErasures(ctx context.Context) error {
	pending, err := readmodel.List(ctx, a.Store.DB(), "pending shop erasures", func(s readmodel.Scanner) (pendingShopErasure, error) {
		var p pendingShopErasure
		err := s.Scan(&p.shop, &p.pos)
		return p, err
	}, `SELECT shop_id, position FROM shop_erasure_pending ORDER BY position`)
	if err != nil || len(pending) == 0 {
		return err
	}
	reached, err := a.projectedEverywhere(ctx)
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.pos > reached {
			return nil // a read model has not dropped the shop's rows yet
		}
		if err := a.eraseWarehouseShop(ctx, p.shop, p.pos); err != nil {
			return err
		}
		if err := a.eraseLastUses(ctx, p.shop); err != nil {
			return err
		}
		if err := a.Store.CheckpointWAL(ctx); err != nil {
			return err
		}
		if err := a.Store.Maintain(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `DELETE FROM shop_erasure_tokens WHERE shop_id = ?`, p.shop); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM shop_erasure_pending WHERE shop_id = ?`, p.shop)
			return err
		}); err != nil {
			return err
		}
		a.Logger.Info().Str("shop_id", p.shop).Msg("shop erasure complete")
	}
	return nil
}

// eraseWarehouseShop erases the shop's rows in the warehouse, once the
// outbox shipped every change of them (the tombstones of the rows the
// projectors deleted included), so that no row read before the erasure
// arrives after it.
func (a *App) eraseWarehouseShop(ctx context.Context, shop string, pos eventlog.Position) error {
	if a.Warehouse == nil {
		return nil
	}
	var queued int
	err := a.Store.DB().QueryRowContext(ctx, `SELECT count(*) FROM warehouse_outbox WHERE json_extract(key, '$[0]') = ?`, shop).Scan(&queued)
	if err != nil {
		return fmt.Errorf("outbox rows of an erased shop: %w", err)
	}
	if queued > 0 {
		return fmt.Errorf("%d changes of the erased shop not shipped to the warehouse yet", queued)
	}
	for _, s := range outbox.DefaultSources() {
		if err := a.Warehouse.Erase(ctx, s.Table, []any{shop}, pos); err != nil {
			return fmt.Errorf("erase warehouse rows: %w", err)
		}
	}
	return nil
}

// eraseLastUses deletes, once more, the last uses of the erased shop's
// tokens: every projector folded the erasure, so the tokens no longer
// authenticate and no new use of them is recorded.
func (a *App) eraseLastUses(ctx context.Context, shop string) error {
	if a.LastUse == nil {
		return nil
	}
	tokens, err := readmodel.List(ctx, a.Store.DB(), "tokens of an erased shop", func(s readmodel.Scanner) (string, error) {
		var id string
		err := s.Scan(&id)
		return id, err
	}, `SELECT token_id FROM shop_erasure_tokens WHERE shop_id = ?`, shop)
	if err != nil {
		return err
	}
	return a.LastUse.DeleteShop(ctx, shop, tokens)
}
