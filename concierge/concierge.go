package concierge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Answerer answers a customer's inbound message from the data in the
// question.
//
// Implementations are safe for concurrent use. Answer honours ctx: it
// returns promptly once ctx is done, with an error. A question the
// answerer cannot answer is not an error: it is an Answer with a low
// confidence and Unanswered set, which the Rules send to the human queue.
// An error means no answer was produced at all (the provider was
// unreachable, refused the key, or rate-limited us); adapters return a
// *ProviderError so that the caller can tell whether to try again, and
// the caller sends the conversation to the human queue rather than leave
// it unanswered. An Answer's Confidence is always within [0, 1] and its
// Sources only name data the question carried.
type Answerer interface {
	Answer(ctx context.Context, q Question) (Answer, error)
}

// Policy topics the merchant can fill in; Question.Policies may carry
// others, which an answerer may cite but the embedded one does not look
// for.
const (
	PolicyShipping = "shipping"
	PolicyReturns  = "returns"
	PolicyContact  = "contact"
)

// Question is one inbound customer message with the data an answerer may
// use. It carries no e-mail, phone number, address or customer id.
type Question struct {
	// ShopName is the shop's display name.
	ShopName string
	// Text is the customer's inbound message, as received.
	Text string
	// FirstName is the customer's first name, empty when unknown (or
	// erased). Never a full name.
	FirstName string
	// Orders are the customer's recent orders, in any order.
	Orders []Order
	// Policies are the texts the merchant entered, by topic
	// (PolicyShipping, PolicyReturns, PolicyContact, …).
	Policies map[string]string
	// History is the last few messages of the conversation before Text,
	// oldest first.
	History []Message
}

// Order is what an answerer may know of one of the customer's orders:
// no address, no line items, no amounts, no contact details.
type Order struct {
	// Name is the shop's order name, such as "#1043".
	Name string
	// FinancialStatus is the platform's financial status: pending,
	// authorized, partially_paid, paid, partially_refunded, refunded,
	// voided.
	FinancialStatus string
	// FulfillmentStatus is the platform's fulfilment status: empty (not
	// fulfilled yet), partial, fulfilled, restocked.
	FulfillmentStatus string
	// Cancelled is true when the order was cancelled.
	Cancelled bool
	// CreatedAt is when the order was placed.
	CreatedAt time.Time
	// TrackingCompany, TrackingNumber and TrackingURL are the latest
	// fulfilment's tracking details, empty when there are none.
	TrackingCompany string
	TrackingNumber  string
	TrackingURL     string
}

// Roles of a conversation's messages.
const (
	RoleCustomer  = "customer"
	RoleConcierge = "concierge"
	RoleMerchant  = "merchant"
)

// Message is one earlier message of the conversation.
type Message struct {
	// Role is RoleCustomer, RoleConcierge or RoleMerchant.
	Role string
	// Text is the message's text.
	Text string
	// At is when the message was received or sent.
	At time.Time
	// Unanswered is true for a concierge message that was an answer's
	// "I don't know" (Answer.Unanswered): the repeated-unanswered rule
	// counts them.
	Unanswered bool
}

// Answer is an answerer's reply to a Question.
type Answer struct {
	// Text is the reply to send to the customer; empty when the
	// answerer produced none (then Confidence is 0 and Escalation says
	// why).
	Text string
	// Confidence is the answerer's confidence in Text, within [0, 1].
	Confidence float64
	// Sources name the data the answer used: SourceOrder(name),
	// SourcePolicy(topic).
	Sources []string
	// Escalation is the answerer's own reason to hand the conversation
	// to a human (ReasonInvalidOutput), empty when it has none. Rules
	// honour it.
	Escalation string
	// Unanswered is true when the answer says the answerer could not
	// answer the question (an "I don't know").
	Unanswered bool
}

// SourceOrder names an order as an answer's source: "order:#1043".
func SourceOrder(name string) string { return "order:" + name }

// SourcePolicy names a policy as an answer's source: "policy:returns".
func SourcePolicy(topic string) string { return "policy:" + topic }

// KnownSources returns the sources q makes available, in a stable order:
// its orders, then its policies with a non-empty text, by topic.
func (q Question) KnownSources() []string {
	var out []string
	for _, o := range q.Orders {
		if o.Name != "" {
			out = append(out, SourceOrder(o.Name))
		}
	}
	for _, topic := range sortedTopics(q.Policies) {
		out = append(out, SourcePolicy(topic))
	}
	return out
}

// ProviderError is an answering provider's failure to produce an answer.
// Code is safe to record and show ("rate_limited", "unauthorized",
// "timeout", …); it never holds the key, the question or the provider's
// free text.
type ProviderError struct {
	Code string
	// Retryable is true when the same question may get an answer later
	// (rate limits, timeouts, the provider's 5xx), false when it never
	// will (bad key, exhausted quota, a request the provider rejects).
	Retryable bool
	// RetryAfter is the provider's Retry-After hint, 0 when none.
	RetryAfter time.Duration
	// Status is the HTTP status received, 0 when none.
	Status int
	err    error
}

// Codes of ProviderError.
const (
	CodeTimeout         = "timeout"
	CodeConnectFailed   = "connect_failed"
	CodeRateLimited     = "rate_limited"
	CodeQuotaExhausted  = "quota_exhausted"
	CodeUnauthorized    = "unauthorized"
	CodeRejected        = "rejected"
	CodeProviderError   = "provider_error"
	CodeInvalidResponse = "invalid_response"
	CodeInvalidRequest  = "invalid_request"
)

// NewProviderError returns a ProviderError with its cause (for the log,
// never shown to a shop).
func NewProviderError(code string, retryable bool, status int, cause error) *ProviderError {
	return &ProviderError{Code: code, Retryable: retryable, Status: status, err: cause}
}

func (e *ProviderError) Error() string {
	msg := "concierge provider: " + e.Code
	if e.Status != 0 {
		msg += fmt.Sprintf(" (http %d)", e.Status)
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *ProviderError) Unwrap() error { return e.err }

func sortedTopics(policies map[string]string) []string {
	topics := make([]string, 0, len(policies))
	for topic, text := range policies {
		if strings.TrimSpace(text) != "" {
			topics = append(topics, topic)
		}
	}
	slices.Sort(topics)
	return topics
}
