package domain

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// sendingEvents lists the event types of the messages the service sends:
// a campaign's audience snapshot and completion, and the messages'
// outcomes.
func sendingEvents() []EventSpec {
	return []EventSpec{
		{Name: "CampaignAudienceSnapshotted", Version: 1, New: func() Event { return &CampaignAudienceSnapshotted{} }},
		{Name: "CampaignCompleted", Version: 1, New: func() Event { return &CampaignCompleted{} }},
		{Name: "MessageOutcomesRecorded", Version: 1, New: func() Event { return &MessageOutcomesRecorded{} }},
		{Name: "WhatsAppSendingLimitChanged", Version: 1, New: func() Event { return &WhatsAppSendingLimitChanged{} }},
	}
}

// PrefixMessage is the id prefix of a message the service sends.
const PrefixMessage = "msg_"

// CampaignMessageID is the id of the message of a campaign to one
// customer: derived, so that a recipient of a campaign has exactly one
// message whatever happens to the sender.
func CampaignMessageID(campaignID, customerID string) string {
	return IDFromExternal(PrefixMessage, "campaign_message", campaignID, customerID)
}

// Message intents: a marketing message goes only to customers who
// consented on its channel; a transactional one (an order's review
// request, its cart's recovery) follows the rules in docs/decisions.md.
const (
	IntentMarketing     = "marketing"
	IntentTransactional = "transactional"
)

// Content limits.
const (
	MaxSubject        = 200
	MaxMessageText    = 20000
	MaxMessageHTML    = 200000
	MaxTemplateParams = 10
	MaxTemplateParam  = 1024
	// AudienceSnapshotPart is the number of recipients in one
	// CampaignAudienceSnapshotted event.
	AudienceSnapshotPart = 1000
)

// MessageContent is what a message says: for e-mail a subject, a text
// body and an optional HTML body; for WhatsApp the values of the approved
// template's body variables ({{1}} first; the template itself is the
// campaign's template_id); for SMS a text. Every text may hold merge
// fields ({{first_name}}, see MergeFields), filled per recipient.
type MessageContent struct {
	Subject    string   `json:"subject,omitempty"`
	Text       string   `json:"text,omitempty"`
	HTML       string   `json:"html,omitempty"`
	Parameters []string `json:"parameters,omitempty"`
}

// contentText checks one text of a message: valid UTF-8 of at most max
// characters with known merge fields.
func contentText(field, s string, max int) error {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max {
		return Invalid(field, "%s must be UTF-8 text of at most %d characters", field, max)
	}
	return CheckMergeFields(field, s)
}

// Validate checks content for channel; complete also requires what a
// send needs (an e-mail's subject and text, an SMS's text), as a launch
// does. Errors name the field under prefix ("content").
func (c MessageContent) Validate(prefix, channel string, complete bool) error {
	f := func(name string) string { return prefix + "." + name }
	switch channel {
	case ChannelEmail:
		if len(c.Parameters) > 0 {
			return Invalid(f("parameters"), "parameters are for whatsapp messages")
		}
		if strings.ContainsAny(c.Subject, "\r\n") {
			return Invalid(f("subject"), "subject must be one line")
		}
		if complete && strings.TrimSpace(c.Subject) == "" {
			return Invalid(f("subject"), "an e-mail needs a subject")
		}
		if complete && strings.TrimSpace(c.Text) == "" {
			return Invalid(f("text"), "an e-mail needs a text body (html is optional)")
		}
		return firstError(contentText(f("subject"), c.Subject, MaxSubject), contentText(f("text"), c.Text, MaxMessageText),
			contentText(f("html"), c.HTML, MaxMessageHTML))
	case ChannelWhatsApp:
		if c.Subject != "" || c.Text != "" || c.HTML != "" {
			return Invalid(prefix, "a whatsapp message is its template with parameters: no subject, text or html")
		}
		if len(c.Parameters) > MaxTemplateParams {
			return Invalid(f("parameters"), "at most %d parameters", MaxTemplateParams)
		}
		for i, p := range c.Parameters {
			if strings.TrimSpace(p) == "" {
				return Invalid(f("parameters")+"["+itoa(i)+"]", "a template parameter must not be empty")
			}
			if err := contentText(f("parameters")+"["+itoa(i)+"]", p, MaxTemplateParam); err != nil {
				return err
			}
		}
		return nil
	case ChannelSMS:
		if c.Subject != "" || c.HTML != "" || len(c.Parameters) > 0 {
			return Invalid(prefix, "an sms has a text only")
		}
		if complete && strings.TrimSpace(c.Text) == "" {
			return Invalid(f("text"), "an sms needs a text")
		}
		return contentText(f("text"), c.Text, MaxMessageText)
	}
	return Invalid("channel", "unknown channel %q", channel)
}

