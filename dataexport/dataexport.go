package dataexport

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// FormatVersion is the version of the export document.
const FormatVersion = 1

// readPage is how many events of one stream are read at a time.
const readPage = 500

// Source reads what the service holds: the event log, the codec that opens
// its payloads and the read models' database.
type Source struct {
	Log   eventlog.Log
	Codec *envelope.Codec
	DB    *sql.DB
}

// Subject is who an export is about and for which request.
type Subject struct {
	ShopID     string
	CustomerID string // cus_…; "" when the request named no customer id
	// RequestID is the GDPR request record's id (gdr_…) and
	// PlatformRequestID the commerce platform's id of the request.
	RequestID, PlatformRequestID string
	// Phone is the phone number the request named (personal data): the
	// messages of that number belong to the subject too.
	Phone string
	// Orders are the orders the request listed (ord_…).
	Orders []string
}

// Export is the document sent to the merchant.
type Export struct {
	FormatVersion     int       `json:"format_version"`
	GeneratedAt       time.Time `json:"generated_at"`
	ShopID            string    `json:"shop_id"`
	CustomerID        string    `json:"customer_id"`
	RequestID         string    `json:"request_id"`
	PlatformRequestID string    `json:"platform_request_id,omitempty"`
	// CustomerKnown is false when the service holds no profile of the
	// customer; the other sections may still hold what was found.
	CustomerKnown bool          `json:"customer_known"`
	Profile       *Profile      `json:"profile"`
	OptIns        []OptIn       `json:"opt_ins"`
	Events        []Event       `json:"events"`
	Messages      []Message     `json:"messages"`
	Attributions  Attributions  `json:"attributions"`
	Sections      SectionCounts `json:"counts"`
}

// SectionCounts sums up the export.
type SectionCounts struct {
	Events       int `json:"events"`
	Messages     int `json:"messages"`
	Touchpoints  int `json:"touchpoints"`
	Credits      int `json:"credits"`
	Orders       int `json:"orders"`
	Checkouts    int `json:"checkouts"`
	Enrollments  int `json:"enrollments"`
	VisitorLinks int `json:"visitor_links"`
}

// Profile is the customer's row of the customers read model.
type Profile struct {
	CustomerID        string     `json:"customer_id"`
	ExternalID        string     `json:"external_id"`
	Email             *string    `json:"email"`
	FirstName         *string    `json:"first_name"`
	LastName          *string    `json:"last_name"`
	Phone             *string    `json:"phone"`
	State             string     `json:"state"`
	Currency          string     `json:"currency"`
	OrdersCount       int        `json:"orders_count"`
	TotalSpent        string     `json:"total_spent"`
	LastOrderAt       *time.Time `json:"last_order_at"`
	Tags              []string   `json:"tags"`
	PlatformTags      []string   `json:"platform_tags"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	Redacted          bool       `json:"redacted"`
	AcceptsMarketing  bool       `json:"accepts_marketing"`
	PlatformCreatedAt *time.Time `json:"platform_created_at"`
}

// OptIn is one marketing consent the service records.
type OptIn struct {
	Channel   string    `json:"channel"` // email
	Consented bool      `json:"consented"`
	Source    string    `json:"source"` // where it was recorded
	AsOf      time.Time `json:"as_of"`  // the last change seen
}

// Event is one recorded event about the customer, decoded.
type Event struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Stream     string          `json:"stream"`
	Revision   uint64          `json:"revision"`
	Position   uint64          `json:"position"`
	OccurredAt time.Time       `json:"occurred_at"`
	RecordedAt time.Time       `json:"recorded_at"`
	Data       json.RawMessage `json:"data"`
	// Redacted names the personal fields whose key was erased.
	Redacted []string `json:"redacted,omitempty"`
}

// Message is a message to or from the customer.
type Message struct {
	MessageID   string     `json:"message_id"`
	Direction   string     `json:"direction"` // inbound or outbound
	CustomerID  string     `json:"customer_id"`
	Source      string     `json:"source,omitempty"`
	Type        string     `json:"type,omitempty"`
	From        *string    `json:"from,omitempty"`
	ProfileName *string    `json:"profile_name,omitempty"`
	Text        *string    `json:"text,omitempty"`
	Status      string     `json:"status,omitempty"`
	At          time.Time  `json:"at"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	OpenedAt    *time.Time `json:"opened_at,omitempty"`
	FailedAt    *time.Time `json:"failed_at,omitempty"`
	ErrorCode   string     `json:"error_code,omitempty"`
}

