// Package conciergetest is the conformance suite of concierge.Answerer:
// every answerer (the embedded one, each provider adapter) runs Run, so
// that the conversations module can rely on the port's documented
// behaviour whichever adapter the configuration picks.
//
// It imports the standard library, testing and concierge only.
package conciergetest

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/concierge"
)

// Questions are the questions the suite asks: with and without orders
// and policies, empty, odd, long.
func Questions() []concierge.Question {
	orders := []concierge.Order{
		{Name: "#1043", FinancialStatus: "paid", FulfillmentStatus: "fulfilled", CreatedAt: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC),
			TrackingCompany: "UPS", TrackingNumber: "1Z999AA10123456784", TrackingURL: "https://www.ups.com/track?tracknum=1Z999AA10123456784"},
		{Name: "#1051", FinancialStatus: "pending", CreatedAt: time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)},
	}
	policies := map[string]string{
		concierge.PolicyReturns:  "Returns within 30 days.",
		concierge.PolicyShipping: "We ship within 2 working days.",
	}
	full := func(text string) concierge.Question {
		return concierge.Question{ShopName: "Linen & Co", Text: text, FirstName: "Ada", Orders: orders, Policies: policies}
	}
	return []concierge.Question{
		full("Where is my order?"),
		full("has order #1043 shipped?"),
		full("where is order #9999"),
		full("How do I return a shirt?"),
		full("hello"),
		full("Is the linen from Portugal?"),
		full(""),
		full(strings.Repeat("where is my order? ", 200)),
		full("\xff\xfe\x00 #"),
		{Text: "Where is my order?"},
		{Text: "what is your returns policy?", Policies: map[string]string{concierge.PolicyReturns: "  "}},
	}
}

// Run checks newAnswerer's answerers against the port's contract: an
// answer for every question (no error), a confidence within [0, 1],
// sources that the question carried, a text unless the answerer asks for
// escalation, an error wrapping the context's when the context is done,
// and safe concurrent use.
func Run(t *testing.T, newAnswerer func(t *testing.T) concierge.Answerer) {
	t.Run("AnswersEveryQuestionWithinTheContract", func(t *testing.T) {
		a := newAnswerer(t)
		for _, q := range Questions() {
			ans, err := a.Answer(context.Background(), q)
			if err != nil {
				t.Fatalf("question %.40q: %v", q.Text, err)
			}
			checkAnswer(t, q, ans)
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		a := newAnswerer(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := a.Answer(ctx, Questions()[0])
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want one wrapping context.Canceled", err)
		}
	})
	t.Run("ConcurrentUse", func(t *testing.T) {
		a := newAnswerer(t)
		qs := Questions()
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(qs))
		for range 4 {
			for _, q := range qs {
				wg.Go(func() {
					ans, err := a.Answer(context.Background(), q)
					if err != nil {
						errs <- err
						return
					}
					if ans.Confidence < 0 || ans.Confidence > 1 {
						errs <- errors.New("confidence out of range")
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

func checkAnswer(t *testing.T, q concierge.Question, a concierge.Answer) {
	t.Helper()
	if math.IsNaN(a.Confidence) || a.Confidence < 0 || a.Confidence > 1 {
		t.Errorf("question %.40q: confidence %v out of [0, 1]", q.Text, a.Confidence)
	}
	known := q.KnownSources()
	for _, s := range a.Sources {
		if !slices.Contains(known, s) {
			t.Errorf("question %.40q: source %q is not in the question's data %q", q.Text, s, known)
		}
	}
	if strings.TrimSpace(a.Text) == "" && (a.Escalation == "" || a.Confidence != 0) {
		t.Errorf("question %.40q: no text, escalation %q, confidence %v; want an escalation reason and 0", q.Text, a.Escalation, a.Confidence)
	}
}
