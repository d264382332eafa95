package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/erasure"
	"github.com/cgp-platform/cgp/vault"
)

// erasureReactor returns the customer erase reactor (projections/erasure)
// with the pipeline of DESIGN.md §5: shred every subject's key through
// the app's key cache (which evicts it), exit the customer's active
// enrollments, record the CustomerErased audit entry.
func erasureReactor(a *App) projections.Projector {
	return erasure.Projector(a.Codec, func(ctx context.Context, r erasure.Request) (domain.CustomerErased, eventlog.Position, error) {
		return eraseCustomer(ctx, a.Core, r)
	})
}

// eraseCustomer runs the erase pipeline for one customers/redact. Every
// step is idempotent, so a redelivered request repeats it harmlessly.
func eraseCustomer(ctx context.Context, c *Core, r erasure.Request) (domain.CustomerErased, eventlog.Position, error) {
	subjects, messaging := domain.ErasureSubjects(r.ShopID, r.Customer, r.ExternalOrders)
	known := false
	for _, s := range []string{r.Customer.CustomerID, messaging} {
		if s == "" {
			continue
		}
		_, err := c.Vault.DataKey(ctx, r.ShopID, s, false)
		switch {
		case err == nil, errors.Is(err, vault.ErrShredded):
			known = true
		case !errors.Is(err, vault.ErrNotFound):
			return domain.CustomerErased{}, 0, fmt.Errorf("look up key: %w", err)
		}
	}
	for _, s := range subjects {
		if err := c.Vault.Shred(ctx, r.ShopID, s); err != nil {
			return domain.CustomerErased{}, 0, fmt.Errorf("shred key: %w", err)
		}
	}
	meta := commands.Meta{RequestID: r.CorrelationID, Actor: "system:erasure", Source: "system"}
	exited := 0
	for _, j := range r.Journeys {
		for _, cus := range []string{r.Customer.CustomerID, messaging} {
			if cus == "" {
				continue
			}
			res, err := c.Commands.ExitEnrollment(ctx, commands.ExitEnrollment{ShopID: r.ShopID, JourneyID: j, CustomerID: cus,
				Reason: domain.ExitCustomerErased, Cause: r.EventID}, meta)
			if err != nil {
				return domain.CustomerErased{}, 0, fmt.Errorf("exit enrollment: %w", err)
			}
			if res.ID != "" {
				exited++
			}
		}
	}
	ev := domain.CustomerErased{ShopID: r.ShopID, CustomerID: r.Customer.CustomerID, Subjects: subjects,
		MessagingCustomerID: messaging, Orders: r.Orders, RequestEventID: r.EventID, EnrollmentsExited: exited,
		Known: known}
	res, err := c.Commands.RecordCustomerErased(ctx, commands.RecordCustomerErased{Erased: ev}, meta)
	if err != nil {
		return domain.CustomerErased{}, 0, fmt.Errorf("record erasure: %w", err)
	}
	return ev, res.Position, nil
}

// erasureFollowupEvery is how often pending erasure follow-ups are looked at.
const erasureFollowupEvery = 200 * time.Millisecond

// startErasureFollowups runs the physical clean-up of each customer
// erasure once every read model folded it: stored idempotent responses
// naming the customer are forgotten, the warehouse's old versions of its
// profile are erased, and the read models' WAL is checkpointed so no
// copy of the nulled values stays in it (secure_delete zeroes freed
// pages). It returns when ctx ends.
func (a *App) runErasureFollowups(ctx context.Context) error {
	q := erasure.NewQueries(a.Store.DB())
	return everyTick(ctx, erasureFollowupEvery, func(ctx context.Context) {
		if err := a.followUpErasures(ctx, q); err != nil && ctx.Err() == nil {
			a.Logger.Warn().Err(err).Msg("customer erasure follow-up; retried")
		}
	})
}

func (a *App) followUpErasures(ctx context.Context, q *erasure.Queries) error {
	pending, err := q.Pending(ctx, 100)
	if err != nil || len(pending) == 0 {
		return err
	}
	reached, err := a.projectedEverywhere(ctx)
	if err != nil {
		return err
	}
	for _, f := range pending {
		if f.ErasedPosition > reached {
			return nil // the read models have not all folded it yet
		}
		if err := a.followUpErasure(ctx, f); err != nil {
			return err
		}
		a.Logger.Info().Str("shop_id", f.ShopID).Str("customer_id", f.CustomerID).
			Float64("since_request_ms", httpapi.Milliseconds(time.Since(time.UnixMicro(f.RequestedAt)))).Msg("customer erasure complete")
	}
	return nil
}

// projectedEverywhere is the lowest checkpoint of the registered
// projectors: every read model folded the log up to it.
func (a *App) projectedEverywhere(ctx context.Context) (eventlog.Position, error) {
	var low eventlog.Position
	for i, name := range a.projectorNames {
		cp, err := a.Store.Checkpoint(ctx, name)
		if err != nil {
			return 0, err
		}
		if i == 0 || cp < low {
			low = cp
		}
	}
	return low, nil
}

func (a *App) followUpErasure(ctx context.Context, f erasure.Followup) error {
	if fg, ok := a.Idempotency.(idempotency.Forgetter); ok {
		if _, err := fg.Forget(ctx, f.CustomerID, f.MessagingID); err != nil {
			return err
		}
	}
	if a.Warehouse != nil {
		// The profile's nulled version must have been shipped first: the
		// outbox holds no change of it any more (every projector folded
		// the erasure, so its change is in the outbox or already sent).
		var queued int
		err := a.Store.DB().QueryRowContext(ctx, `SELECT count(*) FROM warehouse_outbox WHERE tbl = 'customers'
			AND key IN (json_array(?1, ?2), json_array(?1, ?3))`, f.ShopID, f.CustomerID, f.MessagingID).Scan(&queued)
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
			if err := a.Warehouse.Erase(ctx, "customers", []any{f.ShopID, id}, f.ErasedPosition); err != nil {
				return fmt.Errorf("erase warehouse rows: %w", err)
			}
		}
	}
	if err := a.Store.CheckpointWAL(ctx); err != nil {
		return err
	}
	return erasure.Settle(ctx, a.Store, f.RequestEventID)
}
