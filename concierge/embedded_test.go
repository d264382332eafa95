package concierge_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/concierge"
)

var (
	shipped = concierge.Order{
		Name: "#1043", FinancialStatus: "paid", FulfillmentStatus: "fulfilled",
		CreatedAt:       time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC),
		TrackingCompany: "UPS", TrackingNumber: "1Z999AA10123456784",
		TrackingURL: "https://www.ups.com/track?tracknum=1Z999AA10123456784",
	}
	preparing = concierge.Order{
		Name: "#1051", FinancialStatus: "paid",
		CreatedAt: time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC),
	}
	policies = map[string]string{
		concierge.PolicyReturns:  "Returns are accepted within 30 days of delivery, unworn and with tags.",
		concierge.PolicyShipping: "We ship within 2 working days; delivery takes 3 to 5 days in the EU.",
		concierge.PolicyContact:  "Write to us from the contact page; we answer within a day.",
	}
)

func question(text string) concierge.Question {
	return concierge.Question{
		ShopName: "Linen & Co", Text: text, FirstName: "Ada",
		Orders: []concierge.Order{shipped, preparing}, Policies: policies,
	}
}

func TestEmbeddedAnswers(t *testing.T) {
	only := func(text string, orders ...concierge.Order) concierge.Question {
		q := question(text)
		q.Orders = orders
		return q
	}
	noPolicies := func(text string) concierge.Question {
		q := question(text)
		q.Policies = nil
		return q
	}
	tests := []struct {
		name       string
		q          concierge.Question
		confidence float64
		sources    []string
		unanswered bool
		says       []string
	}{
		{
			name: "where is my order: the latest of several", q: question("Where is my order?"),
			confidence: concierge.ConfidenceLatestOrder, sources: []string{"order:#1051"},
			says: []string{"Hi Ada!", "#1051", "20 November 2026", "paid", "not shipped yet"},
		},
		{
			name: "order number picks that order", q: question("has order #1043 shipped?"),
			confidence: concierge.ConfidenceNamedOrder, sources: []string{"order:#1043"},
			says: []string{"#1043", "has shipped with UPS", "1Z999AA10123456784", "https://www.ups.com/track?tracknum=1Z999AA10123456784"},
		},
		{
			name: "order number without its #", q: question("any news on 1043"),
			confidence: concierge.ConfidenceNamedOrder, sources: []string{"order:#1043"}, says: []string{"has shipped"},
		},
		{
			name: "tracking of the only order", q: only("tracking number please", shipped),
			confidence: concierge.ConfidenceOnlyOrder, sources: []string{"order:#1043"}, says: []string{"1Z999AA10123456784"},
		},
		{
			name: "when will it arrive", q: only("When will it arrive?", preparing),
			confidence: concierge.ConfidenceOnlyOrder, sources: []string{"order:#1051"}, says: []string{"tracking details as soon as it ships"},
		},
		{
			name: "has my order shipped, none yet", q: only("has my order shipped", concierge.Order{Name: "#7", FinancialStatus: "pending"}),
			confidence: concierge.ConfidenceOnlyOrder, sources: []string{"order:#7"}, says: []string{"waiting for its payment"},
		},
		{
			name: "not received yet", q: only("I still haven't received my package", shipped),
			confidence: concierge.ConfidenceOnlyOrder, sources: []string{"order:#1043"}, says: []string{"has shipped with UPS"},
		},
		{
			name: "shipped without tracking", q: only("where's my order", concierge.Order{Name: "#1100", FinancialStatus: "paid", FulfillmentStatus: "fulfilled"}),
			confidence: concierge.ConfidenceOnlyOrder, sources: []string{"order:#1100"}, says: []string{"has shipped.", "don't have a tracking number"},
		},
		{
			name: "partly shipped", q: only("order status?", concierge.Order{Name: "#1101", FinancialStatus: "paid", FulfillmentStatus: "partial", TrackingNumber: "TN1"}),
			confidence: concierge.ConfidenceOnlyOrder, sources: []string{"order:#1101"}, says: []string{"partly shipped", "TN1"},
		},
		{
			name: "cancelled and refunded", q: only("where is my order", concierge.Order{Name: "#1102", FinancialStatus: "refunded", Cancelled: true}),
			confidence: concierge.ConfidenceOnlyOrder, sources: []string{"order:#1102"}, says: []string{"was cancelled", "has been refunded"},
		},
		{
			name: "a status it does not know is said as recorded, less sure", q: only("where is my order", concierge.Order{Name: "#1103", FinancialStatus: "paid", FulfillmentStatus: "restocked"}),
			confidence: concierge.ConfidenceOddStatus, sources: []string{"order:#1103"}, says: []string{"recorded as paid and restocked"},
		},
		{
			name: "an order number that is not theirs", q: question("where is order #9999?"),
			confidence: concierge.ConfidenceMissingData, unanswered: true, says: []string{"can't find order #9999", "passing your message to the team"},
		},
		{
			name: "no orders at all", q: only("where is my order?"),
			confidence: concierge.ConfidenceMissingData, unanswered: true, says: []string{"can't find a recent order"},
		},
		{
			name: "returns policy", q: question("How do I return a shirt?"),
			confidence: concierge.ConfidencePolicy, sources: []string{"policy:returns"}, says: []string{"within 30 days"},
		},
		{
			name: "returning a named order is a returns question", q: question("can I send back order #1043"),
			confidence: concierge.ConfidencePolicy, sources: []string{"policy:returns"}, says: []string{"within 30 days"},
		},
		{
			name: "shipping policy", q: question("Do you ship internationally? What are shipping costs?"),
			confidence: concierge.ConfidencePolicy, sources: []string{"policy:shipping"}, says: []string{"2 working days"},
		},
		{
			name: "the shipping status of an order is about the order", q: question("what's the shipping status of #1043"),
			confidence: concierge.ConfidenceNamedOrder, sources: []string{"order:#1043"}, says: []string{"has shipped"},
		},
		{
			name: "contact", q: question("how can I contact you?"),
			confidence: concierge.ConfidencePolicy, sources: []string{"policy:contact"}, says: []string{"contact page"},
		},
		{
			name: "a policy the merchant did not enter", q: noPolicies("what is your return policy"),
			confidence: concierge.ConfidenceMissingData, unanswered: true, says: []string{"don't have the shop's returns policy"},
		},
		{
			name: "greeting", q: question("Hello there"),
			confidence: concierge.ConfidenceGreeting, says: []string{"Hi Ada!", "Linen & Co's assistant"},
		},
		{
			name: "anything else", q: question("Is the blue linen made in Portugal?"),
			confidence: concierge.ConfidenceDoNotKnow, unanswered: true, says: []string{"don't know"},
		},
		{
			name: "empty text", q: question("   "),
			confidence: concierge.ConfidenceDoNotKnow, unanswered: true, says: []string{"don't know"},
		},
	}
	e := concierge.NewEmbedded()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := e.Answer(context.Background(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if a.Confidence != tt.confidence {
				t.Errorf("confidence %v, want %v", a.Confidence, tt.confidence)
			}
			if !reflect.DeepEqual(a.Sources, tt.sources) {
				t.Errorf("sources %q, want %q", a.Sources, tt.sources)
			}
			if a.Unanswered != tt.unanswered {
				t.Errorf("unanswered %v, want %v", a.Unanswered, tt.unanswered)
			}
			if a.Escalation != "" {
				t.Errorf("escalation %q, want none", a.Escalation)
			}
			for _, s := range tt.says {
				if !strings.Contains(a.Text, s) {
					t.Errorf("answer %q does not say %q", a.Text, s)
				}
			}
		})
	}
}

