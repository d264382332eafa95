package domain

import (
	"strings"
	"time"
)

// erasureEvents lists the events of the customer erase pipeline.
func erasureEvents() []EventSpec {
	return []EventSpec{
		{Name: "CustomerErased", Version: 1, New: func() Event { return &CustomerErased{} }},
		{Name: "JourneyEnrollmentExited", Version: 1, New: func() Event { return &JourneyEnrollmentExited{} }},
	}
}

// Reasons an enrollment is exited.
const ExitCustomerErased = "customer_erased"

// CustomerErased is the audit entry of a customers/redact: the data keys of
// Subjects were shredded (so every personal field sealed with them is
// unrecoverable from the log), and every read model nulls the customer's
// personal data when it folds this event. It carries ids only: no
// personal data, so it stays readable for auditors for good.
type CustomerErased struct {
	ShopID     string `json:"shop_id"`
	CustomerID string `json:"customer_id"` // cus_…: the platform customer's id
	// Subjects are every data subject whose key was shredded: the customer,
	// the messaging identity of the phone the request named, the guest
	// subjects of the orders it listed, and the request's own subject.
	Subjects []string `json:"subjects"`
	// MessagingCustomerID is the customer id of the phone the request
	// named (CustomerIDFromPhone), "" when it named none.
	MessagingCustomerID string   `json:"messaging_customer_id,omitempty"`
	Orders              []string `json:"orders,omitempty"` // ord_… the request listed
	RequestEventID      string   `json:"request_event_id"`
	EnrollmentsExited   int      `json:"enrollments_exited"`
	// Known is false when the service held nothing on the customer (the
	// request is still recorded and its subjects shredded).
	Known    bool      `json:"known"`
	ErasedAt time.Time `json:"erased_at"`
}

// EventType implements Event.
func (CustomerErased) EventType() string { return "CustomerErased" }

// ErasureSubjects are the data subjects a customers/redact names: the
// customer, the messaging identity of its phone, the guest subjects of the
// orders it lists (external ids), and the request's own subject.
func ErasureSubjects(shopID string, c PrivacyCustomer, externalOrders []string) (subjects []string, messaging string) {
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			subjects = append(subjects, s)
		}
	}
	add(c.CustomerID)
	if wa := PhoneDigits(c.Phone); wa != "" {
		messaging = CustomerIDFromPhone(shopID, wa)
		add(messaging)
	}
	for _, o := range externalOrders {
		add(GuestSubject(shopID, o))
	}
	add(privacySubject(shopID, c))
	return subjects, messaging
}

// PhoneDigits is a phone number as WhatsApp's wa_id spells it: its digits
// only ("+1 (555) 010-0000" → "15550100000"); "" when it has none.
func PhoneDigits(phone string) string {
	var b strings.Builder
	for _, r := range phone {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// JourneyEnrollmentExited: an active enrollment ended before its journey
// did (Reason ExitCustomerErased: the customer was erased).
type JourneyEnrollmentExited struct {
	EnrollmentID string    `json:"enrollment_id"`
	JourneyID    string    `json:"journey_id"`
	ShopID       string    `json:"shop_id"`
	CustomerID   string    `json:"customer_id"`
	Reason       string    `json:"reason"`
	ExitedAt     time.Time `json:"exited_at"`
}

// EventType implements Event.
func (JourneyEnrollmentExited) EventType() string { return "JourneyEnrollmentExited" }

// Exit decides the exit of the customer's active enrollment in the
// journey: nil when none is active.
func (a *JourneyEnrollments) Exit(shopID, journeyID, customerID, reason string, now time.Time) *JourneyEnrollmentExited {
	if a.Active == "" {
		return nil
	}
	return &JourneyEnrollmentExited{EnrollmentID: a.Active, JourneyID: journeyID, ShopID: shopID, CustomerID: customerID,
		Reason: reason, ExitedAt: now.UTC()}
}
