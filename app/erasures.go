package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/images/store"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/erasure"
	"github.com/cgp-platform/cgp/projections/shoperasure"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/outbox"
	"github.com/cgp-platform/cgp/vault"
)

// ReadModels is the read-model store the erasures clean up.
type ReadModels interface {
	readmodel.Store
	// CheckpointWAL truncates the write-ahead log, so no copy of deleted
	// or nulled values stays in it.
	CheckpointWAL(ctx context.Context) error
}

// SideStore is the store of a side with its own (sending, webhook
// delivery, notifier) as the erasures see it.
type SideStore interface {
	Checkpoint(ctx context.Context, projector string) (eventlog.Position, error)
	CheckpointWAL(ctx context.Context) error
}

// Side is a side with a store of its own: its reactor deletes or nulls
// what it holds of an erased customer or shop, and the follow-ups wait
// until it folded the erasure, then truncate its WAL (so no copy of the
// values stays there; secure_delete zeroes the freed pages).
type Side struct {
	Name, Reactor string
	Store         SideStore
}

// LastUses deletes the last-use records of an erased shop's tokens.
type LastUses interface {
	DeleteShop(ctx context.Context, shop string, tokens []string) error
}

// Erasures are the GDPR module's processes: the shop-erasure reactor's
// handler, the physical clean-up after each customer erasure, and the
// retention countdown with the shop erasures' follow-ups.
type Erasures struct {
	Store     ReadModels
	Warehouse versioned.Store // nil: none
	// Sides are the stores of their own (a conversation reply's text
	// waits in the sending store to be sent, a shop's domain and contact
	// e-mail are in the notifier's).
	Sides []Side
	// Images is the image operations' object store: an erased shop's
	// pictures go with it.
	Images      store.Store
	Idempotency idempotency.Store
	LastUse     LastUses // nil: none
	Vault       vault.Vault
	Commands    *commands.Handler
	Tenancy     *tenancy.Queries
	// Registered are the names of every registered projector and reactor:
	// a follow-up waits until all of them folded the erasure.
	Registered func() []string
	// RetentionEvery is how often the countdown runs
	// (DefaultRetentionEvery when 0); Now its clock (time.Now when nil).
	RetentionEvery time.Duration
	Now            func() time.Time
	Logger         zerolog.Logger
}

// erasureFollowupEvery is how often pending erasure follow-ups are looked at.
const erasureFollowupEvery = 200 * time.Millisecond

// FollowupsJob runs the physical clean-up of each customer
// erasure once every read model folded it: stored idempotent responses
// naming the customer are forgotten, the warehouse's old versions of its
// profile are erased, and the read models' WAL is checkpointed so no
// copy of the nulled values stays in it (secure_delete zeroes freed
// pages). It returns when ctx ends.
func (g *Erasures) FollowupsJob(ctx context.Context) error {
	q := erasure.NewQueries(g.Store.DB())
	return EveryTick(ctx, erasureFollowupEvery, func(ctx context.Context) {
		if err := g.followUpErasures(ctx, q); err != nil && ctx.Err() == nil {
			g.Logger.Warn().Err(err).Msg("customer erasure follow-up; retried")
		}
	})
}

func (g *Erasures) followUpErasures(ctx context.Context, q *erasure.Queries) error {
	pending, err := q.Pending(ctx, 100)
	if err != nil || len(pending) == 0 {
		return err
	}
	reached, err := g.projectedEverywhere(ctx)
	if err != nil {
		return err
	}
	for _, f := range pending {
		if f.ErasedPosition > reached {
			return nil // the read models have not all folded it yet
		}
		if err := g.followUpErasure(ctx, f); err != nil {
			return err
		}
		g.Logger.Info().Str("shop_id", f.ShopID).Str("customer_id", f.CustomerID).
			Float64("since_request_ms", httpapi.Milliseconds(time.Since(time.UnixMicro(f.RequestedAt)))).Msg("customer erasure complete")
	}
	return nil
}

// projectedEverywhere is the lowest checkpoint of the registered
// projectors: every read model folded the log up to it.
func (g *Erasures) projectedEverywhere(ctx context.Context) (eventlog.Position, error) {
	var low eventlog.Position
	for i, name := range g.Registered() {
		cp, err := g.Store.Checkpoint(ctx, name)
		if err != nil {
			return 0, err
		}
		if i == 0 || cp < low {
			low = cp
		}
	}
	return low, nil
}