// Attributions are the customer's touchpoints and its orders' credits.
type Attributions struct {
	Touchpoints []Touchpoint `json:"touchpoints"`
	Credits     []Credit     `json:"credits"`
}

// Touchpoint is a marketing touch of the customer.
type Touchpoint struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	OccurredAt   time.Time `json:"occurred_at"`
	Channel      string    `json:"channel"`
	Source       string    `json:"source"`
	Campaign     string    `json:"campaign"`
	LandingPath  string    `json:"landing_path"`
	ReferrerHost string    `json:"referrer_host"`
	UTMSource    string    `json:"utm_source"`
	UTMMedium    string    `json:"utm_medium"`
	UTMCampaign  string    `json:"utm_campaign"`
	UTMTerm      string    `json:"utm_term"`
	UTMContent   string    `json:"utm_content"`
	ClickIDKind  string    `json:"click_id_kind"`
}

// Credit is the share of an order's revenue a model gave a touchpoint.
type Credit struct {
	OrderID      string  `json:"order_id"`
	Model        string  `json:"model"`
	Position     int     `json:"position"`
	TouchpointID string  `json:"touchpoint_id"`
	Channel      string  `json:"channel"`
	Source       string  `json:"source"`
	Campaign     string  `json:"campaign"`
	Weight       float64 `json:"weight"`
	Revenue      string  `json:"revenue"`
	Refunded     string  `json:"refunded"`
}

// JSON encodes the export (deterministic: fixed field order, sorted
// sections).
func (e *Export) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode export: %w", err)
	}
	return b, nil
}

