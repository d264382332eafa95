package messaging

import (
	"context"
	"database/sql"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the messaging read model.
type Queries struct {
	db *sql.DB
}

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Account is a connected WhatsApp business account as the receiver needs
// it. AppSecret is a secret: never log or print it.
type Account struct {
	BusinessAccountID string
	ShopID            string
	PhoneNumberID     string
	AppSecret         string
	VerifyTokenHash   string
	ConnectedAt       time.Time
	UpdatedAt         time.Time
}

// WhatsAppAccount returns a connected business account.
func (q *Queries) WhatsAppAccount(ctx context.Context, businessAccountID string) (*Account, error) {
	var a Account
	var connected, updated int64
	err := q.db.QueryRowContext(ctx, `SELECT business_account_id, shop_id, phone_number_id, app_secret, verify_token_hash,
		connected_at, updated_at FROM whatsapp_accounts WHERE business_account_id = ?`, businessAccountID).
		Scan(&a.BusinessAccountID, &a.ShopID, &a.PhoneNumberID, &a.AppSecret, &a.VerifyTokenHash, &connected, &updated)
	if err := readmodel.FindError(err, "business account"); err != nil {
		return nil, err
	}
	a.ConnectedAt, a.UpdatedAt = readmodel.Time(connected), readmodel.Time(updated)
	return &a, nil
}

// AccountByVerifyTokenHash returns a connected account whose verify
// token's SHA-256 (hex) is hash (several accounts of one app share it).
func (q *Queries) AccountByVerifyTokenHash(ctx context.Context, hash string) (*Account, error) {
	var id string
	err := q.db.QueryRowContext(ctx, `SELECT business_account_id FROM whatsapp_accounts WHERE verify_token_hash = ?
		ORDER BY business_account_id LIMIT 1`, hash).Scan(&id)
	if err := readmodel.FindError(err, "business account"); err != nil {
		return nil, err
	}
	return q.WhatsAppAccount(ctx, id)
}

// SendingAccount returns what sending a WhatsApp message for shop needs:
// the phone number id messages go from and the business account's access
// token, sealed (open it with the codec's OpenSecret, SecretLabel and the
// shop id; never log it). Of several accounts of the shop with a token, the
// one connected or rotated last is used. Not found when the shop has no
// account or none with an access token.
func (q *Queries) SendingAccount(ctx context.Context, shop string) (phoneNumberID, sealedToken string, err error) {
	err = q.db.QueryRowContext(ctx, `SELECT phone_number_id, access_token FROM whatsapp_accounts
		WHERE shop_id = ? AND access_token <> '' ORDER BY updated_at DESC, version DESC LIMIT 1`, shop).
		Scan(&phoneNumberID, &sealedToken)
	if err := readmodel.FindError(err, "sending account"); err != nil {
		return "", "", err
	}
	return phoneNumberID, sealedToken, nil
}

// ProviderConnection is a shop's connection to a messaging provider.
type ProviderConnection struct {
	ShopID    string
	Provider  string
	TokenHash string
	UpdatedAt time.Time
}

// ProviderByTokenHash returns the provider connection whose callback
// token's SHA-256 (hex) is hash.
func (q *Queries) ProviderByTokenHash(ctx context.Context, hash string) (*ProviderConnection, error) {
	var c ProviderConnection
	var updated int64
	err := q.db.QueryRowContext(ctx, `SELECT shop_id, provider, token_hash, updated_at FROM provider_connections WHERE token_hash = ?`, hash).
		Scan(&c.ShopID, &c.Provider, &c.TokenHash, &updated)
	if err := readmodel.FindError(err, "provider connection"); err != nil {
		return nil, err
	}
	c.UpdatedAt = readmodel.Time(updated)
	return &c, nil
}

// LogEntry is a row of the message log. A zero time means the status was
// not reported.
type LogEntry struct {
	ShopID, MessageID, CustomerID, Source string
	// LastStatus is the last status reported, as sent.
	LastStatus  string
	DeliveredAt time.Time
	OpenedAt    time.Time
	FailedAt    time.Time
	ErrorCode   string
	ErrorTitle  string
}

// Message returns a shop's message log entry.
func (q *Queries) Message(ctx context.Context, shop, messageID string) (*LogEntry, error) {
	var m LogEntry
	var delivered, opened, failed sql.NullInt64
	err := q.db.QueryRowContext(ctx, `SELECT shop_id, message_id, customer_id, source, last_status, delivered_at, opened_at,
		failed_at, error_code, error_title FROM message_log WHERE shop_id = ? AND message_id = ?`, shop, messageID).
		Scan(&m.ShopID, &m.MessageID, &m.CustomerID, &m.Source, &m.LastStatus, &delivered, &opened, &failed, &m.ErrorCode, &m.ErrorTitle)
	if err := readmodel.FindError(err, "message"); err != nil {
		return nil, err
	}
	m.DeliveredAt, m.OpenedAt, m.FailedAt = readmodel.NullTime(delivered), readmodel.NullTime(opened), readmodel.NullTime(failed)
	return &m, nil
}

// Inbound is a message a customer sent, in its queue. From, ProfileName and
// Text are personal data (nil once the customer is erased).
type Inbound struct {
	ShopID, MessageID, CustomerID, BusinessAccountID, PhoneNumberID string
	From, ProfileName, Text                                         *string
	Type                                                            string
	SentAt                                                          time.Time
	Queue                                                           string
	Redacted                                                        bool
}

const inboundColumns = `shop_id, message_id, customer_id, business_account_id, phone_number_id, from_phone, profile_name,
	text, type, sent_at, queue, redacted`

func scanInbound(s readmodel.Scanner) (Inbound, error) {
	var m Inbound
	var sent int64
	if err := s.Scan(&m.ShopID, &m.MessageID, &m.CustomerID, &m.BusinessAccountID, &m.PhoneNumberID, &m.From, &m.ProfileName,
		&m.Text, &m.Type, &sent, &m.Queue, &m.Redacted); err != nil {
		return Inbound{}, err
	}
	m.SentAt = readmodel.Time(sent)
	return m, nil
}

// InboundMessage returns a message a customer sent to a shop.
func (q *Queries) InboundMessage(ctx context.Context, shop, messageID string) (*Inbound, error) {
	m, err := scanInbound(q.db.QueryRowContext(ctx, `SELECT `+inboundColumns+` FROM inbound_messages
		WHERE shop_id = ? AND message_id = ?`, shop, messageID))
	if err := readmodel.FindError(err, "message"); err != nil {
		return nil, err
	}
	return &m, nil
}

// Queue returns up to limit messages of a shop's queue (domain.QueueAIConcierge
// or domain.QueueHuman), oldest first.
func (q *Queries) Queue(ctx context.Context, shop, queue string, limit int) ([]Inbound, error) {
	return readmodel.List(ctx, q.db, "queue", scanInbound, `SELECT `+inboundColumns+` FROM inbound_messages
		WHERE shop_id = ? AND queue = ? ORDER BY sent_at, message_id LIMIT ?`, shop, queue, limit)
}

// Template is a message template with its state (approved, rejected,
// paused, or another event kept as sent) and the reason of the last event.
type Template struct {
	ShopID, TemplateID, BusinessAccountID, Name, Language string
	State, LastEvent, Reason                              string
	UpdatedAt                                             time.Time
}

// Template returns a shop's message template.
func (q *Queries) Template(ctx context.Context, shop, templateID string) (*Template, error) {
	var t Template
	var updated int64
	err := q.db.QueryRowContext(ctx, `SELECT shop_id, template_id, business_account_id, name, language, state, last_event,
		reason, updated_at FROM message_templates WHERE shop_id = ? AND template_id = ?`, shop, templateID).
		Scan(&t.ShopID, &t.TemplateID, &t.BusinessAccountID, &t.Name, &t.Language, &t.State, &t.LastEvent, &t.Reason, &updated)
	if err := readmodel.FindError(err, "template"); err != nil {
		return nil, err
	}
	t.UpdatedAt = readmodel.Time(updated)
	return &t, nil
}

// PhoneNumber is a business number with its quality rating (GREEN, YELLOW,
// RED, UNKNOWN, or another value kept as sent; UNKNOWN until one is
// reported) and messaging limit.
type PhoneNumber struct {
	ShopID, DisplayPhoneNumber, BusinessAccountID string
	Rating, LastEvent, CurrentLimit               string
	UpdatedAt                                     time.Time
}

// PhoneNumber returns a shop's business number by its display number.
func (q *Queries) PhoneNumber(ctx context.Context, shop, display string) (*PhoneNumber, error) {
	var p PhoneNumber
	var updated int64
	err := q.db.QueryRowContext(ctx, `SELECT shop_id, display_phone_number, business_account_id, rating, last_event,
		current_limit, updated_at FROM phone_numbers WHERE shop_id = ? AND display_phone_number = ?`, shop, display).
		Scan(&p.ShopID, &p.DisplayPhoneNumber, &p.BusinessAccountID, &p.Rating, &p.LastEvent, &p.CurrentLimit, &updated)
	if err := readmodel.FindError(err, "phone number"); err != nil {
		return nil, err
	}
	if p.Rating == "" {
		p.Rating = domain.QualityUnknown
	}
	p.UpdatedAt = readmodel.Time(updated)
	return &p, nil
}

// Alert is an account alert, values as the platform sent them.
type Alert struct {
	ShopID, BusinessAccountID, EntityType, EntityID string
	Severity, Status, Type, Description             string
	At                                              time.Time
}

// Alerts returns a shop's account alerts, oldest first.
func (q *Queries) Alerts(ctx context.Context, shop string) ([]Alert, error) {
	return readmodel.List(ctx, q.db, "alerts", scanAlert, `SELECT shop_id, business_account_id, entity_type, entity_id, severity,
		status, alert_type, description, at FROM account_alerts WHERE shop_id = ? ORDER BY position`, shop)
}

func scanAlert(s readmodel.Scanner) (Alert, error) {
	var a Alert
	var at int64
	if err := s.Scan(&a.ShopID, &a.BusinessAccountID, &a.EntityType, &a.EntityID, &a.Severity, &a.Status,
		&a.Type, &a.Description, &at); err != nil {
		return Alert{}, err
	}
	a.At = readmodel.Time(at)
	return a, nil
}

// Review is an account review decision, as the platform sent it.
type Review struct {
	ShopID, BusinessAccountID, Decision string
	At                                  time.Time
}

// Reviews returns a shop's account review decisions, oldest first (the
// last one is the account's current review state).
func (q *Queries) Reviews(ctx context.Context, shop string) ([]Review, error) {
	return readmodel.List(ctx, q.db, "reviews", scanReview, `SELECT shop_id, business_account_id, decision, at
		FROM account_reviews WHERE shop_id = ? ORDER BY position`, shop)
}

func scanReview(s readmodel.Scanner) (Review, error) {
	var r Review
	var at int64
	if err := s.Scan(&r.ShopID, &r.BusinessAccountID, &r.Decision, &at); err != nil {
		return Review{}, err
	}
	r.At = readmodel.Time(at)
	return r, nil
}
