package domain_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestCreditLedgerDecisions(t *testing.T) {
	now := time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)
	reserved := func(op string, credits int) domain.Event {
		return &domain.CreditsReserved{ShopID: "shop_1", Month: "2026-12", OperationID: op, Kind: domain.CreditKindUpscale, Credits: credits}
	}
	consumed := func(op string, credits int) domain.Event {
		return &domain.CreditsConsumed{ShopID: "shop_1", Month: "2026-12", OperationID: op, Credits: credits}
	}
	released := func(op string, credits int) domain.Event {
		return &domain.CreditsReleased{ShopID: "shop_1", Month: "2026-12", OperationID: op, Credits: credits}
	}
	cases := []struct {
		name    string
		given   []domain.Event
		when    func(l *domain.CreditLedger) (domain.Event, error)
		want    string // event type, "" for none
		code    domain.Code
		remains int // with CodeCreditsExhausted
	}{
		{"reserve within budget", nil, func(l *domain.CreditLedger) (domain.Event, error) {
			return nilEvent(l.Reserve("shop_1", "img_1", domain.CreditKindUpscale, 10, 10, now))
		}, "CreditsReserved", "", 0},
		{"reserve over budget", []domain.Event{reserved("img_1", 4), consumed("img_1", 4), reserved("img_2", 3)},
			func(l *domain.CreditLedger) (domain.Event, error) {
				return nilEvent(l.Reserve("shop_1", "img_3", domain.CreditKindUpscale, 4, 10, now))
			}, "", domain.CodeCreditsExhausted, 3},
		{"a released reservation frees its credits", []domain.Event{reserved("img_1", 10), released("img_1", 10)},
			func(l *domain.CreditLedger) (domain.Event, error) {
				return nilEvent(l.Reserve("shop_1", "img_2", domain.CreditKindUpscale, 10, 10, now))
			}, "CreditsReserved", "", 0},
		{"reserve again for the same operation", []domain.Event{reserved("img_1", 10)},
			func(l *domain.CreditLedger) (domain.Event, error) {
				return nilEvent(l.Reserve("shop_1", "img_1", domain.CreditKindUpscale, 10, 10, now))
			}, "", "", 0},
		{"unknown kind", nil, func(l *domain.CreditLedger) (domain.Event, error) {
			return nilEvent(l.Reserve("shop_1", "img_1", "colorize", 1, 10, now))
		}, "", domain.CodeInvalid, 0},
		{"zero credits", nil, func(l *domain.CreditLedger) (domain.Event, error) {
			return nilEvent(l.Reserve("shop_1", "img_1", domain.CreditKindUpscale, 0, 10, now))
		}, "", domain.CodeInvalid, 0},
		{"consume", []domain.Event{reserved("img_1", 2)}, func(l *domain.CreditLedger) (domain.Event, error) {
			return nilEvent(l.Consume("shop_1", "2026-12", "img_1", now))
		}, "CreditsConsumed", "", 0},
		{"consume twice", []domain.Event{reserved("img_1", 2), consumed("img_1", 2)}, func(l *domain.CreditLedger) (domain.Event, error) {
			return nilEvent(l.Consume("shop_1", "2026-12", "img_1", now))
		}, "", "", 0},
		{"consume released", []domain.Event{reserved("img_1", 2), released("img_1", 2)}, func(l *domain.CreditLedger) (domain.Event, error) {
			return nilEvent(l.Consume("shop_1", "2026-12", "img_1", now))
		}, "", domain.CodeConflict, 0},
		{"release unknown", nil, func(l *domain.CreditLedger) (domain.Event, error) {
			return nilEvent(l.Release("shop_1", "2026-12", "img_1", "failed", now))
		}, "", domain.CodeNotFound, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l domain.CreditLedger
			for _, e := range c.given {
				l.Apply(e)
			}
			ev, err := c.when(&l)
			if domain.ErrorCode(err) != c.code {
				t.Fatalf("error %v, want code %q", err, c.code)
			}
			if c.code == domain.CodeCreditsExhausted {
				var sf *domain.CreditShortfall
				if !errors.As(err, &sf) || sf.Remaining != c.remains || !sf.ResetsAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
					t.Fatalf("shortfall %+v", sf)
				}
			}
			got := ""
			if ev != nil {
				got = ev.EventType()
			}
			if got != c.want {
				t.Fatalf("event %q, want %q", got, c.want)
			}
		})
	}
}

// nilEvent turns a typed nil event into a nil interface.
func nilEvent[E domain.Event](ev E, err error) (domain.Event, error) {
	var zero E
	if any(ev) == any(zero) {
		return nil, err
	}
	return ev, err
}

func TestCreditThresholdAnomalies(t *testing.T) {
	for _, c := range []struct {
		used, budget int
		want         []string
	}{
		{79, 100, nil}, {80, 100, []string{domain.AnomalyAICreditsLow}},
		{100, 100, []string{domain.AnomalyAICreditsLow, domain.AnomalyAICreditsExhausted}}, {0, 0, nil},
	} {
		ds := domain.CreditThresholdAnomalies("shop_1", "2026-12", c.used, c.budget)
		var got []string
		for _, d := range ds {
			got = append(got, d.Kind)
			if d.DedupeKey != d.Cause || (d.DedupeKey != "credits:2026-12:80" && d.DedupeKey != "credits:2026-12:100") {
				t.Fatalf("dedupe key %q cause %q", d.DedupeKey, d.Cause)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Fatalf("%d of %d: %v, want %v", c.used, c.budget, got, c.want)
		}
	}
}

func TestCreditBudgetOverride(t *testing.T) {
	var b domain.CreditBudget
	if b.Budget(domain.PlanPro) != 500 || b.Budget(domain.PlanStarter) != 0 {
		t.Fatal("plan budgets")
	}
	n := 42
	ev, err := b.Set("shop_1", &n, time.Now())
	if err != nil || ev == nil || *ev.Monthly != 42 {
		t.Fatalf("set: %v %v", ev, err)
	}
	b.Apply(ev)
	if b.Budget(domain.PlanPro) != 42 {
		t.Fatal("override")
	}
	if ev, err := b.Set("shop_1", &n, time.Now()); ev != nil || err != nil {
		t.Fatalf("same override: %v %v", ev, err)
	}
	big := domain.MaxCreditBudget + 1
	if _, err := b.Set("shop_1", &big, time.Now()); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("too big: %v", err)
	}
}
