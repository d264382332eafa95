package commands_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/testenv"
)

// creditShop creates a shop on plan and returns its id.
func creditShop(t *testing.T, h *commands.Handler, plan, domainName string) string {
	t.Helper()
	ctx := context.Background()
	acc, err := h.CreateAccount(ctx, commands.CreateAccount{Name: "Acme", Plan: plan}, meta)
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: domainName, Plan: plan, WebhookSecret: "0123456789abcdef"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func TestConcurrentReservationsNeverOverspend(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	shop := creditShop(t, h, "growth", "credits.example.com")
	ten := 10
	if _, budget, err := h.SetCreditBudget(ctx, commands.SetCreditBudget{ShopID: shop, Monthly: &ten}, meta); err != nil || budget != 10 {
		t.Fatalf("set budget: %d %v", budget, err)
	}
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = h.ReserveCredits(ctx, commands.ReserveCredits{ShopID: shop, OperationID: fmt.Sprintf("img_%02d", i),
				Kind: domain.CreditKindUpscale, Credits: 1}, meta)
		}()
	}
	wg.Wait()
	accepted := 0
	for i, err := range errs {
		var sf *domain.CreditShortfall
		switch {
		case err == nil:
			accepted++
		case domain.ErrorCode(err) == domain.CodeCreditsExhausted && errors.As(err, &sf):
			if sf.Remaining != 0 {
				t.Errorf("reservation %d refused with %d remaining", i, sf.Remaining)
			}
		default:
			t.Errorf("reservation %d: %v", i, err)
		}
	}
	if accepted != 10 {
		t.Fatalf("%d reservations accepted against a budget of 10", accepted)
	}
	month := domain.CreditMonth(time.Now())
	if got := streamLen(t, l, domain.CreditsStream(shop, month)); got != 10 {
		t.Fatalf("the ledger holds %d events, want 10", got)
	}
}

