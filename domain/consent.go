package domain

import (
	"strings"
	"time"
)

// Marketing consent per channel (issue 17, "Consent"). A customer's consent
// to marketing messages is kept per channel on its own stream
// (ConsentStream), one MarketingConsentChanged each time a channel's state
// changes; a repeat of the current state records nothing. The events carry
// ids and states only, no personal data.

// ChannelSMS is the SMS channel (ChannelEmail and ChannelWhatsApp are the
// campaigns').
const ChannelSMS = "sms"

// ConsentChannels are the channels consent is recorded for.
func ConsentChannels() []string { return []string{ChannelEmail, ChannelSMS, ChannelWhatsApp} }

// Consent states of our own (the platform's states are recorded as it
// sends them: subscribed, not_subscribed, unsubscribed, pending, redacted,
// invalid).
const (
	ConsentOptedIn  = "opted_in"
	ConsentOptedOut = "opted_out"
	// ConsentSubscribed is the only platform state that is consent.
	ConsentSubscribed = "subscribed"
)

// Sources of a consent change.
const (
	ConsentSourcePlatform      = "platform"
	ConsentSourceWhatsAppReply = "whatsapp_reply"
	ConsentSourceAPI           = "api"
)

// ConsentStream is the stream of one customer's marketing consent.
func ConsentStream(customerID string) string { return "consent-" + customerID }

func consentEvents() []EventSpec {
	return []EventSpec{
		{Name: "MarketingConsentChanged", Version: 1, New: func() Event { return &MarketingConsentChanged{} }},
	}
}

// MarketingConsentChanged: a customer's marketing consent on one channel
// changed. State is the platform's state or opted_in/opted_out; Consented
// is whether marketing messages may go to the customer on the channel.
type MarketingConsentChanged struct {
	ShopID     string    `json:"shop_id"`
	CustomerID string    `json:"customer_id"`
	Channel    string    `json:"channel"`
	Consented  bool      `json:"consented"`
	State      string    `json:"state"`
	Source     string    `json:"source"`
	At         time.Time `json:"at"`
	// SourcePosition is the log position of the event the change comes
	// from (0 for a change from no event).
	SourcePosition uint64 `json:"source_position,omitempty"`
}

// EventType implements Event.
func (MarketingConsentChanged) EventType() string { return "MarketingConsentChanged" }

// ConsentChange is a request to record a customer's consent state on a
// channel.
type ConsentChange struct {
	ShopID, CustomerID, Channel string
	State, Source               string
	At                          time.Time
	// SourcePosition is the log position of the event the change comes
	// from; 0 for a change from no event (always decided on the state).
	SourcePosition uint64
}

// MarketingConsent is the consent aggregate of one customer: the current
// state per channel, and the log position of the source event of each
// channel's last change. A change from a source event at or before that
// position is older news and records nothing: the reactor sees the log in
// order, so this only happens when it sees events again (a restart from
// an older checkpoint, a rebuild), and a snapshot that changed nothing the
// first time must not undo a later change then.
type MarketingConsent struct {
	States    map[string]string
	Positions map[string]uint64
}

// Apply folds an event into the aggregate.
func (a *MarketingConsent) Apply(e Event) {
	if ev, ok := e.(*MarketingConsentChanged); ok {
		if a.States == nil {
			a.States, a.Positions = map[string]string{}, map[string]uint64{}
		}
		a.States[ev.Channel] = ev.State
		a.Positions[ev.Channel] = max(a.Positions[ev.Channel], ev.SourcePosition)
	}
}

// maxConsentState bounds a state's length (the platform's are short words).
const maxConsentState = 64

// Record decides a consent change: nil when the channel is already in
// that state, or when the change's source event is not after the source
// of the channel's last change. now stands for a missing time.
func (a *MarketingConsent) Record(in ConsentChange, now time.Time) (*MarketingConsentChanged, error) {
	state := strings.ToLower(strings.TrimSpace(in.State))
	switch {
	case in.ShopID == "" || !HasPrefixID(in.CustomerID, PrefixCustomer):
		return nil, Invalid("customer_id", "consent needs a shop and a customer")
	case !oneOf(in.Channel, ConsentChannels()...):
		return nil, Invalid("channel", "the channel must be one of email, sms, whatsapp")
	case state == "" || len(state) > maxConsentState:
		return nil, Invalid("state", "the state must be a word of at most %d characters", maxConsentState)
	case !oneOf(in.Source, ConsentSourcePlatform, ConsentSourceWhatsAppReply, ConsentSourceAPI):
		return nil, Invalid("source", "the source must be one of platform, whatsapp_reply, api")
	}
	if cur, ok := a.States[in.Channel]; ok && cur == state {
		return nil, nil
	}
	if in.SourcePosition != 0 && in.SourcePosition <= a.Positions[in.Channel] {
		return nil, nil
	}
	at := in.At
	if at.IsZero() {
		at = now
	}
	return &MarketingConsentChanged{
		ShopID: in.ShopID, CustomerID: in.CustomerID, Channel: in.Channel,
		Consented: ConsentGiven(state), State: state, Source: in.Source, At: at.UTC(), SourcePosition: in.SourcePosition,
	}, nil
}

// ConsentGiven tells whether a state is consent: the platform's
// "subscribed" or our "opted_in". Every other state (not_subscribed,
// unsubscribed, pending — double opt-in not confirmed yet —, redacted,
// invalid, opted_out) is not.
func ConsentGiven(state string) bool { return state == ConsentSubscribed || state == ConsentOptedIn }

func oneOf(s string, set ...string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// WhatsApp reply keywords (trimmed and case-folded, the whole message):
// the opt-out words carriers and messaging platforms honour in English
// plus the French, German and Spanish ones, and the opt-in words.
var (
	whatsAppOptOut = []string{"stop", "stopall", "unsubscribe", "cancel", "end", "quit", "arret", "arrêt", "stopp", "baja"}
	whatsAppOptIn  = []string{"start", "unstop", "yes", "subscribe"}
)

// WhatsAppReplyConsent reads an inbound WhatsApp text as a consent
// keyword: opted_out for an opt-out word, opted_in for an opt-in word,
// "" for any other text (a customer writing to the shop is not consent to
// marketing).
func WhatsAppReplyConsent(text string) string {
	w := strings.ToLower(strings.TrimSpace(text))
	switch {
	case oneOf(w, whatsAppOptOut...):
		return ConsentOptedOut
	case oneOf(w, whatsAppOptIn...):
		return ConsentOptedIn
	}
	return ""
}
