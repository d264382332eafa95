package domain

import (
	"strings"
	"time"
)

// Marketing consent per channel (issue 17, "Consent"). The commerce
// platform's consent states arrive in the customer snapshots
// (CustomerProfile's EmailConsent, SMSConsent and AcceptsMarketing) and are
// folded by the customers read model as they are, with no event of their
// own: the snapshot is the record. Decisions the service itself takes in —
// a WhatsApp STOP or START reply, an unsubscribe link, the admin API — are
// CustomerConsentChanged events on the customer's consent stream
// (ConsentStream). Between the two, the most recent decision wins.

// ChannelSMS is the SMS channel (ChannelEmail and ChannelWhatsApp are the
// campaigns').
const ChannelSMS = "sms"

// ConsentChannels are the channels consent is kept for.
func ConsentChannels() []string { return []string{ChannelEmail, ChannelSMS, ChannelWhatsApp} }

// Consent states of a decision. The platform's own states (subscribed,
// not_subscribed, unsubscribed, pending, redacted, invalid) are kept as it
// sends them; only subscribed is consent.
const (
	ConsentSubscribed   = "subscribed"
	ConsentUnsubscribed = "unsubscribed"
	// ConsentUnknown is shown for a channel nothing is known of.
	ConsentUnknown = "unknown"
)

// Sources of a consent state.
const (
	// ConsentSourcePlatform: the commerce platform's customer snapshot.
	ConsentSourcePlatform = "platform"
	// ConsentSourceInboundReply: a STOP- or START-type inbound reply.
	ConsentSourceInboundReply = "inbound_reply"
	// ConsentSourceUnsubscribeLink: an unsubscribe link of a message.
	ConsentSourceUnsubscribeLink = "unsubscribe_link"
	// ConsentSourceAPI: POST /api/v1/customers/{id}/consents.
	ConsentSourceAPI = "api"
)

// ConsentStream is the stream of one customer's consent decisions.
func ConsentStream(customerID string) string { return "consent-" + customerID }

func consentEvents() []EventSpec {
	return []EventSpec{
		{Name: "CustomerConsentChanged", Version: 1, New: func() Event { return &CustomerConsentChanged{} }},
	}
}

// CustomerConsentChanged: the service took in a customer's marketing
// consent decision on one channel (subscribed or unsubscribed) from an
// inbound reply, an unsubscribe link or the API. It carries ids and
// states only, no personal data.
type CustomerConsentChanged struct {
	ShopID     string `json:"shop_id"`
	CustomerID string `json:"customer_id"`
	Channel    string `json:"channel"`
	State      string `json:"state"`
	Source     string `json:"source"`
	// MessageID is the message the decision came from (an unsubscribe
	// link's or a reply's), "" when none.
	MessageID string    `json:"message_id,omitempty"`
	At        time.Time `json:"at"`
}

// EventType implements Event.
func (CustomerConsentChanged) EventType() string { return "CustomerConsentChanged" }

// ConsentDecision is a request to record a consent decision.
type ConsentDecision struct {
	ShopID, CustomerID, Channel, State, Source, MessageID string
	// At is when the customer decided; zero stands for now.
	At time.Time
}

// maxConsentMessageID bounds a decision's message id.
const maxConsentMessageID = 256

// Decide validates a decision and returns its event; now stands for a
// missing time. Errors name the field (channel, state, source,
// customer_id, message_id).
func (d ConsentDecision) Decide(now time.Time) (*CustomerConsentChanged, error) {
	switch {
	case d.ShopID == "" || d.CustomerID == "" || len(d.CustomerID) > 128:
		return nil, Invalid("customer_id", "a consent decision needs a shop and a customer")
	case !oneOfConsent(d.Channel, ConsentChannels()...):
		return nil, Invalid("channel", "the channel must be one of email, sms, whatsapp")
	case !oneOfConsent(d.State, ConsentSubscribed, ConsentUnsubscribed):
		return nil, Invalid("state", "the state must be subscribed or unsubscribed")
	case !oneOfConsent(d.Source, ConsentSourceInboundReply, ConsentSourceUnsubscribeLink, ConsentSourceAPI):
		return nil, Invalid("source", "the source must be one of inbound_reply, unsubscribe_link, api")
	case len(d.MessageID) > maxConsentMessageID:
		return nil, Invalid("message_id", "the message id is longer than %d characters", maxConsentMessageID)
	}
	at := d.At
	if at.IsZero() {
		at = now
	}
	return &CustomerConsentChanged{ShopID: d.ShopID, CustomerID: d.CustomerID, Channel: d.Channel, State: d.State,
		Source: d.Source, MessageID: d.MessageID, At: at.UTC()}, nil
}

// ConsentGiven tells whether a state is consent: only "subscribed". Every
// other state (not_subscribed, unsubscribed, pending — a double opt-in not
// confirmed yet —, redacted, invalid, unknown) is not.
func ConsentGiven(state string) bool { return state == ConsentSubscribed }

// PlatformConsentState is the platform's consent state as kept: trimmed,
// lower case (the REST payloads send lower case, the GraphQL enums upper
// case), "" when longer than 64 characters (no state the platform sends).
func PlatformConsentState(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) > 64 {
		return ""
	}
	return s
}

func oneOfConsent(s string, set ...string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// Reply keywords (the whole message, trimmed, case-folded, inner runs of
// white space as one space): the opt-out words carriers and messaging
// platforms honour in English plus common French, German, Spanish,
// Italian and Portuguese ones, and the opt-in words.
var (
	replyOptOut = []string{"stop", "stop all", "stopall", "unsubscribe", "cancel", "end", "quit", "optout", "opt out", "opt-out",
		"arret", "arrêt", "stopp", "baja", "alto", "basta", "parar", "sair", "desinscribir", "désinscrire", "abmelden"}
	replyOptIn = []string{"start", "subscribe", "yes", "unstop", "optin", "opt in", "opt-in"}
)

// ReplyOptOutKeywords are the inbound replies that unsubscribe.
func ReplyOptOutKeywords() []string { return append([]string(nil), replyOptOut...) }

// ReplyOptInKeywords are the inbound replies that subscribe.
func ReplyOptInKeywords() []string { return append([]string(nil), replyOptIn...) }

// ReplyConsent reads an inbound text as a consent keyword: unsubscribed
// for an opt-out word, subscribed for an opt-in word, "" for any other
// text (a customer writing to the shop is not consent to marketing).
func ReplyConsent(text string) string {
	if len(text) > 64 {
		return ""
	}
	w := strings.ToLower(strings.Join(strings.Fields(text), " "))
	switch {
	case oneOfConsent(w, replyOptOut...):
		return ConsentUnsubscribed
	case oneOfConsent(w, replyOptIn...):
		return ConsentSubscribed
	}
	return ""
}