// Build collects everything held on s's customer at now.
func (src *Source) Build(ctx context.Context, s Subject, now time.Time) (*Export, error) {
	x := &Export{FormatVersion: FormatVersion, GeneratedAt: now.UTC(), ShopID: s.ShopID, CustomerID: s.CustomerID,
		RequestID: s.RequestID, PlatformRequestID: s.PlatformRequestID,
		OptIns: []OptIn{}, Events: []Event{}, Messages: []Message{},
		Attributions: Attributions{Touchpoints: []Touchpoint{}, Credits: []Credit{}}}
	customers := []string{}
	if s.CustomerID != "" {
		customers = append(customers, s.CustomerID)
	}
	if s.CustomerID != "" {
		p, err := src.profile(ctx, s.ShopID, s.CustomerID)
		if err != nil {
			return nil, err
		}
		if p != nil {
			x.CustomerKnown, x.Profile = true, p
			x.OptIns = append(x.OptIns, OptIn{Channel: "email", Consented: p.AcceptsMarketing, Source: "commerce_platform", AsOf: p.UpdatedAt})
			if p.Phone != nil {
				if id := phoneCustomer(s.ShopID, *p.Phone); id != "" && !slices.Contains(customers, id) {
					customers = append(customers, id)
				}
			}
		}
	}
	if id := phoneCustomer(s.ShopID, s.Phone); id != "" && !slices.Contains(customers, id) {
		customers = append(customers, id)
	}

	var streams []string
	for _, c := range customers {
		streams = append(streams, domain.CustomerStream(c))
	}
	orders, err := src.ids(ctx, `SELECT order_id FROM orders WHERE shop_id = ? AND customer_id = ? AND customer_id <> ''`, s.ShopID, s.CustomerID)
	if err != nil {
		return nil, err
	}
	more, err := src.ids(ctx, `SELECT order_id FROM customer_orders WHERE customer_id = ? AND shop_id = ? AND customer_id <> ''`, s.CustomerID, s.ShopID)
	if err != nil {
		return nil, err
	}
	orders = union(orders, more, s.Orders)
	x.Sections.Orders = len(orders)
	for _, o := range orders {
		streams = append(streams, domain.OrderStream(o))
	}
	checkouts, err := src.ids(ctx, `SELECT checkout_id FROM checkouts WHERE shop_id = ? AND customer_id = ? AND customer_id <> ''`, s.ShopID, s.CustomerID)
	if err != nil {
		return nil, err
	}
	x.Sections.Checkouts = len(checkouts)
	for _, c := range checkouts {
		streams = append(streams, domain.CheckoutStream(c))
	}
	// A customer's enrollment streams are named by journey and customer:
	// the shop's few journeys find them without a scan of its enrollments.
	journeyIDs, err := src.ids(ctx, `SELECT journey_id FROM journeys WHERE shop_id = ?`, s.ShopID)
	if err != nil {
		return nil, err
	}
	enrollments := map[string]bool{}
	for _, j := range journeyIDs {
		for _, c := range customers {
			enrollments[domain.EnrollmentStream(j, c)] = true
			streams = append(streams, domain.EnrollmentStream(j, c))
		}
	}
	if x.Messages, err = src.messages(ctx, s.ShopID, customers); err != nil {
		return nil, err
	}
	for _, m := range x.Messages {
		streams = append(streams, domain.MessageStream(s.ShopID, m.MessageID))
	}
	visitors, err := src.ids(ctx, `SELECT anonymous_id FROM identity_links WHERE shop_id = ? AND customer_id = ? AND customer_id <> ''`, s.ShopID, s.CustomerID)
	if err != nil {
		return nil, err
	}
	x.Sections.VisitorLinks = len(visitors)
	for _, v := range visitors {
		streams = append(streams, domain.VisitorStream(s.ShopID, v))
	}
	if x.Attributions, err = src.attributions(ctx, s.ShopID, s.CustomerID, orders); err != nil {
		return nil, err
	}
	if x.Events, err = src.events(ctx, s.ShopID, streams); err != nil {
		return nil, err
	}
	enrolled := map[string]bool{}
	for _, e := range x.Events {
		if enrollments[e.Stream] {
			enrolled[e.Stream] = true
		}
	}
	x.Sections.Enrollments = len(enrolled)
	x.Sections.Events, x.Sections.Messages = len(x.Events), len(x.Messages)
	x.Sections.Touchpoints, x.Sections.Credits = len(x.Attributions.Touchpoints), len(x.Attributions.Credits)
	return x, nil
}

// phoneCustomer is the messaging customer id of a phone number ("" for
// none).
func phoneCustomer(shop, phone string) string {
	if d := domain.PhoneDigits(phone); d != "" {
		return domain.CustomerIDFromPhone(shop, d)
	}
	return ""
}

func (src *Source) profile(ctx context.Context, shop, id string) (*Profile, error) {
	var p Profile
	var spent, lastOrder, platformCreated, created, updated int64
	var tags, platformTags string
	var email, first, last, phone sql.NullString
	err := src.DB.QueryRowContext(ctx, `SELECT customer_id, external_id, email, first_name, last_name, phone, accepts_marketing,
	state, currency, orders_count, total_spent, last_order_at, tags, platform_tags, platform_created_at, created_at, updated_at, redacted
	FROM customers WHERE shop_id = ? AND customer_id = ?`, shop, id).Scan(&p.CustomerID, &p.ExternalID, &email, &first, &last, &phone,
		&p.AcceptsMarketing, &p.State, &p.Currency, &p.OrdersCount, &spent, &lastOrder, &tags, &platformTags, &platformCreated,
		&created, &updated, &p.Redacted)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("export profile: %w", err)
	}
	p.Email, p.FirstName, p.LastName, p.Phone = nullable(email), nullable(first), nullable(last), nullable(phone)
	p.TotalSpent = domain.Amount(spent).String()
	p.LastOrderAt, p.PlatformCreatedAt = optionalTime(lastOrder), optionalTime(platformCreated)
	p.CreatedAt, p.UpdatedAt = micros(created), micros(updated)
	p.Tags, p.PlatformTags = jsonList(tags), jsonList(platformTags)
	return &p, nil
}

