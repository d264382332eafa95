package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"
)

// messagingEvents lists the messaging platform's and providers' event types.
func messagingEvents() []EventSpec {
	return []EventSpec{
		{Name: "WhatsAppAccountConnected", Version: 1, New: func() Event { return &WhatsAppAccountConnected{} }},
		{Name: "WhatsAppAccountCredentialsRotated", Version: 1, New: func() Event { return &WhatsAppAccountCredentialsRotated{} }},
		{Name: "MessagingProviderConnected", Version: 1, New: func() Event { return &MessagingProviderConnected{} }},
		{Name: "MessagingProviderTokenRotated", Version: 1, New: func() Event { return &MessagingProviderTokenRotated{} }},
		{Name: "WhatsAppMessageReceived", Version: 1, New: func() Event { return &WhatsAppMessageReceived{} }},
		{Name: "MessageStatusReported", Version: 1, New: func() Event { return &MessageStatusReported{} }},
		{Name: "WhatsAppTemplateStatusUpdated", Version: 1, New: func() Event { return &WhatsAppTemplateStatusUpdated{} }},
		{Name: "WhatsAppPhoneQualityUpdated", Version: 1, New: func() Event { return &WhatsAppPhoneQualityUpdated{} }},
		{Name: "WhatsAppAccountAlertReceived", Version: 1, New: func() Event { return &WhatsAppAccountAlertReceived{} }},
		{Name: "WhatsAppAccountReviewUpdated", Version: 1, New: func() Event { return &WhatsAppAccountReviewUpdated{} }},
	}
}

// Inbound message queues (read models the AI concierge and the merchant's
// team work from).
const (
	QueueAIConcierge = "ai_concierge"
	QueueHuman       = "human"
)

// InboundQueue is where a customer's message goes on a shop's plan: the AI
// concierge from pro_plus up, the human queue below.
func InboundQueue(plan Plan) string {
	if plan.AtLeast(PlanProPlus) {
		return QueueAIConcierge
	}
	return QueueHuman
}

// Message statuses the message log acts on; any other status reported is
// kept as sent.
const (
	MessageStatusSent      = "sent"
	MessageStatusDelivered = "delivered"
	MessageStatusRead      = "read"
	MessageStatusFailed    = "failed"
)

// Template states moved by template status events.
const (
	TemplateApproved = "approved"
	TemplateRejected = "rejected"
	TemplatePaused   = "paused"
)

// Number quality ratings (DESIGN.md §7). Another value the platform sends
// is kept as sent.
const (
	QualityGreen   = "GREEN"
	QualityYellow  = "YELLOW"
	QualityRed     = "RED"
	QualityUnknown = "UNKNOWN"
)

// CustomerIDFromPhone derives the customer id of a messaging-platform user
// from the shop and the user's phone number (WhatsApp's wa_id), so every
// message and status of one person reaches the same customer id without a
// lookup and without the number appearing in the id.
func CustomerIDFromPhone(shopID, waID string) string {
	return CustomerIDFromExternal(shopID, "phone:"+waID)
}

// WhatsAppAccountStream is the stream of one WhatsApp business account. Its
// first append uses "no stream", which claims the account for one shop.
// Business account ids are numeric (ValidMetaID), so the id is used as is.
func WhatsAppAccountStream(businessAccountID string) string {
	return "whatsappaccount-" + businessAccountID
}

// MessagingProviderStream is the stream of a shop's connection to one
// messaging provider.
func MessagingProviderStream(shopID, provider string) string {
	return "messagingprovider-" + hashParts(shopID, provider)
}

// MessageStream is the stream of one message of a shop (inbound or
// outbound), named by the platform's or provider's message id, hashed since
// message ids are free-form.
func MessageStream(shopID, messageID string) string {
	return "message-" + hashParts(shopID, messageID)
}

// WhatsAppTemplateStream is the stream of one message template of a shop.
func WhatsAppTemplateStream(shopID, templateID string) string {
	return "whatsapptemplate-" + hashParts(shopID, templateID)
}

