package concierge_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/concierge"
)

// An inbound message on a Pro+ shop: the rules look at it first, the
// embedded answerer answers from the customer's orders, and the rules
// decide whether the answer goes out or the conversation goes to a human.
func ExampleEmbedded_Answer() {
	q := concierge.Question{
		ShopName:  "Linen & Co",
		Text:      "Hi! Where is my order #1043?",
		FirstName: "Ada",
		Orders: []concierge.Order{{
			Name: "#1043", FinancialStatus: "paid", FulfillmentStatus: "fulfilled",
			CreatedAt:       time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC),
			TrackingCompany: "UPS", TrackingNumber: "1Z999AA10123456784",
		}},
	}
	var rules concierge.Rules // the defaults
	if escalate, reason := rules.Before(q); escalate {
		fmt.Println("to the human queue:", reason)
		return
	}
	a, err := concierge.NewEmbedded().Answer(context.Background(), q)
	if err != nil {
		fmt.Println(err)
		return
	}
	escalate, reason := rules.Decide(q, a)
	fmt.Println(a.Text)
	fmt.Printf("%v %q %v %q\n", a.Confidence, a.Sources, escalate, reason)
	// Output:
	// Hi Ada! Your order #1043 (placed 3 November 2026) has shipped with UPS. Tracking number: 1Z999AA10123456784.
	// 0.95 ["order:#1043"] false ""
}

// A refund request never reaches an answerer; the merchant's own keywords
// escalate too.
func ExampleRules_Decide() {
	rules := concierge.Rules{MerchantKeywords: []string{"wholesale"}}
	ok := concierge.Answer{Text: "Our returns policy: …", Confidence: 0.75}
	for _, text := range []string{"I want a refund", "Do you sell wholesale?", "What is your return policy?"} {
		escalate, reason := rules.Decide(concierge.Question{Text: text}, ok)
		fmt.Printf("%v %q\n", escalate, reason)
	}
	escalate, reason := rules.Decide(concierge.Question{Text: "Is it vegan?"}, concierge.Answer{Text: "I don't know.", Confidence: 0.1})
	fmt.Printf("%v %q\n", escalate, reason)
	// Output:
	// true "keyword"
	// true "merchant_keyword"
	// false ""
	// true "low_confidence"
}
