package domain

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Built-in flows (issue 17, "Built-in flows"): the two automations every
// shop has without building a journey, on by default and switchable per
// shop. Unlike a journey, a flow's message is about one thing the trigger
// names (an order, a checkout), so it runs once per order or checkout, not
// once per customer, and carries that thing's link.
//
//   - review_request: OrderRecorded of topic orders/fulfilled; after
//     DelayMinutes (7 days by default) one message per order asks its buyer
//     for a review through a signed link (the review token the storefront
//     reviews endpoint accepts as proof of purchase). Transactional: it
//     needs no marketing consent by e-mail (an unsubscribed customer is
//     not asked); by WhatsApp or SMS it needs the channel's opt-in like any
//     business-initiated message. A cancellation of the order before it is
//     due cancels it.
//   - cart_abandonment: CheckoutRecorded of topic checkouts/create or
//     checkouts/update of a known customer; when DelayMinutes (4 hours by
//     default) pass after the checkout's last update with no order of that
//     customer and no completion of the checkout, one message per checkout
//     carries the checkout's recovery link. Marketing: it needs consent on
//     the channel.
//
// Settings are FlowConfigured events on the flow's stream (FlowStream);
// a flow never configured runs with DefaultFlowSettings.

// Built-in flow names.
const (
	FlowReviewRequest   = "review_request"
	FlowCartAbandonment = "cart_abandonment"
)

// Flows lists the built-in flows.
func Flows() []string { return []string{FlowReviewRequest, FlowCartAbandonment} }

// Merge fields only a flow's messages carry.
const (
	// MergeReviewLink is the review-request link (signed review token).
	MergeReviewLink = "review_link"
	// MergeOrderName is the order's name as the platform shows it (#1001).
	MergeOrderName = "order_name"
	// MergeRecoveryLink is the checkout's recovery link.
	MergeRecoveryLink = "recovery_link"
)

// FlowMergeFields are the merge fields a flow's content may use besides
// MergeFields.
func FlowMergeFields(flow string) []string {
	if flow == FlowReviewRequest {
		return []string{MergeReviewLink, MergeOrderName}
	}
	return []string{MergeRecoveryLink}
}

// flowLink is the merge field of the link a flow's e-mail or SMS text must
// carry.
func flowLink(flow string) string {
	if flow == FlowReviewRequest {
		return MergeReviewLink
	}
	return MergeRecoveryLink
}

// FlowTrigger is the commerce topic that starts a flow's run.
func FlowTrigger(flow string) string {
	if flow == FlowReviewRequest {
		return "orders/fulfilled"
	}
	return "checkouts/update"
}

// FlowIntent is the intent of a flow's messages.
func FlowIntent(flow string) string {
	if flow == FlowReviewRequest {
		return IntentTransactional
	}
	return IntentMarketing
}

// Flow delay bounds, in minutes.
const (
	// MaxFlowDelayMinutes: 90 days.
	MaxFlowDelayMinutes = 90 * 24 * 60
	// MinCartAbandonmentMinutes: a checkout is not abandoned before 15
	// minutes without a change.
	MinCartAbandonmentMinutes = 15
	// MaxFlowLinkURL bounds a review page address.
	MaxFlowLinkURL = 2048
)

// FlowSettings are a flow's settings: whether it runs, its delay and its
// message (a channel with its content, as a journey's send_message step
// takes it), and for the review request the storefront page that takes
// the review token (LinkURL; "" for https://{shop domain}/pages/reviews).
type FlowSettings struct {
	Enabled      bool     `json:"enabled"`
	DelayMinutes int      `json:"delay_minutes"`
	Channel      string   `json:"channel"`
	Subject      string   `json:"subject,omitempty"`
	Text         string   `json:"text,omitempty"`
	HTML         string   `json:"html,omitempty"`
	Template     string   `json:"template,omitempty"`
	Language     string   `json:"language,omitempty"`
	Parameters   []string `json:"parameters,omitempty"`
	LinkURL      string   `json:"link_url,omitempty"`
}

// DefaultFlowSettings are a flow's settings until its shop configures it:
// enabled, by e-mail, with a plain message.
func DefaultFlowSettings(flow string) FlowSettings {
	if flow == FlowReviewRequest {
		return FlowSettings{Enabled: true, DelayMinutes: 7 * 24 * 60, Channel: ChannelEmail,
			Subject: "How was your order from {{shop_name}}?",
			Text: "Hi {{first_name}},\n\nThank you for your order {{order_name}} from {{shop_name}}. " +
				"Would you tell other shoppers what you think of it? It takes a minute:\n\n{{review_link}}\n\nThank you,\n{{shop_name}}\n",
			HTML: `<p>Hi {{first_name}},</p><p>Thank you for your order {{order_name}} from {{shop_name}}. ` +
				`Would you tell other shoppers what you think of it? It takes a minute.</p>` +
				`<p><a href="{{review_link}}">Write a review</a></p><p>Thank you,<br>{{shop_name}}</p>`}
	}
	return FlowSettings{Enabled: true, DelayMinutes: 4 * 60, Channel: ChannelEmail,
		Subject: "You left something in your cart at {{shop_name}}",
		Text: "Hi {{first_name}},\n\nYour cart at {{shop_name}} is waiting for you. Pick up where you left off:\n\n" +
			"{{recovery_link}}\n\n{{shop_name}}\n",
		HTML: `<p>Hi {{first_name}},</p><p>Your cart at {{shop_name}} is waiting for you.</p>` +
			`<p><a href="{{recovery_link}}">Return to your cart</a></p><p>{{shop_name}}</p>`}
}

// FlowStream is the stream of a shop's settings of one flow.
func FlowStream(shopID, flow string) string { return "flow-" + shopID + "-" + flow }

