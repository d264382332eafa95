package commands

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// CreditBalance is a shop's AI credits in a billing month after a command.
type CreditBalance struct {
	Month                             string
	Budget, Used, Reserved, Remaining int
	ResetsAt                          time.Time
}

func balanceOf(l *domain.CreditLedger, month string, budget int) CreditBalance {
	start, _ := domain.CreditMonthStart(month)
	return CreditBalance{Month: month, Budget: budget, Used: l.Used, Reserved: l.Reserved,
		Remaining: l.Remaining(budget), ResetsAt: domain.CreditsResetAt(start)}
}

// ledgerAttempts bounds the retries on a month's ledger: every lost race
// means another writer appended, and once the budget is spent nothing is
// appended any more, so a waiter loses at most about budget-many times to
// concurrent reservations; past the bound it answers a retryable conflict.
const ledgerAttempts = 64

// ReserveCredits sets credits aside for an accepted image operation in the
// current billing month.
type ReserveCredits struct {
	ShopID, OperationID, Kind string
	Credits                   int
}

// ReserveCredits runs the command: the shop must exist; the budget is its
// override or its plan's. The reservation appends to the month's ledger
// with the revision it was decided against, so two concurrent reservations
// never both take the last credits: the loser reloads and decides again
// (and may then be refused with CreditsExhausted). Reserving for an
// operation that holds a reservation appends nothing (Position 0).
func (h *Handler) ReserveCredits(ctx context.Context, cmd ReserveCredits, meta Meta) (Result, CreditBalance, error) {
	shop, budget, err := h.creditBudget(ctx, cmd.ShopID)
	if err != nil {
		return Result{}, CreditBalance{}, err
	}
	now := h.now()
	res, bal, err := h.appendLedger(ctx, shop.ID, domain.CreditMonth(now), budget, meta,
		func(l *domain.CreditLedger) ([]domain.Event, error) {
			ev, err := l.Reserve(shop.ID, cmd.OperationID, cmd.Kind, cmd.Credits, budget, now)
			if ev == nil || err != nil {
				return nil, err
			}
			return []domain.Event{ev}, nil
		})
	res.ID = cmd.OperationID
	return res, bal, err
}

// ConsumeCredits spends an operation's reservation once it succeeded.
type ConsumeCredits struct {
	ShopID, Month, OperationID string
}

// ConsumeCredits runs the command against the reservation's month; a
// repeat appends nothing. The balance's Budget is the budget in force now.
//
// Once the consumption is recorded (or found recorded, on a repeat), the
// month's use is checked against 80 % and 100 % of the budget and the
// anomalies due are raised (domain.CreditThresholdAnomalies): the anomaly
// streams dedupe them per month, so a repeat after a crash between the two
// steps raises what was missed and nothing twice.
func (h *Handler) ConsumeCredits(ctx context.Context, cmd ConsumeCredits, meta Meta) (Result, CreditBalance, error) {
	res, bal, err := h.settleCredits(ctx, cmd.ShopID, cmd.Month, cmd.OperationID, meta,
		func(l *domain.CreditLedger, now time.Time) (domain.Event, error) {
			ev, err := l.Consume(cmd.ShopID, cmd.Month, cmd.OperationID, now)
			if ev == nil || err != nil {
				return nil, err
			}
			return ev, nil
		})
	if err != nil {
		return res, bal, err
	}
	return res, bal, h.raiseCreditAnomalies(ctx, cmd.ShopID, cmd.Month, bal, meta)
}

// ReleaseCredits returns an operation's reservation after it failed.
type ReleaseCredits struct {
	ShopID, Month, OperationID, Reason string
}

// ReleaseCredits runs the command against the reservation's month; a
// repeat appends nothing.
func (h *Handler) ReleaseCredits(ctx context.Context, cmd ReleaseCredits, meta Meta) (Result, CreditBalance, error) {
	return h.settleCredits(ctx, cmd.ShopID, cmd.Month, cmd.OperationID, meta,
		func(l *domain.CreditLedger, now time.Time) (domain.Event, error) {
			ev, err := l.Release(cmd.ShopID, cmd.Month, cmd.OperationID, cmd.Reason, now)
			if ev == nil || err != nil {
				return nil, err
			}
			return ev, nil
		})
}

func (h *Handler) settleCredits(ctx context.Context, shopID, month, operationID string, meta Meta,
	decide func(*domain.CreditLedger, time.Time) (domain.Event, error)) (Result, CreditBalance, error) {
	return h.settleLedger(ctx, shopID, month, operationID, meta, func(l *domain.CreditLedger, now time.Time) ([]domain.Event, error) {
		ev, err := decide(l, now)
		if ev == nil || err != nil {
			return nil, err
		}
		return []domain.Event{ev}, nil
	})
}

// creditBudget loads a shop (it must exist) and its monthly budget in
// force.
func (h *Handler) creditBudget(ctx context.Context, shopID string) (domain.Shop, int, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(shopID), &shop); err != nil {
		return shop, 0, err
	}
	if !shop.Exists {
		return shop, 0, domain.NotFound("shop")
	}
	var b domain.CreditBudget
	if _, _, err := h.load(ctx, domain.CreditBudgetStream(shopID), &b); err != nil {
		return shop, 0, err
	}
	return shop, b.Budget(shop.Plan), nil
}

// SetCreditBudget sets a shop's monthly AI credit budget (operators, CLI).
type SetCreditBudget struct {
	ShopID string
	// Monthly is the override; nil returns the shop to its plan's budget.
	Monthly *int
}

// SetCreditBudget runs the command: the shop must exist; setting the
// budget in force appends nothing (Position 0). It returns the budget in
// force afterwards.
func (h *Handler) SetCreditBudget(ctx context.Context, cmd SetCreditBudget, meta Meta) (Result, int, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return Result{}, 0, err
	}
	if !shop.Exists {
		return Result{}, 0, domain.NotFound("shop")
	}
	budget := 0
	res, err := execute(ctx, h, cmd.ShopID, domain.CreditBudgetStream(cmd.ShopID),
		func() *domain.CreditBudget { return &domain.CreditBudget{} },
		func(b *domain.CreditBudget) (decision, error) {
			ev, err := b.Set(cmd.ShopID, cmd.Monthly, h.now())
			if err != nil {
				return decision{}, err
			}
			if ev == nil {
				budget = b.Budget(shop.Plan)
				return decision{}, nil
			}
			b.Apply(ev)
			budget = b.Budget(shop.Plan)
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, budget, err
}

// ShopCredits reads a shop's budget in force and its current month's
// ledger from the log (what the next reservation is decided against): the
// operators' CLI prints it.
func (h *Handler) ShopCredits(ctx context.Context, shopID string) (CreditBalance, *int, error) {
	shop, budget, err := h.creditBudget(ctx, shopID)
	if err != nil {
		return CreditBalance{}, nil, err
	}
	var b domain.CreditBudget
	if _, _, err := h.load(ctx, domain.CreditBudgetStream(shop.ID), &b); err != nil {
		return CreditBalance{}, nil, err
	}
	month := domain.CreditMonth(h.now())
	var l domain.CreditLedger
	if _, _, err := h.load(ctx, domain.CreditsStream(shop.ID, month), &l); err != nil {
		return CreditBalance{}, nil, err
	}
	return balanceOf(&l, month, budget), b.Monthly, nil
}