// WhatsAppNumberStream is the stream of one business phone number of a
// shop (its quality updates).
func WhatsAppNumberStream(shopID, displayPhoneNumber string) string {
	return "whatsappnumber-" + hashParts(shopID, displayPhoneNumber)
}

func hashParts(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// ValidMetaID reports whether s is a numeric Meta object id (a business
// account or phone number id) of 1 to 32 digits.
func ValidMetaID(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ValidProviderName reports whether s names a messaging provider: a
// lowercase letter, then up to 39 lowercase letters, digits, '_' or '-'.
func ValidProviderName(s string) bool {
	if s == "" || len(s) > 40 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// secretText reports whether s is 1 to max visible ASCII characters (no
// spaces or control characters): the form of app secrets and tokens.
func secretText(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// WhatsAppAccountConnected: a shop connected a WhatsApp business account.
// AppSecret keys the X-Hub-Signature-256 of the platform's deliveries; it
// lives only in this payload (sealed with the shop key) and in the read
// model the receiver reads. Of the verify token only the SHA-256 is kept.
// AccessToken is the business account's token the Cloud API takes to send
// messages, kept like AppSecret; empty (and in events recorded before it
// existed) means the shop gave none and nothing is sent through the account.
type WhatsAppAccountConnected struct {
	ShopID            string    `json:"shop_id"`
	BusinessAccountID string    `json:"business_account_id"`
	PhoneNumberID     string    `json:"phone_number_id"`
	AppSecret         string    `json:"app_secret"`
	VerifyTokenHash   string    `json:"verify_token_hash"`
	AccessToken       string    `json:"access_token,omitempty"`
	ConnectedAt       time.Time `json:"connected_at"`
}

// EventType implements Event.
func (WhatsAppAccountConnected) EventType() string { return "WhatsAppAccountConnected" }

// WhatsAppAccountCredentialsRotated: the shop connected its account again
// with a new app secret, verify token or access token (or phone number id);
// the old ones stop working once the read model has it. An empty
// AccessToken keeps the account's current one (a rotation of the app
// secret alone does not stop sending).
type WhatsAppAccountCredentialsRotated struct {
	ShopID            string    `json:"shop_id"`
	BusinessAccountID string    `json:"business_account_id"`
	PhoneNumberID     string    `json:"phone_number_id"`
	AppSecret         string    `json:"app_secret"`
	VerifyTokenHash   string    `json:"verify_token_hash"`
	AccessToken       string    `json:"access_token,omitempty"`
	RotatedAt         time.Time `json:"rotated_at"`
}

// EventType implements Event.
func (WhatsAppAccountCredentialsRotated) EventType() string {
	return "WhatsAppAccountCredentialsRotated"
}

// WhatsAppAccount is the business account aggregate: which shop holds it.
type WhatsAppAccount struct {
	ID     string
	ShopID string
	Exists bool
}

// Apply folds an event into the account.
func (a *WhatsAppAccount) Apply(e Event) {
	if ev, ok := e.(*WhatsAppAccountConnected); ok {
		a.ID, a.ShopID, a.Exists = ev.BusinessAccountID, ev.ShopID, true
	}
}

// WhatsAppConnection is what a shop gives to connect a business account.
// AccessToken is optional: without it the account only receives.
type WhatsAppConnection struct {
	BusinessAccountID, PhoneNumberID, AppSecret, VerifyToken, AccessToken string
}

// ConnectWhatsApp decides the connection of a business account to shop: a
// new account is connected; the shop's own account gets its credentials
// rotated (every connection again is a rotation, whatever changed: a new
// access token alone too); another shop's account is a conflict (an
// account belongs to one shop only). An access token, when given, is 16 to
// 4096 visible ASCII characters.
func ConnectWhatsApp(shop *Shop, acc *WhatsAppAccount, in WhatsAppConnection, now time.Time) (Event, error) {
	if !shop.Exists {
		return nil, NotFound("shop")
	}
	if !ValidMetaID(in.BusinessAccountID) {
		return nil, Invalid("business_account_id", "business account id must be 1 to 32 digits")
	}
	if !ValidMetaID(in.PhoneNumberID) {
		return nil, Invalid("phone_number_id", "phone number id must be 1 to 32 digits")
	}
	if !secretText(in.AppSecret, 16, 256) {
		return nil, Invalid("app_secret", "app secret must be 16 to 256 visible ASCII characters")
	}
	if !secretText(in.VerifyToken, 8, 256) {
		return nil, Invalid("verify_token", "verify token must be 8 to 256 visible ASCII characters")
	}
	if in.AccessToken != "" && !secretText(in.AccessToken, 16, 4096) {
		return nil, Invalid("access_token", "access token must be 16 to 4096 visible ASCII characters (no spaces)")
	}
	if acc.Exists && acc.ShopID != shop.ID {
		return nil, Conflict("business account %s is connected to another shop", in.BusinessAccountID)
	}
	hash := HashToken(in.VerifyToken)
	if acc.Exists {
		return &WhatsAppAccountCredentialsRotated{ShopID: shop.ID, BusinessAccountID: in.BusinessAccountID,
			PhoneNumberID: in.PhoneNumberID, AppSecret: in.AppSecret, VerifyTokenHash: hash, AccessToken: in.AccessToken,
			RotatedAt: now.UTC()}, nil
	}
	return &WhatsAppAccountConnected{ShopID: shop.ID, BusinessAccountID: in.BusinessAccountID,
		PhoneNumberID: in.PhoneNumberID, AppSecret: in.AppSecret, VerifyTokenHash: hash, AccessToken: in.AccessToken,
		ConnectedAt: now.UTC()}, nil
}

// ProviderTokenPrefix starts every messaging-provider callback token.
const ProviderTokenPrefix = "cpt_"

// NewProviderToken returns a fresh callback token: "cpt_" and 32 base62
// characters from crypto/rand.
func NewProviderToken() string { return ProviderTokenPrefix + RandomBase62(tokenBodyLen) }

// ValidProviderToken checks the syntax of a callback token (it does not
// look it up).
func ValidProviderToken(raw string) bool {
	body, ok := strings.CutPrefix(raw, ProviderTokenPrefix)
	if !ok || len(body) != tokenBodyLen {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// MessagingProviderConnected: a shop connected a messaging provider that
// posts delivery callbacks with a shared token. Only the token's SHA-256 is
// kept.
type MessagingProviderConnected struct {
	ShopID      string    `json:"shop_id"`
	Provider    string    `json:"provider"`
	TokenHash   string    `json:"token_hash"`
	ConnectedAt time.Time `json:"connected_at"`
}

// EventType implements Event.
func (MessagingProviderConnected) EventType() string { return "MessagingProviderConnected" }

// MessagingProviderTokenRotated: the shop connected the provider again; the
// new token replaces the old one, which fails from then on.
type MessagingProviderTokenRotated struct {
	ShopID    string    `json:"shop_id"`
	Provider  string    `json:"provider"`
	TokenHash string    `json:"token_hash"`
	RotatedAt time.Time `json:"rotated_at"`
}

// EventType implements Event.
func (MessagingProviderTokenRotated) EventType() string { return "MessagingProviderTokenRotated" }

// MessagingProvider is the aggregate of a shop's connection to a provider.
type MessagingProvider struct {
	Exists bool
}

// Apply folds an event into the connection.
func (p *MessagingProvider) Apply(e Event) {
	if _, ok := e.(*MessagingProviderConnected); ok {
		p.Exists = true
	}
}

// ConnectProvider decides a provider connection with the raw token minted
// for it: the first connection, or a rotation of the token.
func ConnectProvider(shop *Shop, conn *MessagingProvider, provider, rawToken string, now time.Time) (Event, error) {
	if !shop.Exists {
		return nil, NotFound("shop")
	}
	if !ValidProviderName(provider) {
		return nil, Invalid("provider", "provider must be a lowercase letter then up to 39 lowercase letters, digits, '_' or '-'")
	}
	if !ValidProviderToken(rawToken) {
		return nil, Invalid("token", "malformed token")
	}
	if conn.Exists {
		return &MessagingProviderTokenRotated{ShopID: shop.ID, Provider: provider, TokenHash: HashToken(rawToken), RotatedAt: now.UTC()}, nil
	}
	return &MessagingProviderConnected{ShopID: shop.ID, Provider: provider, TokenHash: HashToken(rawToken), ConnectedAt: now.UTC()}, nil
}

// Bounds on the text of reported facts, so a payload cannot grow a row
// without limit.
const (
	maxMessagingID   = 256
	maxMessagingText = 65536
	maxMessagingWord = 1024
)

// checkText fails with field when s is longer than max bytes or not UTF-8.
func checkText(field, s string, max int) error {
	if len(s) > max || !utf8.ValidString(s) {
		return Invalid(field, "must be valid UTF-8 of at most %d bytes", max)
	}
	return nil
}

// required fails with field when s is blank, too long or not UTF-8.
func required(field, s string, max int) error {
	if strings.TrimSpace(s) == "" {
		return Invalid(field, "is required")
	}
	return checkText(field, s, max)
}

// metaID fails with field when s is not a numeric Meta id.
func metaID(field, s string) error {
	if !ValidMetaID(s) {
		return Invalid(field, "must be 1 to 32 digits")
	}
	return nil
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// InboundMessage is a message a customer sent to a shop's business number.
// From (the sender's phone number), ProfileName and Text are personal data.
type InboundMessage struct {
	BusinessAccountID string
	PhoneNumberID     string
	MessageID         string
	From              string
	ProfileName       string
	Type              string
	Text              string
	SentAt            time.Time
}

// WhatsAppMessageReceived: a customer sent a message to the shop. It is
// queued for the AI concierge or for the human queue by the shop's plan
// when it arrived. from, profile_name and text are sealed with the
// customer's key.
type WhatsAppMessageReceived struct {
	ShopID            string    `json:"shop_id"`
	CustomerID        string    `json:"customer_id"`
	BusinessAccountID string    `json:"business_account_id"`
	PhoneNumberID     string    `json:"phone_number_id,omitempty"`
	MessageID         string    `json:"message_id"`
	From              string    `json:"from"`
	ProfileName       *string   `json:"profile_name"`
	Type              string    `json:"type"`
	Text              *string   `json:"text"`
	SentAt            time.Time `json:"sent_at"`
	Queue             string    `json:"queue"`
}

// EventType implements Event.
func (WhatsAppMessageReceived) EventType() string { return "WhatsAppMessageReceived" }

// Subject implements Personal.
func (e WhatsAppMessageReceived) Subject() string { return e.CustomerID }

// PersonalFields implements Personal.
func (WhatsAppMessageReceived) PersonalFields() []string {
	return []string{"from", "profile_name", "text"}
}

// ReceiveMessage decides the event of an inbound message for a shop on
// plan. now stands for a missing send time.
func ReceiveMessage(shop *Shop, in InboundMessage, now time.Time) (*WhatsAppMessageReceived, error) {
	if !shop.Exists {
		return nil, NotFound("shop")
	}
	if err := firstError(
		required("messages.id", in.MessageID, maxMessagingID),
		required("messages.from", in.From, maxMessagingWord),
		required("messages.type", in.Type, maxMessagingWord),
		checkText("messages.text", in.Text, maxMessagingText),
		checkText("contacts.profile.name", in.ProfileName, maxMessagingWord),
		checkText("metadata.phone_number_id", in.PhoneNumberID, maxMessagingWord),
	); err != nil {
		return nil, err
	}
	sent := in.SentAt
	if sent.IsZero() {
		sent = now
	}
	return &WhatsAppMessageReceived{
		ShopID: shop.ID, CustomerID: CustomerIDFromPhone(shop.ID, in.From),
		BusinessAccountID: in.BusinessAccountID, PhoneNumberID: in.PhoneNumberID,
		MessageID: in.MessageID, From: in.From, ProfileName: optional(in.ProfileName),
		Type: in.Type, Text: optional(in.Text), SentAt: sent.UTC(), Queue: InboundQueue(shop.Plan),
	}, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MessageStatus is a delivery status of an outbound message, reported by
// the messaging platform or a provider. RecipientID is the recipient's
// phone number: it is only used to derive the customer id, never kept.
type MessageStatus struct {
	Source      string // whatsapp, provider:<name>
	MessageID   string
	Status      string
	RecipientID string
	At          time.Time
	ErrorCode   string
	ErrorTitle  string
	// ClientReference is the reference the message was sent with, as
	// the platform returns it (WhatsApp's biz_opaque_callback_data, a
	// provider's client_reference): the service's message id for the
	// messages it sent.
	ClientReference string
}

// MessageStatusReported: the platform or a provider reported a status of a
// message. delivered, read and failed set delivered_at, opened_at and
// failed_at (with the error code) on the message log; another status is
// kept as sent.
type MessageStatusReported struct {
	ShopID     string    `json:"shop_id"`
	MessageID  string    `json:"message_id"`
	CustomerID string    `json:"customer_id,omitempty"`
	Source     string    `json:"source"`
	Status     string    `json:"status"`
	At         time.Time `json:"at"`
	ErrorCode  string    `json:"error_code,omitempty"`
	ErrorTitle string    `json:"error_title,omitempty"`
	// ClientReference is the service's message id when the report
	// carried it back.
	ClientReference string `json:"client_reference,omitempty"`
}

// EventType implements Event.
func (MessageStatusReported) EventType() string { return "MessageStatusReported" }

// ReportMessageStatus validates a status report. now stands for a missing
// time.
func ReportMessageStatus(shopID string, in MessageStatus, now time.Time) (*MessageStatusReported, error) {
	if err := firstError(
		required("statuses.id", in.MessageID, maxMessagingID),
		required("statuses.status", in.Status, maxMessagingWord),
		checkText("statuses.recipient_id", in.RecipientID, maxMessagingWord),
		checkText("statuses.errors.code", in.ErrorCode, maxMessagingWord),
		checkText("statuses.errors.title", in.ErrorTitle, maxMessagingWord),
		checkText("statuses.biz_opaque_callback_data", in.ClientReference, 512),
	); err != nil {
		return nil, err
	}
	ev := &MessageStatusReported{ShopID: shopID, MessageID: in.MessageID, Source: in.Source,
		Status: in.Status, At: orNow(in.At, now), ErrorCode: in.ErrorCode, ErrorTitle: in.ErrorTitle, ClientReference: in.ClientReference}
	if in.RecipientID != "" {
		ev.CustomerID = CustomerIDFromPhone(shopID, in.RecipientID)
	}
	return ev, nil
}

func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now.UTC()
	}
	return t.UTC()
}

// TemplateStatus is a message template's status event.
type TemplateStatus struct {
	BusinessAccountID string
	TemplateID        string
	Name              string
	Language          string
	Event             string
	Reason            string
	At                time.Time
}

// WhatsAppTemplateStatusUpdated: the platform approved, rejected or paused
// a message template (or reported another template event, kept as sent).
//
// The specification's consequences of PAUSED and REJECTED (every campaign
// and journey using the template auto-paused) and of APPROVED (waiting
// campaigns unblocked, paused ones resumed) are the template reactor's
// (projections/templateholds); the P1 anomaly is the anomaly reactor's
// (projections/anomalies).
type WhatsAppTemplateStatusUpdated struct {
	ShopID            string    `json:"shop_id"`
	BusinessAccountID string    `json:"business_account_id"`
	TemplateID        string    `json:"template_id"`
	Name              string    `json:"name"`
	Language          string    `json:"language"`
	Event             string    `json:"event"`
	State             string    `json:"state"`
	Reason            string    `json:"reason,omitempty"`
	At                time.Time `json:"at"`
}

// EventType implements Event.
func (WhatsAppTemplateStatusUpdated) EventType() string { return "WhatsAppTemplateStatusUpdated" }

// TemplateState maps a template event to the template's state: APPROVED,
// REJECTED and PAUSED to approved, rejected and paused; any other event is
// kept as sent.
func TemplateState(event string) string {
	switch strings.ToUpper(event) {
	case "APPROVED":
		return TemplateApproved
	case "REJECTED":
		return TemplateRejected
	case "PAUSED":
		return TemplatePaused
	}
	return event
}

// UpdateTemplateStatus validates a template event.
func UpdateTemplateStatus(shopID string, in TemplateStatus, now time.Time) (*WhatsAppTemplateStatusUpdated, error) {
	if err := firstError(
		required("message_template_id", in.TemplateID, maxMessagingID),
		required("event", in.Event, maxMessagingWord),
		checkText("message_template_name", in.Name, maxMessagingWord),
		checkText("message_template_language", in.Language, maxMessagingWord),
		checkText("reason", in.Reason, maxMessagingText),
	); err != nil {
		return nil, err
	}
	return &WhatsAppTemplateStatusUpdated{ShopID: shopID, BusinessAccountID: in.BusinessAccountID,
		TemplateID: in.TemplateID, Name: in.Name, Language: in.Language, Event: in.Event,
		State: TemplateState(in.Event), Reason: in.Reason, At: orNow(in.At, now)}, nil
}

// PhoneQuality is a business phone number's quality update.
type PhoneQuality struct {
	BusinessAccountID  string
	DisplayPhoneNumber string
	Event              string
	CurrentLimit       string
	OldLimit           string
	// Rating is the quality rating when the sender states it; "" when the
	// update does not say (see QualityRating).
	Rating string
	At     time.Time
}

// QualityRating is the rating an update implies: the rating it states
// (kept as sent, whatever its value), else the one its event implies
// (FLAGGED: the quality reached the low state, RED; UNFLAGGED: it left it,
// for a rating the event does not tell, UNKNOWN), else "" (the update is
// about the messaging limit only and leaves the rating as it was).
func QualityRating(stated, event string) string {
	if stated != "" {
		return stated
	}
	switch strings.ToUpper(event) {
	case "FLAGGED":
		return QualityRed
	case "UNFLAGGED":
		return QualityUnknown
	}
	return ""
}

// WhatsAppPhoneQualityUpdated: the platform reported a change of a business
// number's quality or messaging limit. The number is the business's, not a
// customer's: it is sealed with the shop key only.
//
// The specification's consequences of a drop to YELLOW: the daily send
// rate is throttled by sending/ (WhatsAppSendingLimitChanged), the P2
// anomaly that prompts the merchant is the anomaly reactor's
// (projections/anomalies).
type WhatsAppPhoneQualityUpdated struct {
	ShopID             string    `json:"shop_id"`
	BusinessAccountID  string    `json:"business_account_id"`
	DisplayPhoneNumber string    `json:"display_phone_number"`
	Event              string    `json:"event"`
	CurrentLimit       string    `json:"current_limit,omitempty"`
	OldLimit           string    `json:"old_limit,omitempty"`
	Rating             string    `json:"rating,omitempty"`
	At                 time.Time `json:"at"`
}

// EventType implements Event.
func (WhatsAppPhoneQualityUpdated) EventType() string { return "WhatsAppPhoneQualityUpdated" }

// UpdatePhoneQuality validates a quality update.
func UpdatePhoneQuality(shopID string, in PhoneQuality, now time.Time) (*WhatsAppPhoneQualityUpdated, error) {
	if err := firstError(
		required("display_phone_number", in.DisplayPhoneNumber, maxMessagingWord),
		checkText("event", in.Event, maxMessagingWord),
		checkText("current_limit", in.CurrentLimit, maxMessagingWord),
		checkText("old_limit", in.OldLimit, maxMessagingWord),
		checkText("quality_rating", in.Rating, maxMessagingWord),
	); err != nil {
		return nil, err
	}
	return &WhatsAppPhoneQualityUpdated{ShopID: shopID, BusinessAccountID: in.BusinessAccountID,
		DisplayPhoneNumber: in.DisplayPhoneNumber, Event: in.Event, CurrentLimit: in.CurrentLimit,
		OldLimit: in.OldLimit, Rating: QualityRating(in.Rating, in.Event), At: orNow(in.At, now)}, nil
}

// AccountAlert is an alert the platform raised on a business account or
// one of its numbers.
type AccountAlert struct {
	BusinessAccountID string
	EntityType        string
	EntityID          string
	Severity          string
	Status            string
	Type              string
	Description       string
	At                time.Time
}

// WhatsAppAccountAlertReceived: the platform flagged an issue on the
// account (values kept as sent).
type WhatsAppAccountAlertReceived struct {
	ShopID            string    `json:"shop_id"`
	BusinessAccountID string    `json:"business_account_id"`
	EntityType        string    `json:"entity_type,omitempty"`
	EntityID          string    `json:"entity_id,omitempty"`
	Severity          string    `json:"severity,omitempty"`
	Status            string    `json:"status,omitempty"`
	AlertType         string    `json:"alert_type"`
	Description       string    `json:"description,omitempty"`
	At                time.Time `json:"at"`
}

// EventType implements Event.
func (WhatsAppAccountAlertReceived) EventType() string { return "WhatsAppAccountAlertReceived" }

// ReceiveAccountAlert validates an account alert.
func ReceiveAccountAlert(shopID string, in AccountAlert, now time.Time) (*WhatsAppAccountAlertReceived, error) {
	if err := firstError(
		metaID("entry.id", in.BusinessAccountID),
		required("alert_info.alert_type", in.Type, maxMessagingWord),
		checkText("entity_type", in.EntityType, maxMessagingWord),
		checkText("entity_id", in.EntityID, maxMessagingWord),
		checkText("alert_info.alert_severity", in.Severity, maxMessagingWord),
		checkText("alert_info.alert_status", in.Status, maxMessagingWord),
		checkText("alert_info.alert_description", in.Description, maxMessagingText),
	); err != nil {
		return nil, err
	}
	return &WhatsAppAccountAlertReceived{ShopID: shopID, BusinessAccountID: in.BusinessAccountID,
		EntityType: in.EntityType, EntityID: in.EntityID, Severity: in.Severity, Status: in.Status,
		AlertType: in.Type, Description: in.Description, At: orNow(in.At, now)}, nil
}

// WhatsAppAccountReviewUpdated: the platform's review decision on the
// business account (APPROVED, REJECTED, PENDING, DEFERRED; another value is
// kept as sent).
type WhatsAppAccountReviewUpdated struct {
	ShopID            string    `json:"shop_id"`
	BusinessAccountID string    `json:"business_account_id"`
	Decision          string    `json:"decision"`
	At                time.Time `json:"at"`
}

// EventType implements Event.
func (WhatsAppAccountReviewUpdated) EventType() string { return "WhatsAppAccountReviewUpdated" }

// UpdateAccountReview validates a review decision.
func UpdateAccountReview(shopID, businessAccountID, decision string, at, now time.Time) (*WhatsAppAccountReviewUpdated, error) {
	if err := firstError(metaID("entry.id", businessAccountID), required("decision", decision, maxMessagingWord)); err != nil {
		return nil, err
	}
	return &WhatsAppAccountReviewUpdated{ShopID: shopID, BusinessAccountID: businessAccountID,
		Decision: decision, At: orNow(at, now)}, nil
}