// The default rules send the embedded answerer's "I don't know" to a
// human and let its order and policy answers through.
func TestEmbeddedWithTheDefaultRules(t *testing.T) {
	var rules concierge.Rules
	e := concierge.NewEmbedded()
	for text, want := range map[string]string{
		"where is my order":              "",
		"what is your returns policy?":   "",
		"hi":                             "",
		"where is order #9999":           concierge.ReasonLowConfidence,
		"do you sell gift cards?":        concierge.ReasonLowConfidence,
		"I want a refund for order 1043": concierge.ReasonKeyword,
	} {
		q := question(text)
		a, err := e.Answer(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if _, reason := rules.Decide(q, a); reason != want {
			t.Errorf("%q: reason %q, want %q (answer %+v)", text, reason, want, a)
		}
	}
}

func TestEmbeddedIsDeterministic(t *testing.T) {
	e := concierge.NewEmbedded()
	q := question("hello, where is my order and what about returns?")
	first, err := e.Answer(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	// The orders' order in the slice does not change the answer either.
	for i := range 50 {
		if i%2 == 1 {
			slices.Reverse(q.Orders)
		}
		a, err := e.Answer(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, first) {
			t.Fatalf("answer %d differs:\n%+v\n%+v", i, a, first)
		}
	}
}

func TestEmbeddedLatestOrderTieDoesNotDependOnTheSlice(t *testing.T) {
	a1 := concierge.Order{Name: "#2001", FinancialStatus: "paid", CreatedAt: preparing.CreatedAt}
	a2 := concierge.Order{Name: "#2002", FinancialStatus: "paid", CreatedAt: preparing.CreatedAt}
	e := concierge.NewEmbedded()
	for _, orders := range [][]concierge.Order{{a1, a2}, {a2, a1}} {
		q := question("where is my order")
		q.Orders = orders
		a, err := e.Answer(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.Sources, []string{"order:#2002"}) {
			t.Errorf("sources %q, want order:#2002", a.Sources)
		}
	}
}

func TestEmbeddedHonoursTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := concierge.NewEmbedded().Answer(ctx, question("where is my order")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func FuzzEmbeddedAnswer(f *testing.F) {
	for _, s := range []string{
		"where is my order", "#1043", "order no. 99999999999999999999", "Hi!", "", "return",
		"ÀÉÎ \u0000 \xff\xfe", "order #", "# 123 order number #456", strings.Repeat("track ", 1000),
	} {
		f.Add(s, "Ada")
	}
	e := concierge.NewEmbedded()
	f.Fuzz(func(t *testing.T, text, firstName string) {
		q := question(text)
		q.FirstName = firstName
		a, err := e.Answer(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(a.Confidence) || a.Confidence < 0 || a.Confidence > 1 {
			t.Fatalf("confidence %v out of [0, 1]", a.Confidence)
		}
		if strings.TrimSpace(a.Text) == "" {
			t.Fatal("empty answer")
		}
		if !utf8.ValidString(a.Text) && utf8.ValidString(text) && utf8.ValidString(firstName) {
			t.Fatalf("answer is not valid UTF-8: %q", a.Text)
		}
		known := q.KnownSources()
		for _, s := range a.Sources {
			if !slices.Contains(known, s) {
				t.Fatalf("source %q is not in the question's data %q", s, known)
			}
		}
		again, _ := e.Answer(context.Background(), q)
		if !reflect.DeepEqual(a, again) {
			t.Fatalf("not deterministic: %+v then %+v", a, again)
		}
	})
}
