package concierge

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Confidences the embedded answerer gives. They are fixed numbers, not a
// model's estimate: an answer read off the order the customer named is as
// sure as the data; one about "your order" when there are several is a
// guess at the latest; a policy is the merchant's text, which may or may
// not cover the exact question.
const (
	ConfidenceNamedOrder  = 0.95
	ConfidenceOnlyOrder   = 0.9
	ConfidenceGreeting    = 0.9
	ConfidenceLatestOrder = 0.8
	ConfidencePolicy      = 0.75
	ConfidenceOddStatus   = 0.5
	ConfidenceMissingData = 0.2
	ConfidenceDoNotKnow   = 0.1
)

const (
	maxPolicyRunes         = 1000
	maxFirstNameRunes      = 40
	intentOrder            = "order"
	intentReturns          = "returns"
	intentShipping         = "shipping"
	intentContact          = "contact"
	intentGreeting         = "greeting"
	maxOrderNumberInAnswer = 12
)

// Embedded is the default answerer: no network, no model. It recognises
// a few intents by their words (where an order is, its tracking, returns,
// shipping, how to reach the shop, a greeting) and answers them from the
// question's orders and policies; anything else gets an "I don't know"
// with a low confidence, which the Rules send to a human. The same
// question always gets the same answer. The zero value is ready to use.
type Embedded struct{}

// NewEmbedded returns the embedded answerer.
func NewEmbedded() *Embedded { return &Embedded{} }

// cues are the words that point at each intent, with their weight: an
// unambiguous phrase weighs 3, a telling word 2, a word that is often
// there for other reasons 1.
var cues = map[string]map[string]int{
	intentOrder: {
		"where is my order": 3, "where s my order": 3, "wheres my order": 3, "where is my package": 3,
		"has my order shipped": 3, "did my order ship": 3, "has it shipped": 3, "order status": 3,
		"status of my order": 3, "when will it arrive": 3, "when will my order arrive": 3,
		"when will i get": 2, "when will i receive": 2, "tracking": 2, "track": 2, "shipped": 2,
		"dispatched": 2, "arrive": 2, "my package": 2, "my parcel": 2,
		"arrived": 1, "delivered": 1, "received": 1, "my order": 1, "status": 1,
	},
	intentReturns: {
		"return policy": 4, "returns policy": 4, "return": 3, "returns": 3, "returning": 3,
		"send it back": 3, "send back": 3, "exchange": 2, "wrong size": 2, "doesn t fit": 2,
	},
	intentShipping: {
		"shipping policy": 4, "ship internationally": 3, "shipping cost": 3, "shipping costs": 3,
		"free shipping": 3, "how long does shipping": 3, "how long does delivery": 3,
		"shipping": 2, "ship to": 2, "deliver to": 2, "delivery time": 2, "delivery times": 2,
		"international": 1,
	},
	intentContact: {
		"contact": 3, "reach you": 3, "opening hours": 3, "business hours": 3,
		"call you": 2, "email": 2, "e mail": 2, "phone number": 2, "phone": 1, "support": 1,
	},
	intentGreeting: {
		"hi": 1, "hello": 1, "hey": 1, "good morning": 1, "good afternoon": 1, "good evening": 1,
		"thanks": 1, "thank you": 1,
	},
}

// priority breaks ties between intents: a return is about an order but
// wants the policy; an order's shipping is about the order.
var priority = []string{intentReturns, intentOrder, intentShipping, intentContact}

// orderNumber finds an order number the customer typed: "#1043",
// "order 1043", "order no. 1043", "order number #1043".
var orderNumber = regexp.MustCompile(`(?i)(?:#\s?|\border\s*(?:number|no\.?|nr\.?|n°)?\s*#?\s*)(\d{3,})\b`)