func TestCreditLedgerLifecycle(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return now })
	h := core.Commands
	ctx := context.Background()
	shop := creditShop(t, h, "growth", "ledger.example.com")
	month := "2026-11"
	reserve := func(op string, credits int) (commands.CreditBalance, error) {
		_, bal, err := h.ReserveCredits(ctx, commands.ReserveCredits{ShopID: shop, OperationID: op, Kind: domain.CreditKindBackgroundRemoval, Credits: credits}, meta)
		return bal, err
	}
	// The growth plan's 100 credits.
	bal, err := reserve("img_a", 60)
	if err != nil || bal.Budget != 100 || bal.Reserved != 60 || bal.Remaining != 40 || bal.Month != month ||
		!bal.ResetsAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("reserve: %+v %v", bal, err)
	}
	// Reserving again for the same operation charges nothing more.
	if res, bal, err := h.ReserveCredits(ctx, commands.ReserveCredits{ShopID: shop, OperationID: "img_a", Kind: domain.CreditKindBackgroundRemoval, Credits: 60}, meta); err != nil || res.Position != 0 || bal.Reserved != 60 {
		t.Fatalf("repeat reserve: %+v %+v %v", res, bal, err)
	}
	_, err = reserve("img_b", 41)
	var sf *domain.CreditShortfall
	if domain.ErrorCode(err) != domain.CodeCreditsExhausted || !errors.As(err, &sf) || sf.Remaining != 40 ||
		!sf.ResetsAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("over budget: %v", err)
	}
	// Consume: used, and the 80 % anomaly (60 is below it).
	_, bal, err = h.ConsumeCredits(ctx, commands.ConsumeCredits{ShopID: shop, Month: month, OperationID: "img_a"}, meta)
	if err != nil || bal.Used != 60 || bal.Reserved != 0 || bal.Remaining != 40 {
		t.Fatalf("consume: %+v %v", bal, err)
	}
	if res, _, err := h.ConsumeCredits(ctx, commands.ConsumeCredits{ShopID: shop, Month: month, OperationID: "img_a"}, meta); err != nil || res.Position != 0 {
		t.Fatalf("repeat consume: %+v %v", res, err)
	}
	if _, _, err := h.ReleaseCredits(ctx, commands.ReleaseCredits{ShopID: shop, Month: month, OperationID: "img_a", Reason: "x"}, meta); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("release of a consumed reservation: %v", err)
	}
	if _, _, err := h.ConsumeCredits(ctx, commands.ConsumeCredits{ShopID: shop, Month: month, OperationID: "img_none"}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("consume without a reservation: %v", err)
	}
	// A failed operation releases its credits.
	if _, err := reserve("img_b", 30); err != nil {
		t.Fatal(err)
	}
	_, bal, err = h.ReleaseCredits(ctx, commands.ReleaseCredits{ShopID: shop, Month: month, OperationID: "img_b", Reason: "engine failed"}, meta)
	if err != nil || bal.Reserved != 0 || bal.Used != 60 || bal.Remaining != 40 {
		t.Fatalf("release: %+v %v", bal, err)
	}
	if _, _, err := h.ConsumeCredits(ctx, commands.ConsumeCredits{ShopID: shop, Month: month, OperationID: "img_b"}, meta); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("consume of a released reservation: %v", err)
	}
	if got := streamLen(t, core.Log, domain.AnomalyStream(shop, "credits:2026-11:80")); got != 0 {
		t.Fatalf("80 %% anomaly below 80 %%: %d events", got)
	}
	// Crossing 80 % raises P2 once; 100 % raises P1.
	for i, credits := range []int{25, 15} {
		op := fmt.Sprintf("img_c%d", i)
		if _, err := reserve(op, credits); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.ConsumeCredits(ctx, commands.ConsumeCredits{ShopID: shop, Month: month, OperationID: op}, meta); err != nil {
			t.Fatal(err)
		}
		if got := streamLen(t, core.Log, domain.AnomalyStream(shop, "credits:2026-11:80")); got != 1 {
			t.Fatalf("after %d credits: the 80 %% anomaly stream holds %d events", credits, got)
		}
		want := i // none at 85, one at 100
		if got := streamLen(t, core.Log, domain.AnomalyStream(shop, "credits:2026-11:100")); got != want {
			t.Fatalf("after %d credits: the 100 %% anomaly stream holds %d events, want %d", credits, got, want)
		}
	}
	if _, err := reserve("img_d", 1); domain.ErrorCode(err) != domain.CodeCreditsExhausted {
		t.Fatalf("reserve with nothing left: %v", err)
	}
	// An override lifts the budget; back to the plan's drops it.
	thousand := 1000
	if _, budget, err := h.SetCreditBudget(ctx, commands.SetCreditBudget{ShopID: shop, Monthly: &thousand}, meta); err != nil || budget != 1000 {
		t.Fatalf("override: %d %v", budget, err)
	}
	if bal, err := reserve("img_d", 1); err != nil || bal.Remaining != 899 {
		t.Fatalf("reserve under the override: %+v %v", bal, err)
	}
	if res, budget, err := h.SetCreditBudget(ctx, commands.SetCreditBudget{ShopID: shop}, meta); err != nil || budget != 100 || res.Position == 0 {
		t.Fatalf("plan default: %d %v", budget, err)
	}
	if res, _, err := h.SetCreditBudget(ctx, commands.SetCreditBudget{ShopID: shop}, meta); err != nil || res.Position != 0 {
		t.Fatalf("plan default again: %+v %v", res, err)
	}
	neg := -1
	if _, _, err := h.SetCreditBudget(ctx, commands.SetCreditBudget{ShopID: shop, Monthly: &neg}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("negative budget: %v", err)
	}
	// A starter shop has no credits at all.
	starter := creditShop(t, h, "starter", "starter.example.com")
	if _, _, err := h.ReserveCredits(ctx, commands.ReserveCredits{ShopID: starter, OperationID: "img_s", Kind: domain.CreditKindUpscale, Credits: 1}, meta); domain.ErrorCode(err) != domain.CodeCreditsExhausted {
		t.Fatalf("starter: %v", err)
	}
	if _, _, err := h.ReserveCredits(ctx, commands.ReserveCredits{ShopID: "shop_missing", OperationID: "img_s", Kind: domain.CreditKindUpscale, Credits: 1}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("missing shop: %v", err)
	}
	if _, _, err := h.ReserveCredits(ctx, commands.ReserveCredits{ShopID: shop, OperationID: "img_k", Kind: "colorize", Credits: 1}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("unknown kind: %v", err)
	}
}
