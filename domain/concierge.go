package domain

import (
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The AI concierge (issue 18, point 4): on pro_plus shops and up, inbound
// customer messages are answered by an answerer (package concierge) from
// the shop's own data, or handed to the human queue. The merchant's
// settings (policies, own escalation keywords, confidence threshold) live
// on their own stream per shop; every answer sent is a ConciergeAnswered
// (what it was based on and how sure) next to the ConversationReplyRequested
// that carries its text.

// AuthorConcierge is the Author of a reply the AI concierge sent.
const AuthorConcierge = "ai_concierge"

// Concierge policy topics the merchant can fill in.
const (
	ConciergePolicyShipping = "shipping"
	ConciergePolicyReturns  = "returns"
	ConciergePolicyContact  = "contact"
)

// ConciergePolicyTopics lists the policy topics, in order.
func ConciergePolicyTopics() []string {
	return []string{ConciergePolicyShipping, ConciergePolicyReturns, ConciergePolicyContact}
}

// Concierge settings limits.
const (
	// MaxConciergePolicy is the longest policy text, in characters.
	MaxConciergePolicy = 2000
	// MaxConciergeKeywords is how many escalation keywords a shop may set.
	MaxConciergeKeywords = 50
	// MaxConciergeKeyword is the longest keyword, in characters.
	MaxConciergeKeyword = 64
	// DefaultConciergeThreshold is the confidence below which an answer
	// is not sent (concierge.DefaultThreshold).
	DefaultConciergeThreshold = 0.6
)

// ConciergeSettings are a shop's concierge settings: its policies by topic
// (only non-empty ones), its own escalation keywords (matched besides the
// built-in ones) and the confidence threshold within [0, 1].
type ConciergeSettings struct {
	Policies  map[string]string `json:"policies"`
	Keywords  []string          `json:"keywords"`
	Threshold float64           `json:"threshold"`
}

// DefaultConciergeSettings: no policies, no keywords of the merchant's,
// the default threshold.
func DefaultConciergeSettings() ConciergeSettings {
	return ConciergeSettings{Policies: map[string]string{}, Keywords: []string{}, Threshold: DefaultConciergeThreshold}
}

// ConciergeSettingsStream is the stream of a shop's concierge settings.
func ConciergeSettingsStream(shopID string) string { return "conciergesettings-" + shopID }

// ConciergeReplyMessageID derives the message id of the concierge's answer
// to an inbound message from that message's event id, so a redelivered
// event or a rebuilt reactor names the same message (sent once).
func ConciergeReplyMessageID(conversationID, inboundEventID string) string {
	return ConversationReplyMessageID(conversationID, "concierge:"+inboundEventID)
}

func conciergeEvents() []EventSpec {
	return []EventSpec{
		{Name: "ConciergeSettingsChanged", Version: 1, New: func() Event { return &ConciergeSettingsChanged{} }},
		{Name: "ConciergeAnswered", Version: 1, New: func() Event { return &ConciergeAnswered{} }},
	}
}

// ConciergeSettingsChanged: a shop changed its concierge settings
// (Settings are all of them as they now are). Policies and keywords are
// the merchant's texts, not a customer's: kept as they are and erased with
// the shop.
type ConciergeSettingsChanged struct {
	ShopID    string            `json:"shop_id"`
	Settings  ConciergeSettings `json:"settings"`
	ChangedAt time.Time         `json:"changed_at"`
}

// EventType implements Event.
func (ConciergeSettingsChanged) EventType() string { return "ConciergeSettingsChanged" }

// ConciergeAnswered: the AI concierge answered the inbound message
// InboundMessageID of a conversation with the reply ReplyMessageID (its
// text is in that reply's ConversationReplyRequested, sealed with the
// customer's key), with Confidence within [0, 1] and the data it used
// (Sources: "order:#1043", "policy:returns"). Answerer names the adapter
// (embedded, openai). No personal data: auditors see what was said in the
// conversation and why here.
type ConciergeAnswered struct {
	ConversationID   string    `json:"conversation_id"`
	ShopID           string    `json:"shop_id"`
	CustomerID       string    `json:"customer_id"`
	InboundMessageID string    `json:"inbound_message_id"`
	ReplyMessageID   string    `json:"reply_message_id"`
	Answerer         string    `json:"answerer"`
	Confidence       float64   `json:"confidence"`
	Sources          []string  `json:"sources"`
	Unanswered       bool      `json:"unanswered,omitempty"`
	AnsweredAt       time.Time `json:"answered_at"`
}

// EventType implements Event.
func (ConciergeAnswered) EventType() string { return "ConciergeAnswered" }

// ConciergeSettingsAgg is the aggregate of a shop's concierge settings.
type ConciergeSettingsAgg struct {
	Settings   ConciergeSettings
	Configured bool
}

// Apply folds an event.
func (a *ConciergeSettingsAgg) Apply(e Event) {
	if ev, ok := e.(*ConciergeSettingsChanged); ok {
		a.Settings, a.Configured = ev.Settings, true
	}
}

// ConciergeSettingsPatch is a partial edit: nil members stay. A policy
// set to "" is removed; Keywords replaces the whole list.
type ConciergeSettingsPatch struct {
	Policies  map[string]*string
	Keywords  *[]string
	Threshold *float64
}

// Empty tells whether the patch changes nothing.
func (p ConciergeSettingsPatch) Empty() bool {
	return p.Policies == nil && p.Keywords == nil && p.Threshold == nil
}

// Configure decides an edit of the settings (422 naming the field, such as
// concierge.policies.returns).
func (a *ConciergeSettingsAgg) Configure(shopID string, p ConciergeSettingsPatch, now time.Time) (*ConciergeSettingsChanged, error) {
	s := DefaultConciergeSettings()
	if a.Configured {
		s.Policies = map[string]string{}
		for k, v := range a.Settings.Policies {
			s.Policies[k] = v
		}
		s.Keywords = slices.Clone(a.Settings.Keywords)
		if s.Keywords == nil {
			s.Keywords = []string{}
		}
		s.Threshold = a.Settings.Threshold
	}
	topics := make([]string, 0, len(p.Policies))
	for topic := range p.Policies {
		topics = append(topics, topic)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		field := "concierge.policies." + topic
		if !slices.Contains(ConciergePolicyTopics(), topic) {
			return nil, Invalid(field, "policy topics are %s", strings.Join(ConciergePolicyTopics(), ", "))
		}
		text := p.Policies[topic]
		if text == nil || strings.TrimSpace(*text) == "" {
			delete(s.Policies, topic)
			continue
		}
		if !utf8.ValidString(*text) || strings.ContainsRune(*text, 0) {
			return nil, Invalid(field, "the policy is text")
		}
		if n := utf8.RuneCountInString(*text); n > MaxConciergePolicy {
			return nil, Invalid(field, "the policy has %d characters, at most %d allowed", n, MaxConciergePolicy)
		}
		s.Policies[topic] = strings.TrimSpace(*text)
	}
	if p.Keywords != nil {
		if len(*p.Keywords) > MaxConciergeKeywords {
			return nil, Invalid("concierge.keywords", "at most %d keywords", MaxConciergeKeywords)
		}
		out := []string{}
		for _, k := range *p.Keywords {
			k = strings.TrimSpace(k)
			if !utf8.ValidString(k) || utf8.RuneCountInString(k) > MaxConciergeKeyword || !strings.ContainsFunc(k, isWordRune) ||
				strings.ContainsAny(k, "\r\n\x00") {
				return nil, Invalid("concierge.keywords", "each keyword is 1 to %d characters on one line, with a letter or a digit",
					MaxConciergeKeyword)
			}
			k = strings.ToLower(k)
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		s.Keywords = out
	}
	if p.Threshold != nil {
		t := *p.Threshold
		if math.IsNaN(t) || t < 0 || t > 1 {
			return nil, Invalid("concierge.threshold", "the threshold is a confidence from 0 to 1")
		}
		s.Threshold = t
	}
	return &ConciergeSettingsChanged{ShopID: shopID, Settings: s, ChangedAt: now.UTC()}, nil
}

func isWordRune(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }
