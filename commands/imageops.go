package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// RequestImageOperation accepts an image operation for a shop: its credits
// are reserved and its request recorded in one append to the month's
// ledger (domain.CreditLedger.RequestImageOperation), decided against the
// ledger's revision, so concurrent requests never overspend the budget.
type RequestImageOperation struct {
	Request domain.ImageOperationRequested
}

// RequestImageOperation runs the command: the shop must exist; no credits
// left is domain.CreditsExhausted. Repeating an operation id already on the
// month's ledger appends nothing (Position 0). The balance is the month's
// after the reservation.
func (h *Handler) RequestImageOperation(ctx context.Context, cmd RequestImageOperation, meta Meta) (Result, CreditBalance, error) {
	shop, budget, err := h.creditBudget(ctx, cmd.Request.ShopID)
	if err != nil {
		return Result{}, CreditBalance{}, err
	}
	now := h.now()
	res, bal, err := h.appendLedger(ctx, shop.ID, domain.CreditMonth(now), budget, meta,
		func(l *domain.CreditLedger) ([]domain.Event, error) {
			return l.RequestImageOperation(cmd.Request, budget, now)
		})
	res.ID = cmd.Request.OperationID
	return res, bal, err
}

// StartImageOperation records an attempt to run an operation.
type StartImageOperation struct {
	ShopID, OperationID, Engine string
}

// imageAttempts is the aggregate of an operation's attempts.
type imageAttempts struct{ n int }

func (a *imageAttempts) Apply(e domain.Event) {
	if _, ok := e.(*domain.ImageOperationStarted); ok {
		a.n++
	}
}

// StartImageOperation runs the command and returns the attempt's number
// (from 1).
func (h *Handler) StartImageOperation(ctx context.Context, cmd StartImageOperation, meta Meta) (Result, int, error) {
	attempt := 0
	res, err := execute(ctx, h, cmd.ShopID, domain.ImageOperationStream(cmd.OperationID),
		func() *imageAttempts { return &imageAttempts{} },
		func(a *imageAttempts) (decision, error) {
			attempt = a.n + 1
			return decision{events: []domain.Event{&domain.ImageOperationStarted{ShopID: cmd.ShopID, OperationID: cmd.OperationID,
				Attempt: attempt, Engine: cmd.Engine, At: h.now().UTC()}}}, nil
		}, meta)
	res.ID = cmd.OperationID
	return res, attempt, err
}

// ImageAttempts counts an operation's recorded attempts.
func (h *Handler) ImageAttempts(ctx context.Context, operationID string) (int, error) {
	var a imageAttempts
	if _, _, err := h.load(ctx, domain.ImageOperationStream(operationID), &a); err != nil {
		return 0, err
	}
	return a.n, nil
}

// SucceedImageOperation records an operation's result and consumes its
// credits in one append to the ledger of the month it was accepted in; a
// repeat appends nothing. The 80 % and 100 % anomalies of the month are
// raised as ConsumeCredits does.
type SucceedImageOperation struct {
	Success domain.ImageOperationSucceeded
}

// SucceedImageOperation runs the command.
func (h *Handler) SucceedImageOperation(ctx context.Context, cmd SucceedImageOperation, meta Meta) (Result, CreditBalance, error) {
	ev := cmd.Success
	res, bal, err := h.settleLedger(ctx, ev.ShopID, ev.Month, ev.OperationID, meta,
		func(l *domain.CreditLedger, now time.Time) ([]domain.Event, error) {
			return l.SucceedImageOperation(ev, now)
		})
	if err != nil {
		return res, bal, err
	}
	return res, bal, h.raiseCreditAnomalies(ctx, ev.ShopID, ev.Month, bal, meta)
}

// FailImageOperation records an operation's failure and releases its
// credits in one append; a repeat appends nothing.
type FailImageOperation struct {
	Failure domain.ImageOperationFailed
}

// FailImageOperation runs the command.
func (h *Handler) FailImageOperation(ctx context.Context, cmd FailImageOperation, meta Meta) (Result, CreditBalance, error) {
	ev := cmd.Failure
	return h.settleLedger(ctx, ev.ShopID, ev.Month, ev.OperationID, meta,
		func(l *domain.CreditLedger, now time.Time) ([]domain.Event, error) {
			return l.FailImageOperation(ev, now)
		})
}

// settleLedger appends what decide chooses on the ledger of a shop's
// month (which must exist as a month) and returns the balance after it.
func (h *Handler) settleLedger(ctx context.Context, shopID, month, operationID string, meta Meta,
	decide func(*domain.CreditLedger, time.Time) ([]domain.Event, error)) (Result, CreditBalance, error) {
	if _, err := domain.CreditMonthStart(month); err != nil {
		return Result{}, CreditBalance{}, err
	}
	shop, budget, err := h.creditBudget(ctx, shopID)
	if err != nil {
		return Result{}, CreditBalance{}, err
	}
	now := h.now()
	res, bal, err := h.appendLedger(ctx, shop.ID, month, budget, meta,
		func(l *domain.CreditLedger) ([]domain.Event, error) { return decide(l, now) })
	res.ID = operationID
	return res, bal, err
}

// appendLedger appends what decide chooses to the ledger of a shop's month,
// deciding again on a lost race, and returns the balance after it.
func (h *Handler) appendLedger(ctx context.Context, shopID, month string, budget int, meta Meta,
	decide func(*domain.CreditLedger) ([]domain.Event, error)) (Result, CreditBalance, error) {
	var bal CreditBalance
	res, err := executeAttempts(ctx, h, shopID, domain.CreditsStream(shopID, month), false, ledgerAttempts,
		func() *domain.CreditLedger { return &domain.CreditLedger{} },
		func(l *domain.CreditLedger) (decision, error) {
			evs, err := decide(l)
			if err != nil {
				return decision{}, err
			}
			for _, ev := range evs {
				l.Apply(ev)
			}
			bal = balanceOf(l, month, budget)
			return decision{events: evs}, nil
		}, meta)
	return res, bal, err
}

// raiseCreditAnomalies raises the 80 % and 100 % anomalies a month's use
// calls for (domain.CreditThresholdAnomalies; deduped per month).
func (h *Handler) raiseCreditAnomalies(ctx context.Context, shopID, month string, bal CreditBalance, meta Meta) error {
	for _, d := range domain.CreditThresholdAnomalies(shopID, month, bal.Used, bal.Budget) {
		if _, _, err := h.RaiseAnomaly(ctx, RaiseAnomaly{Draft: d}, meta); err != nil {
			return fmt.Errorf("raise %s: %w", d.Kind, err)
		}
	}
	return nil
}
