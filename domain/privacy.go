package domain

import (
	"net/mail"
	"net/url"
	"time"
)

// Kinds of GDPR requests, as the commerce platform names its topics.
const (
	GDPRKindDataRequest = "customers/data_request"
	GDPRKindRedact      = "customers/redact"
)

// Channels a data export is delivered through.
const (
	ExportChannelWebhook = "webhook" // HTTPS POST to the shop's data-request URL
	ExportChannelEmail   = "email"   // SMTP to the shop's contact e-mail
)

// GDPR request statuses (the gdprrequests read model).
const (
	GDPRStatusPending   = "pending"
	GDPRStatusRetrying  = "retrying"
	GDPRStatusCompleted = "completed"
)

// GDPRDeadline is how long the platform gives to answer a privacy request.
const GDPRDeadline = 30 * 24 * time.Hour

// Backoff of failed exports: the first retry after ExportRetryBase, then
// doubling up to ExportRetryMax.
const (
	ExportRetryBase = time.Minute
	ExportRetryMax  = 6 * time.Hour
)

// PrefixGDPRRequest starts the id of a GDPR request record.
const PrefixGDPRRequest = "gdr_"

// PrivacySettingsStream is the stream of a shop's privacy settings.
func PrivacySettingsStream(shopID string) string { return "privacysettings-" + shopID }

// GDPRRequestStream is the stream of one GDPR request's record: its
// delivery attempts and its completion.
func GDPRRequestStream(requestID string) string { return "gdprrequest-" + requestID }

// GDPRRequestID derives the id of the record of the privacy request
// recorded as event eventID (the CustomerDataRequested event's id), so
// every server and every redelivery names it the same.
func GDPRRequestID(shopID, eventID string) string {
	return IDFromExternal(PrefixGDPRRequest, "gdpr_request", shopID, eventID)
}

// ExportRetryDelay is the wait after failed attempt number attempt (1 for
// the first): base, doubling each attempt, at most ExportRetryMax (and at
// most 64 times base when base is below a minute, for tests).
func ExportRetryDelay(attempt int, base time.Duration) time.Duration {
	if base <= 0 {
		base = ExportRetryBase
	}
	limit := ExportRetryMax
	if base < ExportRetryBase {
		limit = 64 * base
	}
	d := base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// privacyEvents lists the privacy settings and GDPR request record events.
func privacyEvents() []EventSpec {
	return []EventSpec{
		{Name: "ShopPrivacySettingsChanged", Version: 1, New: func() Event { return &ShopPrivacySettingsChanged{} }},
		{Name: "DataExportAttemptFailed", Version: 1, New: func() Event { return &DataExportAttemptFailed{} }},
		{Name: "GdprRequestCompleted", Version: 1, New: func() Event { return &GdprRequestCompleted{} }},
	}
}

// ShopPrivacySettingsChanged: the shop's data-request destination changed.
// A data export goes to DataRequestURL (signed with SigningSecret) when it
// is set, otherwise by e-mail to ContactEmail. SigningSecret is a secret:
// kept only in this sealed payload and the read model, never logged.
type ShopPrivacySettingsChanged struct {
	ShopID         string    `json:"shop_id"`
	DataRequestURL string    `json:"data_request_url,omitempty"`
	SigningSecret  string    `json:"signing_secret"`
	ContactEmail   string    `json:"contact_email,omitempty"`
	ChangedAt      time.Time `json:"changed_at"`
}

// EventType implements Event.
func (ShopPrivacySettingsChanged) EventType() string { return "ShopPrivacySettingsChanged" }

// PrivacySettings is the privacy settings aggregate of a shop.
type PrivacySettings struct {
	DataRequestURL, ContactEmail string
}

// Apply folds an event into the settings.
func (p *PrivacySettings) Apply(e Event) {
	if ev, ok := e.(*ShopPrivacySettingsChanged); ok {
		p.DataRequestURL, p.ContactEmail = ev.DataRequestURL, ev.ContactEmail
	}
}

// ChangePrivacySettings decides new privacy settings of shop with a new
// signing secret: url, when set, must be an absolute http(s) URL without
// credentials; email, when set, an e-mail address. Where the service may
// connect (https only, no loopback, private or other special address,
// unless the operator allows them) is the outbound guard's rule, checked
// by the command before it calls this (outbound.CheckURL) and again at
// connect time.
func ChangePrivacySettings(shop *Shop, dataRequestURL, contactEmail, secret string, now time.Time) (*ShopPrivacySettingsChanged, error) {
	if !shop.Exists {
		return nil, NotFound("shop")
	}
	if dataRequestURL != "" {
		if err := checkHTTPSURL(dataRequestURL); err != "" {
			return nil, Invalid("data_request_url", "%s", err)
		}
	}
	if contactEmail != "" {
		a, err := mail.ParseAddress(contactEmail)
		if err != nil || a.Name != "" || len(contactEmail) > 254 {
			return nil, Invalid("contact_email", "not a valid e-mail address")
		}
	}
	if len(secret) < 16 || len(secret) > 256 {
		return nil, Invalid("signing_secret", "signing secret must be 16 to 256 characters")
	}
	return &ShopPrivacySettingsChanged{ShopID: shop.ID, DataRequestURL: dataRequestURL, SigningSecret: secret,
		ContactEmail: contactEmail, ChangedAt: now.UTC()}, nil
}

func checkHTTPSURL(raw string) string {
	if len(raw) > 2048 {
		return "the URL is longer than 2048 characters"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "not a URL"
	case u.Scheme != "https" && u.Scheme != "http":
		return "the URL must use https"
	case u.Hostname() == "":
		return "the URL has no host"
	case u.User != nil:
		return "the URL must not carry credentials"
	case u.Fragment != "":
		return "the URL must not have a fragment"
	}
	return ""
}

// DataExportAttemptFailed: an attempt to deliver a data export failed; the
// next is due at NextAttemptAt. Reason is a fixed word or an HTTP status
// (no_destination, smtp_not_configured, http_500, timeout, …), never
// personal data or a body.
type DataExportAttemptFailed struct {
	RequestID     string    `json:"request_id"`
	ShopID        string    `json:"shop_id"`
	Attempt       int       `json:"attempt"`
	Channel       string    `json:"channel,omitempty"`
	Reason        string    `json:"reason"`
	AttemptedAt   time.Time `json:"attempted_at"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
}

// EventType implements Event.
func (DataExportAttemptFailed) EventType() string { return "DataExportAttemptFailed" }

// GdprRequestCompleted: a GDPR request was answered; for a data request,
// the export of Bytes bytes with SHA-256 SHA256 (hex) was delivered
// through Channel.
type GdprRequestCompleted struct {
	RequestID   string    `json:"request_id"`
	ShopID      string    `json:"shop_id"`
	Kind        string    `json:"kind"`
	Channel     string    `json:"channel"`
	Status      string    `json:"status"`
	CompletedAt time.Time `json:"completed_at"`
	Bytes       int       `json:"bytes"`
	SHA256      string    `json:"sha256"`
}

// EventType implements Event.
func (GdprRequestCompleted) EventType() string { return "GdprRequestCompleted" }