// CampaignAudienceSnapshotted: at launch, the campaign's audience was
// resolved to its recipients (customer ids, in id order): the customers
// of the audience who consented on the campaign's channel and have an
// address for it. A large audience is recorded in parts of
// AudienceSnapshotPart recipients (Part counts from 1 to Parts); the
// counts of the customers left out are on the last part. The list makes
// every campaign's recipients auditable; the ids are opaque, not
// personal data.
type CampaignAudienceSnapshotted struct {
	CampaignID      string    `json:"campaign_id"`
	ShopID          string    `json:"shop_id"`
	Part            int       `json:"part"`
	Parts           int       `json:"parts"`
	Recipients      []string  `json:"recipients"`
	SkippedConsent  int       `json:"skipped_no_consent,omitempty"`
	SkippedAddress  int       `json:"skipped_no_address,omitempty"`
	TotalRecipients int       `json:"total_recipients"`
	SnapshottedAt   time.Time `json:"snapshotted_at"`
}

// EventType implements Event.
func (CampaignAudienceSnapshotted) EventType() string { return "CampaignAudienceSnapshotted" }

// SnapshotAudience splits a campaign's recipients into its snapshot
// events (one part when there is nobody to send to).
func SnapshotAudience(shopID, campaignID string, recipients []string, skippedConsent, skippedAddress int, now time.Time) []Event {
	parts := (len(recipients) + AudienceSnapshotPart - 1) / AudienceSnapshotPart
	if parts == 0 {
		parts = 1
	}
	out := make([]Event, 0, parts)
	for p := 0; p < parts; p++ {
		lo, hi := p*AudienceSnapshotPart, min((p+1)*AudienceSnapshotPart, len(recipients))
		ev := &CampaignAudienceSnapshotted{CampaignID: campaignID, ShopID: shopID, Part: p + 1, Parts: parts,
			Recipients: slices.Clone(recipients[lo:hi]), TotalRecipients: len(recipients), SnapshottedAt: now.UTC()}
		if p == parts-1 {
			ev.SkippedConsent, ev.SkippedAddress = skippedConsent, skippedAddress
		}
		out = append(out, ev)
	}
	return out
}

// CampaignCompleted: every recipient of a sending campaign has its
// message's outcome (sent, failed or skipped).
type CampaignCompleted struct {
	CampaignID  string    `json:"campaign_id"`
	ShopID      string    `json:"shop_id"`
	Recipients  int       `json:"recipients"`
	Sent        int       `json:"sent"`
	Failed      int       `json:"failed"`
	Skipped     int       `json:"skipped"`
	CompletedAt time.Time `json:"completed_at"`
}

// EventType implements Event.
func (CampaignCompleted) EventType() string { return "CampaignCompleted" }

// CampaignTally is the outcome of a campaign's messages when it completes.
type CampaignTally struct {
	Recipients, Sent, Failed, Skipped int
}

// Complete decides the completion of a sending campaign whose recipients
// all have an outcome; nil when it is not sending (paused in the meantime,
// or completed already).
func (c *Campaign) Complete(shopID, campaignID string, tally CampaignTally, now time.Time) (*CampaignCompleted, error) {
	if !c.Exists || c.ShopID != shopID {
		return nil, NotFound("campaign")
	}
	if c.Status != CampaignStatusSending {
		return nil, nil
	}
	return &CampaignCompleted{CampaignID: campaignID, ShopID: shopID, Recipients: tally.Recipients, Sent: tally.Sent, Failed: tally.Failed,
		Skipped: tally.Skipped, CompletedAt: now.UTC()}, nil
}

// MessageRef names a message the service sends: its id, shop, recipient,
// channel and what sent it (a campaign, a journey's step, or a built-in
// flow).
type MessageRef struct {
	MessageID    string `json:"message_id"`
	ShopID       string `json:"shop_id"`
	CustomerID   string `json:"customer_id"`
	Channel      string `json:"channel"`
	Intent       string `json:"intent"`
	CampaignID   string `json:"campaign_id,omitempty"`
	JourneyID    string `json:"journey_id,omitempty"`
	EnrollmentID string `json:"enrollment_id,omitempty"`
	Step         int    `json:"step,omitempty"`
	Flow         string `json:"flow,omitempty"`
}

