package domain

import (
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// webhookEvents lists the outbound webhook subscriptions' event types.
func webhookEvents() []EventSpec {
	return []EventSpec{
		{Name: "WebhookSubscriptionCreated", Version: 1, New: func() Event { return &WebhookSubscriptionCreated{} }},
		{Name: "WebhookSubscriptionUpdated", Version: 1, New: func() Event { return &WebhookSubscriptionUpdated{} }},
		{Name: "WebhookSubscriptionDisabled", Version: 1, New: func() Event { return &WebhookSubscriptionDisabled{} }},
		{Name: "WebhookSubscriptionEnabled", Version: 1, New: func() Event { return &WebhookSubscriptionEnabled{} }},
		{Name: "WebhookSubscriptionDeleted", Version: 1, New: func() Event { return &WebhookSubscriptionDeleted{} }},
		{Name: "WebhookSecretRotated", Version: 1, New: func() Event { return &WebhookSecretRotated{} }},
		{Name: "WebhookSubscriptionFailing", Version: 1, New: func() Event { return &WebhookSubscriptionFailing{} }},
		{Name: "WebhookSubscriptionRecovered", Version: 1, New: func() Event { return &WebhookSubscriptionRecovered{} }},
		{Name: "WebhookPingRequested", Version: 1, New: func() Event { return &WebhookPingRequested{} }},
		{Name: "WebhookRedeliveryRequested", Version: 1, New: func() Event { return &WebhookRedeliveryRequested{} }},
		{Name: "WebhookAttemptsRecorded", Version: 1, New: func() Event { return &WebhookAttemptsRecorded{} }},
	}
}

// Id prefixes of the outbound webhooks.
const (
	PrefixWebhookSubscription = "whs_"
	PrefixWebhookDelivery     = "whd_"
)

// Limits of outbound webhook subscriptions.
const (
	// MaxWebhookSubscriptions is how many subscriptions (enabled or
	// disabled, not deleted) a shop may hold.
	MaxWebhookSubscriptions = 20
	MaxWebhookURLLength     = 2048
	MaxWebhookDescription   = 500
	// DefaultWebhookSecretOverlap is how long the previous secret still
	// signs after a rotation when none is asked; MaxWebhookSecretOverlap
	// bounds what may be asked.
	DefaultWebhookSecretOverlap = 24 * time.Hour
	MaxWebhookSecretOverlap     = 7 * 24 * time.Hour
)

// Reasons a subscription is disabled.
const (
	// WebhookDisabledByMerchant: PATCH enabled=false (or the CLI).
	WebhookDisabledByMerchant = "merchant"
	// WebhookDisabledGone: the endpoint answered 410 Gone.
	WebhookDisabledGone = "gone"
	// WebhookDisabledFailing: deliveries failed for the whole
	// auto-disable period.
	WebhookDisabledFailing = "failing"
)

// Kinds of redelivery a merchant asks for.
const (
	// WebhookRedeliverOne retries one delivery now.
	WebhookRedeliverOne = "retry"
	// WebhookRedeliverSince re-delivers every failed or undelivered event
	// of the subscription since a time (recover).
	WebhookRedeliverSince = "recover"
)

// WebhookPingType is the event type of a test delivery; it is sent to the
// subscription asked, whatever its event types.
const WebhookPingType = "ping"

// WebhookEventType is one type of the outbound events a shop may
// subscribe to: the documented, versioned catalogue of
// GET /api/v1/webhook-event-types.
type WebhookEventType struct {
	// Name is dotted: "order.created".
	Name string
	// Version is the version of the payload's data (a change that removes
	// or renames a field gets a new version).
	Version int
	// Description says when it is sent.
	Description string
}

// WebhookEventTypes returns the catalogue of outbound event types, sorted
// by name.
func WebhookEventTypes() []WebhookEventType {
	types := []WebhookEventType{
		{"customer.created", 1, "A customer profile was created (commerce platform or admin API)."},
		{"customer.updated", 1, "A customer profile changed (platform snapshot, tags)."},
		{"customer.redacted", 1, "A customer's personal data was erased (GDPR customers/redact); the payload carries ids only."},
		{"order.created", 1, "An order was recorded for the first time."},
		{"order.updated", 1, "An order changed (any orders/* topic after the first)."},
		{"order.paid", 1, "An order was paid (orders/paid)."},
		{"order.fulfilled", 1, "An order was fulfilled (orders/fulfilled)."},
		{"order.cancelled", 1, "An order was cancelled (orders/cancelled)."},
		{"order.refunded", 1, "A refund was recorded on an order."},
		{"product.created", 1, "A product was created (platform or admin API)."},
		{"product.updated", 1, "A product changed."},
		{"product.deleted", 1, "A product was deleted."},
		{"inventory.updated", 1, "An inventory level changed (platform level or admin adjustment)."},
		{"campaign.launched", 1, "A campaign was launched."},
		{"campaign.paused", 1, "A campaign was paused, by the merchant or automatically (template paused or rejected)."},
		{"campaign.resumed", 1, "A campaign resumed."},
		{"campaign.completed", 1, "A campaign finished sending: every recipient has an outcome (sent, failed or skipped)."},
		{"journey.paused", 1, "A journey was paused."},
		{"journey.resumed", 1, "A journey resumed."},
		{"enrollment.started", 1, "A customer was enrolled in a journey."},
		{"enrollment.completed", 1, "A customer completed a journey (ran every step)."},
		{"enrollment.exited", 1, "A customer left a journey before its end (erasure, exit rule)."},
		{"message.delivered", 1, "A message was delivered to the customer's device."},
		{"message.read", 1, "A message was read."},
		{"message.failed", 1, "A message could not be delivered."},
		{"template.status_changed", 1, "A WhatsApp message template changed state (approved, paused, rejected, …)."},
		{"anomaly.raised", 1, "An anomaly was raised for the shop (a template paused or rejected, the number's quality dropped, a webhook subscription failing or disabled, a data export failing near its deadline); resolutions are not sent."},
		{"review.submitted", 1, "A buyer submitted a product review (ids, rating and verified badge only: no text, name or e-mail)."},
		{"review.published", 1, "A review was published on the storefront (by the auto-publish rule, named in rule, or by a moderator)."},
		{"gdpr.data_request.completed", 1, "A customer data request's export was delivered to the merchant."},
	}
	slices.SortFunc(types, func(a, b WebhookEventType) int { return strings.Compare(a.Name, b.Name) })
	return types
}

// IsWebhookEventType reports whether name is in WebhookEventTypes.
func IsWebhookEventType(name string) bool {
	for _, t := range WebhookEventTypes() {
		if t.Name == name {
			return true
		}
	}
	return false
}

// WebhookSubscriptionsStream is the stream of a shop's webhook
// subscriptions: one stream per shop, so that the limit on their number
// holds under concurrent creation.
func WebhookSubscriptionsStream(shopID string) string { return "webhooksubscriptions-" + shopID }

// WebhookDeliveryID derives the id of the delivery of one event (the
// outbound event id, evt_…) to one subscription: the same for every
// attempt and after any restart.
func WebhookDeliveryID(subscriptionID, eventID string) string {
	return derivedID(PrefixWebhookDelivery, "webhook-delivery", subscriptionID, eventID)
}

// WebhookSubscriptionCreated: a shop subscribed an endpoint to event
// types. Secret signs its deliveries; it is shown once, to the creator,
// and travels sealed with the shop key.
type WebhookSubscriptionCreated struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	URL            string    `json:"url"`
	EventTypes     []string  `json:"event_types"`
	Description    string    `json:"description"`
	Secret         string    `json:"secret"`
	CreatedAt      time.Time `json:"created_at"`
}