func flowEvents() []EventSpec {
	return []EventSpec{{Name: "FlowConfigured", Version: 1, New: func() Event { return &FlowConfigured{} }}}
}

// FlowConfigured: a shop changed a built-in flow's settings; Settings are
// all of them as they are now. Runs already waiting keep their due time; a
// disabled flow's waiting runs are cancelled.
type FlowConfigured struct {
	ShopID       string       `json:"shop_id"`
	Flow         string       `json:"flow"`
	Settings     FlowSettings `json:"settings"`
	ConfiguredAt time.Time    `json:"configured_at"`
}

// EventType implements Event.
func (FlowConfigured) EventType() string { return "FlowConfigured" }

// Flow is the aggregate of a shop's settings of one flow.
type Flow struct {
	Settings   FlowSettings
	Configured bool
}

// Apply folds an event into the flow.
func (f *Flow) Apply(e Event) {
	if ev, ok := e.(*FlowConfigured); ok {
		f.Settings, f.Configured = ev.Settings, true
	}
}

// FlowPatch is a partial edit of a flow's settings: a nil member stays as
// it is. Changing the channel starts the content afresh (the other
// channel's content does not carry over).
type FlowPatch struct {
	Enabled      *bool
	DelayMinutes *int
	Channel      *string
	Subject      *string
	Text         *string
	HTML         *string
	Template     *string
	Language     *string
	Parameters   *[]string
	LinkURL      *string
}

// Configure decides an edit of the flow's settings: 404 for a flow that is
// not built in, 422 naming the field for settings that would not send.
func (f *Flow) Configure(shopID, flow string, p FlowPatch, now time.Time) (*FlowConfigured, error) {
	if !slices.Contains(Flows(), flow) {
		return nil, NotFound("flow")
	}
	s := f.Settings
	if !f.Configured {
		s = DefaultFlowSettings(flow)
	}
	if p.Channel != nil && *p.Channel != s.Channel {
		s = FlowSettings{Enabled: s.Enabled, DelayMinutes: s.DelayMinutes, Channel: *p.Channel, LinkURL: s.LinkURL}
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	if p.Enabled != nil {
		s.Enabled = *p.Enabled
	}
	if p.DelayMinutes != nil {
		s.DelayMinutes = *p.DelayMinutes
	}
	set(&s.Subject, p.Subject)
	set(&s.Text, p.Text)
	set(&s.HTML, p.HTML)
	set(&s.Template, p.Template)
	set(&s.Language, p.Language)
	set(&s.LinkURL, p.LinkURL)
	if p.Parameters != nil {
		s.Parameters = slices.Clone(*p.Parameters)
	}
	s, err := checkFlowSettings(flow, s)
	if err != nil {
		return nil, err
	}
	return &FlowConfigured{ShopID: shopID, Flow: flow, Settings: s, ConfiguredAt: now.UTC()}, nil
}

// checkFlowSettings validates and normalises a flow's settings.
func checkFlowSettings(flow string, s FlowSettings) (FlowSettings, error) {
	least := 0
	if flow == FlowCartAbandonment {
		least = MinCartAbandonmentMinutes
	}
	if s.DelayMinutes < least || s.DelayMinutes > MaxFlowDelayMinutes {
		return FlowSettings{}, Invalid("delay_minutes", "delay_minutes is between %d and %d", least, MaxFlowDelayMinutes)
	}
	step, err := sendStep("", JourneyStep{Type: StepSendMessage, Channel: s.Channel, Subject: s.Subject, Text: s.Text, HTML: s.HTML,
		Template: s.Template, Language: s.Language, Parameters: s.Parameters}, FlowMergeFields(flow)...)
	if err != nil {
		return FlowSettings{}, flowField(err)
	}
	link := "{{" + flowLink(flow) + "}}"
	if step.Channel != ChannelWhatsApp && step.Template == "" && !strings.Contains(strings.ReplaceAll(step.Text, " ", ""), link) {
		return FlowSettings{}, Invalid("text", "the text carries the flow's link, %s", link)
	}
	out := FlowSettings{Enabled: s.Enabled, DelayMinutes: s.DelayMinutes, Channel: step.Channel, Subject: step.Subject,
		Text: step.Text, HTML: step.HTML, Template: step.Template, Language: step.Language, Parameters: step.Parameters}
	if flow == FlowReviewRequest {
		if out.LinkURL, err = reviewPage(strings.TrimSpace(s.LinkURL)); err != nil {
			return FlowSettings{}, err
		}
	} else if s.LinkURL != "" {
		return FlowSettings{}, Invalid("link_url", "only the review request has a link_url")
	}
	return out, nil
}

// flowField renames a send step's 422 field (".text") to the flow's
// attribute ("text").
func flowField(err error) error {
	var e *Error
	if errors.As(err, &e) && strings.HasPrefix(e.Field, ".") {
		return Invalid(strings.TrimPrefix(e.Field, "."), "%s", e.Message)
	}
	return err
}

// reviewPage validates the review page's address: "" or an absolute https
// URL without credentials or fragment.
func reviewPage(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || len(s) > MaxFlowLinkURL || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" ||
		strings.ContainsAny(s, " \t\r\n\"'<>") {
		return "", Invalid("link_url", "link_url is an https address of at most %d characters, without credentials or fragment", MaxFlowLinkURL)
	}
	return s, nil
}

// FlowMessageID is the id of a flow's message about subject (the order
// of a review request, the checkout of a cart abandonment): one message
// per order or checkout and flow, whatever happens to the runner.
func FlowMessageID(flow, subject string) string {
	return IDFromExternal(PrefixMessage, "flow_message", flow, subject)
}