func (g *Erasures) followUpErasure(ctx context.Context, f erasure.Followup) error {
	if fg, ok := g.Idempotency.(idempotency.Forgetter); ok {
		if _, err := fg.Forget(ctx, f.CustomerID, f.MessagingID); err != nil {
			return err
		}
	}
	if g.Warehouse != nil {
		// The profile's nulled version must have been shipped first: the
		// outbox holds no change of it any more (every projector folded
		// the erasure, so its change is in the outbox or already sent).
		queued, err := outbox.QueuedKeys(ctx, g.Store.DB(), "customers", []any{f.ShopID, f.CustomerID}, []any{f.ShopID, f.MessagingID})
		if err != nil {
			return fmt.Errorf("outbox rows of an erased customer: %w", err)
		}
		if queued > 0 {
			return errors.New("the erased profile is not shipped to the warehouse yet")
		}
		for _, id := range []string{f.CustomerID, f.MessagingID} {
			if id == "" {
				continue
			}
			if err := g.Warehouse.Erase(ctx, "customers", []any{f.ShopID, id}, f.ErasedPosition); err != nil {
				return fmt.Errorf("erase warehouse rows: %w", err)
			}
		}
	}
	if err := g.Store.CheckpointWAL(ctx); err != nil {
		return err
	}
	if err := g.settleSides(ctx, f.ErasedPosition); err != nil {
		return err
	}
	return erasure.Settle(ctx, g.Store, f.RequestEventID)
}

// settleSides waits until every side's reactor folded the log up to pos
// (an error: the follow-up is tried again), then truncates its WAL.
func (g *Erasures) settleSides(ctx context.Context, pos eventlog.Position) error {
	for _, side := range g.Sides {
		cp, err := side.Store.Checkpoint(ctx, side.Reactor)
		if err != nil {
			return fmt.Errorf("%s store: %w", side.Name, err)
		}
		if cp < pos {
			return fmt.Errorf("the %s side has not folded the erasure yet", side.Name)
		}
		if err := side.Store.CheckpointWAL(ctx); err != nil {
			return fmt.Errorf("%s store: %w", side.Name, err)
		}
	}
	return nil
}

// DefaultRetentionEvery is how often the countdown looks for shops whose
// retention after app/uninstalled ended, and the shop erasures' follow-ups
// run.
const DefaultRetentionEvery = time.Minute

// RetentionJob runs, until ctx ends, at once and then every
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
func (g *Erasures) RetentionJob(ctx context.Context) error {
	every := g.RetentionEvery
	if every <= 0 {
		every = DefaultRetentionEvery
	}
	now := g.Now
	if now == nil {
		now = time.Now
	}
	return EveryTick(ctx, every, func(ctx context.Context) {
		g.retentionPass(ctx, now())
		if err := g.followUpShopErasures(ctx); err != nil && ctx.Err() == nil {
			g.Logger.Warn().Err(err).Msg("shop erasure follow-up; retried")
		}
	})
}

// retentionPass erases every shop whose countdown ended at or before now.
func (g *Erasures) retentionPass(ctx context.Context, now time.Time) {
	due, err := g.Tenancy.RetentionDue(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			g.Logger.Warn().Err(err).Msg("retention countdown: listing the shops due")
		}
		return
	}
	for _, shop := range due {
		meta := commands.Meta{RequestID: "retention:" + shop, Actor: "system:retention", Source: "system"}
		_, err := g.Commands.EraseShop(ctx, commands.EraseShop{ShopID: shop, Reason: domain.ShopErasedRetention, At: now}, meta)
		switch {
		case err == nil:
			g.Logger.Info().Str("shop_id", shop).Msg("retention ended: shop erasure recorded")
		case domain.ErrorCode(err) != "":
			// Reinstalled or erased meanwhile: the read model lags.
			g.Logger.Debug().Err(err).Str("shop_id", shop).Msg("retention countdown: shop not erased")
		case ctx.Err() == nil:
			g.Logger.Warn().Err(err).Str("shop_id", shop).Msg("retention countdown: erasing the shop")
		}
	}
}

// followUpShopErasures completes the erasures every projector folded.
func (g *Erasures) followUpShopErasures(ctx context.Context) error {
	pending, err := shoperasure.NewQueries(g.Store.DB()).Pending(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	reached, err := g.projectedEverywhere(ctx)
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.Position > reached {
			return nil // a read model has not dropped the shop's rows yet
		}
		if err := g.eraseWarehouseShop(ctx, p.ShopID, p.Position); err != nil {
			return err
		}
		if err := g.eraseLastUses(ctx, p.ShopID); err != nil {
			return err
		}
		if err := g.Store.CheckpointWAL(ctx); err != nil {
			return err
		}
		if err := g.settleSides(ctx, p.Position); err != nil {
			return err
		}
		if g.Images != nil {
			if err := g.Images.DeleteShop(ctx, p.ShopID); err != nil {
				return fmt.Errorf("image store: %w", err)
			}
		}
		if err := shoperasure.Settle(ctx, g.Store, p.ShopID); err != nil {
			return err
		}
		g.Logger.Info().Str("shop_id", p.ShopID).Msg("shop erasure complete")
	}
	return nil
}