// EventType implements Event.
func (WebhookSubscriptionCreated) EventType() string { return "WebhookSubscriptionCreated" }

// WebhookSubscriptionUpdated: the merchant changed the endpoint, its event
// types or its description. It carries the whole new settings; Changed
// names the fields that changed.
type WebhookSubscriptionUpdated struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	URL            string    `json:"url"`
	EventTypes     []string  `json:"event_types"`
	Description    string    `json:"description"`
	Changed        []string  `json:"changed"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// EventType implements Event.
func (WebhookSubscriptionUpdated) EventType() string { return "WebhookSubscriptionUpdated" }

// WebhookSubscriptionDisabled: deliveries to the subscription stop; the
// events that occur meanwhile are still recorded for it, undelivered,
// and a recover delivers them. Reason is one of the WebhookDisabled…
// constants; Status is the HTTP status that caused it (410), if any.
type WebhookSubscriptionDisabled struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	Reason         string    `json:"reason"`
	Status         int       `json:"status,omitempty"`
	DisabledAt     time.Time `json:"disabled_at"`
}

// EventType implements Event.
func (WebhookSubscriptionDisabled) EventType() string { return "WebhookSubscriptionDisabled" }

// WebhookSubscriptionEnabled: deliveries resume for events from now on
// (and for those a recover asks for).
type WebhookSubscriptionEnabled struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	EnabledAt      time.Time `json:"enabled_at"`
}

// EventType implements Event.
func (WebhookSubscriptionEnabled) EventType() string { return "WebhookSubscriptionEnabled" }

// WebhookSubscriptionDeleted: the subscription is gone; its pending
// deliveries are dropped.
type WebhookSubscriptionDeleted struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	DeletedAt      time.Time `json:"deleted_at"`
}

// EventType implements Event.
func (WebhookSubscriptionDeleted) EventType() string { return "WebhookSubscriptionDeleted" }

// WebhookSecretRotated: the subscription signs with a new secret; until
// PreviousValidUntil every delivery also carries a signature with the
// previous secret (zero: the previous secret stops at once).
type WebhookSecretRotated struct {
	SubscriptionID     string    `json:"subscription_id"`
	ShopID             string    `json:"shop_id"`
	Secret             string    `json:"secret"`
	PreviousValidUntil time.Time `json:"previous_valid_until"`
	RotatedAt          time.Time `json:"rotated_at"`
}

// EventType implements Event.
func (WebhookSecretRotated) EventType() string { return "WebhookSecretRotated" }

// WebhookSubscriptionFailing: deliveries to the subscription have failed
// since FailingSince; unless one succeeds, it is disabled at DisableAt.
// Level counts the warnings of this failing period (1, 2, …).
type WebhookSubscriptionFailing struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	FailingSince   time.Time `json:"failing_since"`
	DisableAt      time.Time `json:"disable_at"`
	LastReason     string    `json:"last_reason"`
	Level          int       `json:"level"`
	RaisedAt       time.Time `json:"raised_at"`
}

// EventType implements Event.
func (WebhookSubscriptionFailing) EventType() string { return "WebhookSubscriptionFailing" }

// WebhookSubscriptionRecovered: a delivery to a subscription that had been
// warned about (WebhookSubscriptionFailing) succeeded, ending the failing
// period that began at FailingSince. A failing period with no warning
// ends silently: only a warned one is worth telling.
type WebhookSubscriptionRecovered struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	FailingSince   time.Time `json:"failing_since"`
	RecoveredAt    time.Time `json:"recovered_at"`
}

// EventType implements Event.
func (WebhookSubscriptionRecovered) EventType() string { return "WebhookSubscriptionRecovered" }

// WebhookPingRequested: the merchant asked for a test delivery to the
// subscription; PingID is the outbound event id (evt_…) of the ping.
type WebhookPingRequested struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	PingID         string    `json:"ping_id"`
	RequestedAt    time.Time `json:"requested_at"`
}

// EventType implements Event.
func (WebhookPingRequested) EventType() string { return "WebhookPingRequested" }

// WebhookRedeliveryRequested: the merchant asked for one delivery again
// (Kind retry, DeliveryID) or for every failed or undelivered event since
// a time (Kind recover, Since).
type WebhookRedeliveryRequested struct {
	SubscriptionID string    `json:"subscription_id"`
	ShopID         string    `json:"shop_id"`
	Kind           string    `json:"kind"`
	DeliveryID     string    `json:"delivery_id,omitempty"`
	Since          time.Time `json:"since,omitzero"`
	RequestedAt    time.Time `json:"requested_at"`
}

// EventType implements Event.
func (WebhookRedeliveryRequested) EventType() string { return "WebhookRedeliveryRequested" }

// Secrets implements SecretHolder.
func (e *WebhookSubscriptionCreated) Secrets() []*string { return []*string{&e.Secret} }

// Secrets implements SecretHolder.
func (e *WebhookSecretRotated) Secrets() []*string { return []*string{&e.Secret} }

// WebhookEndpoint is what a merchant sets on a subscription.
type WebhookEndpoint struct {
	URL         string
	EventTypes  []string
	Description string
}

// NewWebhookEndpoint validates and normalises a subscription's settings:
// an absolute http(s) URL without userinfo or fragment (whether its
// address is one the service posts to is the outbound guard's check, done
// by the command), at least one known event type (sorted, without
// repeats; "*" alone means every type), a description of at most
// MaxWebhookDescription characters.
func NewWebhookEndpoint(rawURL string, eventTypes []string, description string) (WebhookEndpoint, error) {
	u := strings.TrimSpace(rawURL)
	if u == "" {
		return WebhookEndpoint{}, Invalid("url", "url is required")
	}
	if len(u) > MaxWebhookURLLength {
		return WebhookEndpoint{}, Invalid("url", "url is longer than %d characters", MaxWebhookURLLength)
	}
	parsed, err := url.Parse(u)
	if err != nil || !parsed.IsAbs() || parsed.Host == "" || (parsed.Scheme != "https" && parsed.Scheme != "http") {
		return WebhookEndpoint{}, Invalid("url", "url must be an absolute https:// URL")
	}
	if parsed.User != nil || parsed.Fragment != "" {
		return WebhookEndpoint{}, Invalid("url", "url must not carry credentials or a fragment")
	}
	types, err := normaliseWebhookEventTypes(eventTypes)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	d := strings.TrimSpace(description)
	if !utf8.ValidString(d) || utf8.RuneCountInString(d) > MaxWebhookDescription {
		return WebhookEndpoint{}, Invalid("description", "description must be valid text of at most %d characters", MaxWebhookDescription)
	}
	return WebhookEndpoint{URL: u, EventTypes: types, Description: d}, nil
}

// WebhookAllEvents subscribes to every type of the catalogue, present and
// future.
const WebhookAllEvents = "*"

func normaliseWebhookEventTypes(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, Invalid("event_types", "event_types must name at least one event type (or \"*\")")
	}
	out := make([]string, 0, len(in))
	for _, t := range in {
		t = strings.TrimSpace(t)
		switch {
		case t == WebhookAllEvents:
		case !IsWebhookEventType(t):
			if len(t) > 100 {
				t = t[:100]
			}
			return nil, Invalid("event_types", "unknown event type %q (GET /api/v1/webhook-event-types lists them)", t)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if slices.Contains(out, WebhookAllEvents) && len(out) > 1 {
		return nil, Invalid("event_types", "\"*\" subscribes to every type: name it alone")
	}
	return out, nil
}

// WebhookSubscribes reports whether a subscription to types receives
// events of type t.
func WebhookSubscribes(types []string, t string) bool {
	for _, s := range types {
		if s == WebhookAllEvents || s == t {
			return true
		}
	}
	return false
}

// WebhookSubscriptionState is one subscription as its shop's stream
// tells it.
type WebhookSubscriptionState struct {
	ID       string
	Endpoint WebhookEndpoint
	Enabled  bool
	// DisabledReason is the reason of the last disabling ("" when
	// enabled).
	DisabledReason string
	// FailingSince and FailingLevel are the last warning's failing period
	// and level (zero: none since it was created, enabled or changed).
	FailingSince time.Time
	FailingLevel int
}

// WebhookSubscriptions is a shop's webhook subscriptions (the aggregate of
// WebhookSubscriptionsStream), deleted ones left out.
type WebhookSubscriptions struct {
	ShopID string
	Subs   map[string]*WebhookSubscriptionState
}

// Apply folds an event into the subscriptions.
func (w *WebhookSubscriptions) Apply(e Event) {
	if w.Subs == nil {
		w.Subs = map[string]*WebhookSubscriptionState{}
	}
	switch ev := e.(type) {
	case *WebhookSubscriptionCreated:
		w.ShopID = ev.ShopID
		w.Subs[ev.SubscriptionID] = &WebhookSubscriptionState{ID: ev.SubscriptionID, Enabled: true,
			Endpoint: WebhookEndpoint{URL: ev.URL, EventTypes: ev.EventTypes, Description: ev.Description}}
	case *WebhookSubscriptionUpdated:
		if s := w.Subs[ev.SubscriptionID]; s != nil {
			s.Endpoint = WebhookEndpoint{URL: ev.URL, EventTypes: ev.EventTypes, Description: ev.Description}
			s.FailingSince, s.FailingLevel = time.Time{}, 0
		}
	case *WebhookSubscriptionDisabled:
		if s := w.Subs[ev.SubscriptionID]; s != nil {
			s.Enabled, s.DisabledReason = false, ev.Reason
		}
	case *WebhookSubscriptionEnabled:
		if s := w.Subs[ev.SubscriptionID]; s != nil {
			s.Enabled, s.DisabledReason, s.FailingSince, s.FailingLevel = true, "", time.Time{}, 0
		}
	case *WebhookSubscriptionFailing:
		if s := w.Subs[ev.SubscriptionID]; s != nil {
			s.FailingSince, s.FailingLevel = ev.FailingSince, ev.Level
		}
	case *WebhookSubscriptionRecovered:
		if s := w.Subs[ev.SubscriptionID]; s != nil {
			s.FailingSince, s.FailingLevel = time.Time{}, 0
		}
	case *WebhookSubscriptionDeleted:
		delete(w.Subs, ev.SubscriptionID)
	}
}

func (w *WebhookSubscriptions) find(id string) (*WebhookSubscriptionState, error) {
	if s := w.Subs[id]; s != nil {
		return s, nil
	}
	return nil, NotFound("webhook subscription")
}

// Create decides a new subscription of shop with id, endpoint and secret.
func (w *WebhookSubscriptions) Create(shop *Shop, id string, ep WebhookEndpoint, secret string, now time.Time) (Event, error) {
	if !shop.Exists {
		return nil, NotFound("shop")
	}
	if len(w.Subs) >= MaxWebhookSubscriptions {
		return nil, Invalid("url", "a shop holds at most %d webhook subscriptions: delete one first", MaxWebhookSubscriptions)
	}
	return &WebhookSubscriptionCreated{SubscriptionID: id, ShopID: shop.ID, URL: ep.URL, EventTypes: ep.EventTypes,
		Description: ep.Description, Secret: secret, CreatedAt: now.UTC()}, nil
}

// WebhookPatch is a partial change of a subscription: nil fields stay.
type WebhookPatch struct {
	URL         *string
	EventTypes  []string // nil: unchanged
	Description *string
	Enabled     *bool
}

// Update decides the events of a patch (the endpoint already validated
// by the caller with NewWebhookEndpoint on the merged settings): an update
// when settings change, then an enabling or disabling when asked. No
// change at all decides no event.
func (w *WebhookSubscriptions) Update(id string, merged WebhookEndpoint, enabled *bool, now time.Time) ([]Event, error) {
	s, err := w.find(id)
	if err != nil {
		return nil, err
	}
	var out []Event
	var changed []string
	if merged.URL != s.Endpoint.URL {
		changed = append(changed, "url")
	}
	if !slices.Equal(merged.EventTypes, s.Endpoint.EventTypes) {
		changed = append(changed, "event_types")
	}
	if merged.Description != s.Endpoint.Description {
		changed = append(changed, "description")
	}
	if len(changed) > 0 {
		out = append(out, &WebhookSubscriptionUpdated{SubscriptionID: id, ShopID: w.ShopID, URL: merged.URL,
			EventTypes: merged.EventTypes, Description: merged.Description, Changed: changed, UpdatedAt: now.UTC()})
	}
	if enabled != nil && *enabled != s.Enabled {
		if *enabled {
			out = append(out, &WebhookSubscriptionEnabled{SubscriptionID: id, ShopID: w.ShopID, EnabledAt: now.UTC()})
		} else {
			out = append(out, &WebhookSubscriptionDisabled{SubscriptionID: id, ShopID: w.ShopID,
				Reason: WebhookDisabledByMerchant, DisabledAt: now.UTC()})
		}
	}
	return out, nil
}

// Endpoint returns the current settings of subscription id.
func (w *WebhookSubscriptions) Endpoint(id string) (WebhookEndpoint, error) {
	s, err := w.find(id)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return s.Endpoint, nil
}

// Delete decides the deletion of subscription id.
func (w *WebhookSubscriptions) Delete(id string, now time.Time) (Event, error) {
	if _, err := w.find(id); err != nil {
		return nil, err
	}
	return &WebhookSubscriptionDeleted{SubscriptionID: id, ShopID: w.ShopID, DeletedAt: now.UTC()}, nil
}

// RotateSecret decides a new secret for subscription id; the previous one
// keeps signing for overlap (0 to MaxWebhookSecretOverlap).
func (w *WebhookSubscriptions) RotateSecret(id, secret string, overlap time.Duration, now time.Time) (Event, error) {
	if _, err := w.find(id); err != nil {
		return nil, err
	}
	if overlap < 0 || overlap > MaxWebhookSecretOverlap {
		return nil, Invalid("overlap_seconds", "overlap_seconds must be between 0 and %d", int(MaxWebhookSecretOverlap/time.Second))
	}
	ev := &WebhookSecretRotated{SubscriptionID: id, ShopID: w.ShopID, Secret: secret, RotatedAt: now.UTC()}
	if overlap > 0 {
		ev.PreviousValidUntil = now.Add(overlap).UTC()
	}
	return ev, nil
}

// Disable decides that the delivery side disables subscription id for
// reason (gone, failing). A subscription already disabled, or deleted,
// decides nothing: the delivery side may ask more than once.
func (w *WebhookSubscriptions) Disable(id, reason string, status int, now time.Time) []Event {
	s := w.Subs[id]
	if s == nil || !s.Enabled {
		return nil
	}
	return []Event{&WebhookSubscriptionDisabled{SubscriptionID: id, ShopID: w.ShopID, Reason: reason, Status: status,
		DisabledAt: now.UTC()}}
}

// Warn decides a failing warning of level for subscription id, failing
// since since: nothing when the subscription is gone, disabled or was
// warned at this level already in this failing period.
func (w *WebhookSubscriptions) Warn(id string, level int, since, disableAt time.Time, reason string, now time.Time) []Event {
	s := w.Subs[id]
	if s == nil || !s.Enabled || (s.FailingSince.Equal(since.UTC()) && s.FailingLevel >= level) {
		return nil
	}
	return []Event{&WebhookSubscriptionFailing{SubscriptionID: id, ShopID: w.ShopID, FailingSince: since.UTC(),
		DisableAt: disableAt.UTC(), LastReason: reason, Level: level, RaisedAt: now.UTC()}}
}

// Recover decides the end of subscription id's warned failing period
// that began at since: nothing when no warning of that period is on
// record (none raised, or it ended already by a change, an enabling or an
// earlier recovery).
func (w *WebhookSubscriptions) Recover(id string, since, now time.Time) []Event {
	s := w.Subs[id]
	if s == nil || s.FailingLevel == 0 || !s.FailingSince.Equal(since.UTC()) {
		return nil
	}
	return []Event{&WebhookSubscriptionRecovered{SubscriptionID: id, ShopID: w.ShopID, FailingSince: s.FailingSince,
		RecoveredAt: now.UTC()}}
}

// Ping decides a test delivery to subscription id (enabled or not: a
// merchant tests an endpoint before enabling it again).
func (w *WebhookSubscriptions) Ping(id, pingID string, now time.Time) (Event, error) {
	if _, err := w.find(id); err != nil {
		return nil, err
	}
	return &WebhookPingRequested{SubscriptionID: id, ShopID: w.ShopID, PingID: pingID, RequestedAt: now.UTC()}, nil
}

// Redeliver decides a retry of one delivery (deliveryID set) or a recover
// since a time. Both need the subscription enabled: a disabled one
// delivers nothing until the merchant enables it.
func (w *WebhookSubscriptions) Redeliver(id, deliveryID string, since time.Time, now time.Time) (Event, error) {
	s, err := w.find(id)
	if err != nil {
		return nil, err
	}
	if !s.Enabled {
		return nil, Conflict("the webhook subscription is disabled: enable it first (PATCH enabled=true)")
	}
	ev := &WebhookRedeliveryRequested{SubscriptionID: id, ShopID: w.ShopID, RequestedAt: now.UTC()}
	if deliveryID != "" {
		ev.Kind, ev.DeliveryID = WebhookRedeliverOne, deliveryID
		return ev, nil
	}
	if since.IsZero() {
		return nil, Invalid("since", "since is required (RFC 3339 time)")
	}
	if since.After(now) {
		return nil, Invalid("since", "since is in the future")
	}
	ev.Kind, ev.Since = WebhookRedeliverSince, since.UTC()
	return ev, nil
}