func (r MessageRef) check() error {
	switch {
	case !HasPrefixID(r.MessageID, PrefixMessage):
		return Invalid("message_id", "a message id starts with %s", PrefixMessage)
	case r.ShopID == "" || !HasPrefixID(r.CustomerID, PrefixCustomer):
		return Invalid("customer_id", "a message has a shop and a customer")
	case !slices.Contains(MessageChannels(), r.Channel):
		return Invalid("channel", "unknown channel %q", r.Channel)
	case r.Intent != IntentMarketing && r.Intent != IntentTransactional:
		return Invalid("intent", "intent is marketing or transactional")
	}
	return nil
}

// MessageChannels lists the channels the service sends on.
func MessageChannels() []string { return []string{ChannelWhatsApp, ChannelEmail, ChannelSMS} }

// Outcomes of a message.
const (
	OutcomeSent    = "sent"
	OutcomeFailed  = "failed"
	OutcomeSkipped = "skipped"
)

// Skip reasons: the recipient withdrew consent after the snapshot, has no
// address on the channel any more, or was erased; a built-in flow's
// message has no link to carry (a checkout's recovery link erased or
// never sent).
const (
	SkipNoConsent = "no_consent"
	SkipNoAddress = "no_address"
	SkipErased    = "erased"
	SkipNoLink    = "no_link"
)

// MaxOutcomesPerEvent bounds a MessageOutcomesRecorded event.
const MaxOutcomesPerEvent = 500

