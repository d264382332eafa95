package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestImageOperationLedger(t *testing.T) {
	now := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	var l domain.CreditLedger
	apply := func(evs []domain.Event) {
		for _, e := range evs {
			l.Apply(e)
		}
	}
	req := domain.ImageOperationRequested{ShopID: "shop_1", OperationID: "img_1", Kind: domain.CreditKindUpscale,
		Options: map[string]string{"scale": "4"}, Credits: 2}
	evs, err := l.RequestImageOperation(req, 3, now)
	if err != nil || len(evs) != 2 {
		t.Fatalf("request: %v %v", evs, err)
	}
	if r, ok := evs[1].(*domain.ImageOperationRequested); !ok || r.Month != "2026-11" || r.At != now {
		t.Fatalf("requested %+v", evs[1])
	}
	apply(evs)
	// A repeat of the operation appends nothing; a second one beyond the
	// budget is refused with the shortfall.
	if evs, err := l.RequestImageOperation(req, 3, now); evs != nil || err != nil {
		t.Fatalf("repeat: %v %v", evs, err)
	}
	req2 := req
	req2.OperationID = "img_2"
	if _, err := l.RequestImageOperation(req2, 3, now); domain.ErrorCode(err) != domain.CodeCreditsExhausted {
		t.Fatalf("beyond the budget: %v", err)
	}
	// Success consumes, once; a failure after it is a conflict.
	later := now.Add(2 * time.Minute) // the next month: settles in the operation's
	evs, err = l.SucceedImageOperation(domain.ImageOperationSucceeded{ShopID: "shop_1", OperationID: "img_1", Month: "2026-11"}, later)
	if err != nil || len(evs) != 2 {
		t.Fatalf("succeed: %v %v", evs, err)
	}
	if s := evs[0].(*domain.ImageOperationSucceeded); s.Kind != domain.CreditKindUpscale {
		t.Fatalf("succeeded %+v", s)
	}
	if c := evs[1].(*domain.CreditsConsumed); c.Credits != 2 || c.Month != "2026-11" {
		t.Fatalf("consumed %+v", c)
	}
	apply(evs)
	if l.Used != 2 || l.Reserved != 0 {
		t.Fatalf("ledger used %d reserved %d", l.Used, l.Reserved)
	}
	if evs, err := l.SucceedImageOperation(domain.ImageOperationSucceeded{ShopID: "shop_1", OperationID: "img_1", Month: "2026-11"}, later); evs != nil || err != nil {
		t.Fatalf("repeat success: %v %v", evs, err)
	}
	if _, err := l.FailImageOperation(domain.ImageOperationFailed{ShopID: "shop_1", OperationID: "img_1", Month: "2026-11", Code: "engine_error"}, later); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("failure after success: %v", err)
	}
	// A failure releases.
	req3 := req
	req3.OperationID, req3.Credits = "img_3", 1
	evs, err = l.RequestImageOperation(req3, 3, now)
	if err != nil {
		t.Fatal(err)
	}
	apply(evs)
	evs, err = l.FailImageOperation(domain.ImageOperationFailed{ShopID: "shop_1", OperationID: "img_3", Month: "2026-11", Code: "provider_error", Reason: "x"}, later)
	if err != nil || len(evs) != 2 {
		t.Fatalf("fail: %v %v", evs, err)
	}
	apply(evs)
	if l.Used != 2 || l.Reserved != 0 || l.Remaining(3) != 1 {
		t.Fatalf("after the failure: used %d reserved %d", l.Used, l.Reserved)
	}
	if _, err := l.FailImageOperation(domain.ImageOperationFailed{ShopID: "shop_1", OperationID: "img_9", Month: "2026-11"}, later); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("unknown operation: %v", err)
	}
}

func TestImageOperationCost(t *testing.T) {
	for _, c := range []struct {
		kind     string
		opts     map[string]string
		provider bool
		want     int
	}{
		{domain.CreditKindBackgroundRemoval, nil, false, 1},
		{domain.CreditKindUpscale, map[string]string{"scale": "2"}, false, 1},
		{domain.CreditKindUpscale, map[string]string{"scale": "4"}, false, 2},
		{domain.CreditKindLifestyleScene, nil, false, 1},
		{domain.CreditKindLifestyleScene, nil, true, 3},
	} {
		if got := domain.ImageOperationCost(c.kind, c.opts, c.provider); got != c.want {
			t.Errorf("%s %v provider=%v: %d, want %d", c.kind, c.opts, c.provider, got, c.want)
		}
	}
}