// Answer answers q from its own data; it fails only when ctx is done.
func (e *Embedded) Answer(ctx context.Context, q Question) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	text := words(q.Text)
	scores := map[string]int{}
	for intent, phrases := range cues {
		for phrase, weight := range phrases {
			if hasPhrase(text, words(phrase)) {
				scores[intent] += weight
			}
		}
	}
	named, mentioned := namedOrder(q, text)
	if named != nil || mentioned != "" {
		scores[intentOrder] += 3
	}
	best, bestScore := "", 0
	for _, intent := range priority {
		if scores[intent] > bestScore {
			best, bestScore = intent, scores[intent]
		}
	}
	hi := greeting(q.FirstName)
	var a Answer
	switch best {
	case intentOrder:
		a = orderAnswer(q, named, mentioned)
	case intentReturns:
		a = policyAnswer(q, PolicyReturns, "returns policy")
	case intentShipping:
		a = policyAnswer(q, PolicyShipping, "shipping policy")
	case intentContact:
		a = policyAnswer(q, PolicyContact, "contact details")
	default:
		if scores[intentGreeting] > 0 {
			return Answer{Text: welcome(hi, q.ShopName), Confidence: ConfidenceGreeting}, nil
		}
		a = doNotKnow("Sorry, I don't know the answer to that.")
	}
	a.Text = hi + a.Text
	return a, nil
}

// namedOrder returns the customer's order that text names, or, when the
// customer typed an order number that is none of theirs, that number.
func namedOrder(q Question, text []string) (*Order, string) {
	for i := range q.Orders {
		name := words(q.Orders[i].Name)
		if len(name) == 0 || !hasDigit(name) {
			continue
		}
		if hasPhrase(text, name) {
			return &q.Orders[i], ""
		}
	}
	if m := orderNumber.FindStringSubmatch(q.Text); m != nil && len(m[1]) <= maxOrderNumberInAnswer {
		return nil, m[1]
	}
	return nil, ""
}

func hasDigit(ws []string) bool {
	for _, w := range ws {
		for _, c := range w {
			if unicode.IsDigit(c) {
				return true
			}
		}
	}
	return false
}

func orderAnswer(q Question, named *Order, mentioned string) Answer {
	if mentioned != "" {
		return missing("I can't find order #" + mentioned + " among your recent orders.")
	}
	confidence := ConfidenceNamedOrder
	o := named
	if o == nil {
		if len(q.Orders) == 0 {
			return missing("I can't find a recent order of yours.")
		}
		o = latest(q.Orders)
		confidence = ConfidenceLatestOrder
		if len(q.Orders) == 1 {
			confidence = ConfidenceOnlyOrder
		}
	}
	name := o.Name
	if name == "" {
		name = "your order"
	} else {
		name = "your order " + name
	}
	placed := ""
	if !o.CreatedAt.IsZero() {
		placed = " (placed " + o.CreatedAt.Format("2 January 2006") + ")"
	}
	var b strings.Builder
	b.WriteString(upperFirst(name) + placed)
	switch {
	case o.Cancelled:
		b.WriteString(" was cancelled.")
		switch o.FinancialStatus {
		case "refunded":
			b.WriteString(" It has been refunded.")
		case "partially_refunded":
			b.WriteString(" It has been partly refunded.")
		}
	case o.FulfillmentStatus == "fulfilled":
		b.WriteString(" has shipped")
		writeTracking(&b, *o)
	case o.FulfillmentStatus == "partial":
		b.WriteString(" has partly shipped: some items are on their way, the rest will follow")
		writeTracking(&b, *o)
	case o.FulfillmentStatus == "" && (o.FinancialStatus == "paid" || o.FinancialStatus == "partially_refunded"):
		b.WriteString(" is paid and being prepared; it has not shipped yet. You will get its tracking details as soon as it ships.")
	case o.FulfillmentStatus == "" && (o.FinancialStatus == "pending" || o.FinancialStatus == "authorized" || o.FinancialStatus == "partially_paid"):
		b.WriteString(" is waiting for its payment to be confirmed; it will be prepared and shipped once it is.")
	case o.FulfillmentStatus == "" && o.FinancialStatus == "refunded":
		b.WriteString(" has been refunded and will not ship.")
	case o.FulfillmentStatus == "" && o.FinancialStatus == "voided":
		b.WriteString(" had its payment voided and will not ship.")
	default:
		// restocked, or a status this answerer does not know: say what
		// the data says, not what it might mean.
		b.WriteString(" is recorded as " + statusWords(*o) + ".")
		confidence = min(confidence, ConfidenceOddStatus)
	}
	return Answer{Text: b.String(), Confidence: confidence, Sources: []string{SourceOrder(o.Name)}}
}