// MessageOutcome is what became of one message: sent (accepted by the
// provider, whose id of it the status webhooks carry), failed (refused by
// the provider for good, or every attempt failed; ErrorCode is the
// provider's code or one of package channels' codes, never a recipient or
// a body) or skipped (SkipReason). Attempts counts from 1.
type MessageOutcome struct {
	MessageRef
	Outcome           string    `json:"outcome"`
	Provider          string    `json:"provider,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	ErrorCode         string    `json:"error_code,omitempty"`
	SkipReason        string    `json:"skip_reason,omitempty"`
	Attempts          int       `json:"attempts"`
	At                time.Time `json:"at"`
}

func (o *MessageOutcome) check() error {
	if err := o.MessageRef.check(); err != nil {
		return err
	}
	o.Attempts = max(o.Attempts, 1)
	switch {
	case o.Outcome == OutcomeSent && o.ProviderMessageID != "" && o.ErrorCode == "" && o.SkipReason == "":
	case o.Outcome == OutcomeFailed && o.ErrorCode != "" && o.SkipReason == "":
		o.ProviderMessageID = ""
	case o.Outcome == OutcomeSkipped && slices.Contains([]string{SkipNoConsent, SkipNoAddress, SkipErased, SkipNoLink}, o.SkipReason):
		o.ProviderMessageID, o.ErrorCode, o.Provider = "", "", ""
	default:
		return Invalid("outcome", "an outcome is sent with the provider's id, failed with an error code, or skipped with a known reason")
	}
	return nil
}

// MessageOutcomesRecorded: the outcomes of a batch of one shop's
// messages, each message recorded once. The sender records its outcomes
// in batches, so that a campaign of a hundred thousand messages is a few
// hundred events, not a hundred thousand; each outcome still names its
// message, recipient and what sent it (the message log folds one row per
// outcome).
type MessageOutcomesRecorded struct {
	ShopID   string           `json:"shop_id"`
	BatchID  string           `json:"batch_id"`
	Outcomes []MessageOutcome `json:"outcomes"`
}

// EventType implements Event.
func (MessageOutcomesRecorded) EventType() string { return "MessageOutcomesRecorded" }

// OutcomeBatchStream is the stream of one batch of outcomes: appended
// with "no stream", so the same batch recorded twice is recorded once.
func OutcomeBatchStream(batchID string) string { return "messageoutcomes-" + batchID }

// RecordOutcomes decides the record of a batch of one shop's outcomes (1
// to MaxOutcomesPerEvent, each message once); the batch id derives from
// the message ids, so the same batch decided again has the same id. A
// zero At is now.
func RecordOutcomes(shopID string, outcomes []MessageOutcome, now time.Time) (*MessageOutcomesRecorded, error) {
	if len(outcomes) == 0 || len(outcomes) > MaxOutcomesPerEvent {
		return nil, Invalid("outcomes", "record 1 to %d outcomes at once", MaxOutcomesPerEvent)
	}
	out := make([]MessageOutcome, len(outcomes))
	ids := make([]string, len(outcomes))
	seen := make(map[string]bool, len(outcomes))
	for i, o := range outcomes {
		if err := o.check(); err != nil {
			return nil, err
		}
		if o.ShopID != shopID || seen[o.MessageID] {
			return nil, Invalid("outcomes", "a batch holds one shop's messages, each once")
		}
		seen[o.MessageID] = true
		if o.At.IsZero() {
			o.At = now
		}
		o.At = o.At.UTC()
		out[i], ids[i] = o, o.MessageID
	}
	slices.Sort(ids)
	return &MessageOutcomesRecorded{ShopID: shopID, BatchID: hashParts(append([]string{shopID}, ids...)...), Outcomes: out}, nil
}

// WhatsApp messaging tiers: the business-initiated conversations a number
// may open in a rolling 24 hours (0: unlimited).
var whatsAppTiers = map[string]int{
	"TIER_50": 50, "TIER_250": 250, "TIER_1K": 1000, "TIER_2K": 2000, "TIER_10K": 10000, "TIER_100K": 100000, "TIER_UNLIMITED": 0,
}

// Quality factors of the daily limit: GREEN (and a rating not known yet)
// sends the tier's full allowance, YELLOW half of it, RED nothing.
const (
	QualityFactorYellow = 0.5
)

// SendingLimit is the daily allowance of a WhatsApp number: Limit
// messages in a rolling 24 hours, or no limit of ours when Unlimited (the
// tier is unlimited or not known yet: the platform's own limits apply).
type SendingLimit struct {
	Tier, Rating string
	Limit        int
	Unlimited    bool
	Factor       float64
}

// WhatsAppSendingLimit is the allowance of a number of tier and quality
// rating: the tier's limit times the quality factor (rounded down, at
// least 1 unless RED).
func WhatsAppSendingLimit(tier, rating string) SendingLimit {
	l := SendingLimit{Tier: tier, Rating: rating, Factor: 1}
	switch rating {
	case QualityYellow:
		l.Factor = QualityFactorYellow
	case QualityRed:
		l.Factor = 0
	}
	n, known := whatsAppTiers[tier]
	switch {
	case l.Factor == 0:
		l.Limit = 0
	case !known || n == 0:
		l.Unlimited = true
	default:
		l.Limit = max(int(float64(n)*l.Factor), 1)
	}
	return l
}

// WhatsAppSendingLimitChanged: a number's quality or tier changed its
// daily sending allowance. YELLOW throttles it (a P2 alert: the merchant
// is to investigate), RED stops sending on it (P1), GREEN restores it (no
// severity). QualityEventID is the quality event it follows from.
type WhatsAppSendingLimitChanged struct {
	ShopID             string    `json:"shop_id"`
	DisplayPhoneNumber string    `json:"display_phone_number"`
	QualityRating      string    `json:"quality_rating"`
	Tier               string    `json:"tier"`
	DailyLimit         int       `json:"daily_limit"`
	Unlimited          bool      `json:"unlimited"`
	Factor             float64   `json:"factor"`
	Severity           string    `json:"severity,omitempty"`
	QualityEventID     string    `json:"quality_event_id"`
	ChangedAt          time.Time `json:"changed_at"`
}

// EventType implements Event.
func (WhatsAppSendingLimitChanged) EventType() string { return "WhatsAppSendingLimitChanged" }

// NewSendingLimitChange decides the event of a number's new allowance.
func NewSendingLimitChange(shopID, display, tier, rating, qualityEventID string, now time.Time) *WhatsAppSendingLimitChanged {
	l := WhatsAppSendingLimit(tier, rating)
	ev := &WhatsAppSendingLimitChanged{ShopID: shopID, DisplayPhoneNumber: display, QualityRating: rating, Tier: tier,
		DailyLimit: l.Limit, Unlimited: l.Unlimited, Factor: l.Factor, QualityEventID: qualityEventID, ChangedAt: now.UTC()}
	switch rating {
	case QualityYellow:
		ev.Severity = SeverityP2
	case QualityRed:
		ev.Severity = SeverityP1
	}
	return ev
}