// eraseWarehouseShop erases the shop's rows in the warehouse, once the
// outbox shipped every change of them (the tombstones of the rows the
// projectors deleted included), so that no row read before the erasure
// arrives after it.
func (g *Erasures) eraseWarehouseShop(ctx context.Context, shop string, pos eventlog.Position) error {
	if g.Warehouse == nil {
		return nil
	}
	queued, err := outbox.QueuedShop(ctx, g.Store.DB(), shop)
	if err != nil {
		return fmt.Errorf("outbox rows of an erased shop: %w", err)
	}
	if queued > 0 {
		return fmt.Errorf("%d changes of the erased shop not shipped to the warehouse yet", queued)
	}
	for _, s := range outbox.DefaultSources() {
		if err := g.Warehouse.Erase(ctx, s.Table, []any{shop}, pos); err != nil {
			return fmt.Errorf("erase warehouse rows: %w", err)
		}
	}
	return nil
}

// eraseLastUses deletes, once more, the last uses of the erased shop's
// tokens: every projector folded the erasure, so the tokens no longer
// authenticate and no new use of them is recorded.
func (g *Erasures) eraseLastUses(ctx context.Context, shop string) error {
	if g.LastUse == nil {
		return nil
	}
	tokens, err := shoperasure.NewQueries(g.Store.DB()).Tokens(ctx, shop)
	if err != nil {
		return err
	}
	return g.LastUse.DeleteShop(ctx, shop, tokens)
}

// ReactShopErasure handles the shop-erasure reactor's events (app.Modules):
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
// ShopErased; the tenancy projector keeps a tombstone. A replay does not
// run it.
func (g *Erasures) ReactShopErasure(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
	return g.shopErasureCases().Apply(ctx, tx, e, d)
}

// shopErasureCases are the shop-erasure reactor's cases, one per event
// type it handles; the reactor's types are read from them (g nil: only
// the types).
func (g *Erasures) shopErasureCases() projections.TxCases {
	return projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.TokenIssued, _ *projections.DecodedEvent) error {
			if ev.ShopID == "" {
				return nil
			}
			return shoperasure.RecordToken(ctx, tx, ev.ShopID, ev.TokenID)
		}),
		projections.OnTx(func(ctx context.Context, _ *sql.Tx, ev *domain.ShopRedactRequested, e *projections.DecodedEvent) error {
			meta := commands.Meta{RequestID: e.ID.String(), Actor: "system:" + ShopErasureName, Source: "system"}
			_, err := g.Commands.EraseShop(ctx, commands.EraseShop{ShopID: ev.ShopID, Reason: domain.ShopErasedRedact,
				RequestEventID: e.ID.String()}, meta)
			if domain.ErrorCode(err) != "" {
				// Not found, conflict or invalid: retrying cannot help.
				g.Logger.Warn().Err(err).Str("shop_id", ev.ShopID).Str("projector", ShopErasureName).Msg("shop/redact not acted on")
				return nil
			}
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, e *projections.DecodedEvent) error {
			return g.eraseShopData(ctx, tx, ev.ShopID, e.Position)
		}),
	)
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
func (g *Erasures) eraseShopData(ctx context.Context, tx *sql.Tx, shop string, pos eventlog.Position) error {
	tokens, err := shoperasure.TokensOf(ctx, tx, shop)
	if err != nil {
		return err
	}
	if err := g.Vault.ShredShop(ctx, shop); err != nil {
		return fmt.Errorf("shred shop keys: %w", err)
	}
	if st, ok := g.Idempotency.(idempotencyEraser); ok {
		if err := st.DeleteScopes(ctx, tokens); err != nil {
			return err
		}
	}
	if g.LastUse != nil {
		if err := g.LastUse.DeleteShop(ctx, shop, tokens); err != nil {
			return err
		}
	}
	// The token ids stay until the follow-up, which deletes the last uses
	// again: a use recorded just before the tokens stopped authenticating
	// may be saved after this point (auth.LastUsed flushes every 5 s).
	if err := shoperasure.RecordPending(ctx, tx, shop, pos); err != nil {
		return err
	}
	// No log here: a replay runs this handler too, beside other lanes
	// (the follow-up logs the erasure's completion).
	return nil
}