// writeTracking ends the sentence "… has shipped" with what is known of
// the parcel.
func writeTracking(b *strings.Builder, o Order) {
	if o.TrackingCompany != "" {
		b.WriteString(" with " + o.TrackingCompany)
	}
	b.WriteString(".")
	if o.TrackingNumber != "" {
		b.WriteString(" Tracking number: " + o.TrackingNumber + ".")
	}
	if o.TrackingURL != "" {
		b.WriteString(" You can follow it here: " + o.TrackingURL)
	}
	if o.TrackingNumber == "" && o.TrackingURL == "" {
		b.WriteString(" I don't have a tracking number for it.")
	}
}

func statusWords(o Order) string {
	var parts []string
	if o.FinancialStatus != "" {
		parts = append(parts, strings.ReplaceAll(o.FinancialStatus, "_", " "))
	}
	if o.FulfillmentStatus != "" {
		parts = append(parts, strings.ReplaceAll(o.FulfillmentStatus, "_", " "))
	}
	if len(parts) == 0 {
		return "having no status yet"
	}
	return strings.Join(parts, " and ")
}

// latest returns the most recent order; equal times go to the greater
// name, so that the choice does not depend on the slice's order.
func latest(orders []Order) *Order {
	best := &orders[0]
	for i := 1; i < len(orders); i++ {
		o := &orders[i]
		if o.CreatedAt.After(best.CreatedAt) || (o.CreatedAt.Equal(best.CreatedAt) && o.Name > best.Name) {
			best = o
		}
	}
	return best
}

func policyAnswer(q Question, topic, what string) Answer {
	text := strings.TrimSpace(q.Policies[topic])
	if text == "" {
		return missing("I don't have the shop's " + what + " at hand.")
	}
	if utf8.RuneCountInString(text) > maxPolicyRunes {
		text = string([]rune(text)[:maxPolicyRunes]) + "…"
	}
	return Answer{
		Text:       "Our " + what + ": " + text,
		Confidence: ConfidencePolicy,
		Sources:    []string{SourcePolicy(topic)},
	}
}

// missing is the answer to a question the answerer understood but has no
// data for.
func missing(why string) Answer {
	a := doNotKnow(why)
	a.Confidence = ConfidenceMissingData
	return a
}

func doNotKnow(why string) Answer {
	return Answer{
		Text:       why + " I'm passing your message to the team, who will get back to you.",
		Confidence: ConfidenceDoNotKnow,
		Unanswered: true,
	}
}

func welcome(hi, shop string) string {
	if hi == "" {
		hi = "Hello! "
	}
	who := "the shop's assistant"
	if s := strings.TrimSpace(shop); s != "" && printable(s) {
		who = s + "'s assistant"
	}
	return hi + "I'm " + who + ": I can tell you where your order is and answer questions about shipping, returns and how to reach us. How can I help?"
}

// greeting is "Hi Ada! " for a usable first name, empty otherwise.
func greeting(firstName string) string {
	n := strings.TrimSpace(firstName)
	if n == "" || utf8.RuneCountInString(n) > maxFirstNameRunes || !printable(n) {
		return ""
	}
	return "Hi " + n + "! "
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