func (src *Source) messages(ctx context.Context, shop string, customers []string) ([]Message, error) {
	out := []Message{}
	if len(customers) == 0 {
		return out, nil
	}
	args := append([]any{shop}, anys(customers)...)
	rows, err := src.DB.QueryContext(ctx, `SELECT message_id, customer_id, source, last_status, delivered_at, opened_at, failed_at,
	error_code, updated_at FROM message_log WHERE shop_id = ? AND customer_id IN (`+marks(len(customers))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("export messages: %w", err)
	}
	for rows.Next() {
		m := Message{Direction: "outbound"}
		var delivered, opened, failed sql.NullInt64
		var at int64
		if err := rows.Scan(&m.MessageID, &m.CustomerID, &m.Source, &m.Status, &delivered, &opened, &failed, &m.ErrorCode, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("export messages: %w", err)
		}
		m.At, m.DeliveredAt, m.OpenedAt, m.FailedAt = micros(at), nullTime(delivered), nullTime(opened), nullTime(failed)
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export messages: %w", err)
	}
	rows, err = src.DB.QueryContext(ctx, `SELECT message_id, customer_id, type, from_phone, profile_name, text, sent_at
	FROM inbound_messages WHERE shop_id = ? AND customer_id IN (`+marks(len(customers))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("export inbound messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m := Message{Direction: "inbound", Source: "whatsapp"}
		var from, name, text sql.NullString
		var at int64
		if err := rows.Scan(&m.MessageID, &m.CustomerID, &m.Type, &from, &name, &text, &at); err != nil {
			return nil, fmt.Errorf("export inbound messages: %w", err)
		}
		m.From, m.ProfileName, m.Text, m.At = nullable(from), nullable(name), nullable(text), micros(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export inbound messages: %w", err)
	}
	slices.SortFunc(out, func(a, b Message) int {
		return cmp.Or(a.At.Compare(b.At), strings.Compare(a.MessageID, b.MessageID), strings.Compare(a.Direction, b.Direction))
	})
	return out, nil
}

const touchpointColumns = `touchpoint_id, kind, occurred_at, channel, source, campaign, landing_path, referrer_host,
utm_source, utm_medium, utm_campaign, utm_term, utm_content, click_id_kind`

func (src *Source) attributions(ctx context.Context, shop, customer string, orders []string) (Attributions, error) {
	a := Attributions{Touchpoints: []Touchpoint{}, Credits: []Credit{}}
	query := `SELECT ` + touchpointColumns + ` FROM touchpoints WHERE shop_id = ? AND customer_id = ? AND customer_id <> ''`
	args := []any{shop, customer}
	if len(orders) > 0 {
		query += ` UNION SELECT ` + touchpointColumns + ` FROM touchpoints WHERE shop_id = ? AND touchpoint_id IN
		(SELECT touchpoint_id FROM attribution_credits WHERE shop_id = ? AND order_id IN (` + marks(len(orders)) + `))`
		args = append(append(args, shop, shop), anys(orders)...)
	}
	rows, err := src.DB.QueryContext(ctx, query+` ORDER BY occurred_at, touchpoint_id`, args...)
	if err != nil {
		return a, fmt.Errorf("export touchpoints: %w", err)
	}
	for rows.Next() {
		var t Touchpoint
		var at int64
		if err := rows.Scan(&t.ID, &t.Kind, &at, &t.Channel, &t.Source, &t.Campaign, &t.LandingPath, &t.ReferrerHost,
			&t.UTMSource, &t.UTMMedium, &t.UTMCampaign, &t.UTMTerm, &t.UTMContent, &t.ClickIDKind); err != nil {
			rows.Close()
			return a, fmt.Errorf("export touchpoints: %w", err)
		}
		t.OccurredAt = micros(at)
		a.Touchpoints = append(a.Touchpoints, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return a, fmt.Errorf("export touchpoints: %w", err)
	}
	if len(orders) == 0 {
		return a, nil
	}
	rows, err = src.DB.QueryContext(ctx, `SELECT order_id, model, position, touchpoint_id, channel, source, campaign, weight, revenue, refunded
	FROM attribution_credits WHERE shop_id = ? AND order_id IN (`+marks(len(orders))+`) ORDER BY order_id, model, position`,
		append([]any{shop}, anys(orders)...)...)
	if err != nil {
		return a, fmt.Errorf("export credits: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Credit
		var rev, ref int64
		if err := rows.Scan(&c.OrderID, &c.Model, &c.Position, &c.TouchpointID, &c.Channel, &c.Source, &c.Campaign, &c.Weight, &rev, &ref); err != nil {
			return a, fmt.Errorf("export credits: %w", err)
		}
		c.Revenue, c.Refunded = domain.Amount(rev).String(), domain.Amount(ref).String()
		a.Credits = append(a.Credits, c)
	}
	if err := rows.Err(); err != nil {
		return a, fmt.Errorf("export credits: %w", err)
	}
	return a, nil
}

// events reads and decodes every event of streams that belongs to shop,
// in log order, each once.
func (src *Source) events(ctx context.Context, shop string, streams []string) ([]Event, error) {
	out := []Event{}
	seen := map[string]bool{}
	for _, stream := range streams {
		if seen[stream] {
			continue
		}
		seen[stream] = true
		for from := uint64(0); ; {
			evs, err := src.Log.ReadStream(ctx, stream, from, readPage)
			if err != nil {
				return nil, fmt.Errorf("export: read %s: %w", stream, err)
			}
			for i := range evs {
				e := &evs[i]
				if e.ShopID != shop {
					continue
				}
				d, err := src.Codec.Decode(ctx, e)
				if err != nil {
					return nil, fmt.Errorf("export: decode %s@%d: %w", stream, e.Revision, err)
				}
				data, err := json.Marshal(domain.Shown(d.Event)) // secrets read "[set]"
				if err != nil {
					return nil, fmt.Errorf("export: encode %s: %w", e.Type, err)
				}
				out = append(out, Event{ID: e.ID.String(), Type: e.Type, Stream: e.StreamID, Revision: e.Revision, Position: e.Position,
					OccurredAt: e.OccurredAt.UTC(), RecordedAt: e.RecordedAt.UTC(), Data: data, Redacted: d.Redacted})
			}
			if len(evs) < readPage {
				break
			}
			from = evs[len(evs)-1].Revision + 1
		}
	}
	slices.SortFunc(out, func(a, b Event) int { return cmp.Or(cmp.Compare(a.Position, b.Position), strings.Compare(a.ID, b.ID)) })
	return slices.CompactFunc(out, func(a, b Event) bool { return a.ID == b.ID && a.Stream == b.Stream }), nil
}

// ids reads one column of ids, sorted, without empty ones; a table that
// does not exist (a projector not registered) reads as empty.
func (src *Source) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := src.DB.QueryContext(ctx, query, args...)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil
		}
		return nil, fmt.Errorf("export ids: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("export ids: %w", err)
		}
		if id != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), rows.Err()
}

func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, v := range l {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func marks(n int) string {
	if n == 0 {
		return "NULL"
	}
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func nullable(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func micros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func optionalTime(us int64) *time.Time {
	if us == 0 {
		return nil
	}
	t := micros(us)
	return &t
}

func nullTime(v sql.NullInt64) *time.Time {
	if !v.Valid || v.Int64 == 0 {
		return nil
	}
	t := micros(v.Int64)
	return &t
}

func jsonList(s string) []string {
	out := []string{}
	_ = json.Unmarshal([]byte(s), &out)
	if out == nil {
		out = []string{}
	}
	return out
}
