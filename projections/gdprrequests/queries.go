package gdprrequests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the GDPR requests read model.
type Queries struct{ db *sql.DB }

// NewQueries returns the queries of the read model in db.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Request is the record of one GDPR request.
type Request struct {
	ID, ShopID, Kind, CustomerID string
	// PlatformRequestID is the commerce platform's id of the request.
	PlatformRequestID string
	// EventID, EventStream and EventRevision locate the request's event.
	EventID, EventStream string
	EventRevision        uint64
	Status               string
	Attempts             int
	// LastReason is why the last failed attempt failed ("" when none).
	LastReason string
	// Channel is the channel of the last attempt (webhook or email).
	Channel           string
	ReceivedAt, DueAt time.Time
	NextAttemptAt     time.Time // zero once completed
	CompletedAt       time.Time // zero until completed
	Bytes             int
	SHA256            string
	// Pos is the log position of the request's event.
	Pos int64
}

// Settings is where a shop's data exports go.
type Settings struct {
	ShopID         string
	DataRequestURL string
	// SigningSecret signs the exports posted to DataRequestURL. A secret.
	SigningSecret string
	// ContactEmail is the settings' contact e-mail, or the shop's own
	// when the settings name none.
	ContactEmail string
}

// Key is a place in a shop's list of requests: the log position of the
// request's event and its id.
type Key struct {
	Pos int64  `json:"pos"`
	ID  string `json:"id"`
}

// Page selects a page of a list: after After (nil for the first page),
// newest first when Desc, at most Limit rows.
type Page struct {
	Desc  bool
	After *Key
	Limit int
}

const requestColumns = `request_id, shop_id, kind, customer_id, platform_request_id, event_id, event_stream, event_revision,
status, attempts, last_reason, channel, received_at, due_at, next_attempt_at, completed_at, bytes, sha256, position`

func scanRequest(s readmodel.Scanner) (Request, error) {
	var r Request
	var rev, received, due, next, completed int64
	if err := s.Scan(&r.ID, &r.ShopID, &r.Kind, &r.CustomerID, &r.PlatformRequestID, &r.EventID, &r.EventStream, &rev,
		&r.Status, &r.Attempts, &r.LastReason, &r.Channel, &received, &due, &next, &completed, &r.Bytes, &r.SHA256, &r.Pos); err != nil {
		return Request{}, err
	}
	r.EventRevision = uint64(rev)
	r.ReceivedAt, r.DueAt = readmodel.Time(received), readmodel.Time(due)
	if next != 0 {
		r.NextAttemptAt = readmodel.Time(next)
	}
	if completed != 0 {
		r.CompletedAt = readmodel.Time(completed)
	}
	return r, nil
}

// Request returns a shop's request (not found for another shop's).
func (q *Queries) Request(ctx context.Context, shop, id string) (*Request, error) {
	r, err := scanRequest(q.db.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM gdpr_requests WHERE shop_id = ? AND request_id = ?`, shop, id))
	if err := readmodel.FindError(err, "gdpr request"); err != nil {
		return nil, err
	}
	return &r, nil
}

// Requests returns a page of a shop's requests in the order received and
// the key to continue from when more follow.
func (q *Queries) Requests(ctx context.Context, shop string, p Page) ([]Request, *Key, error) {
	dir, cmp := "ASC", ">"
	if p.Desc {
		dir, cmp = "DESC", "<"
	}
	query := `SELECT ` + requestColumns + ` FROM gdpr_requests WHERE shop_id = ?`
	args := []any{shop}
	if p.After != nil {
		query += fmt.Sprintf(" AND (position, request_id) %s (?, ?)", cmp)
		args = append(args, p.After.Pos, p.After.ID)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	query += fmt.Sprintf(" ORDER BY position %s, request_id %s LIMIT ?", dir, dir)
	args = append(args, limit+1)
	rows, err := readmodel.List(ctx, q.db, "gdpr requests", scanRequest, query, args...)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) <= limit {
		return rows, nil, nil
	}
	rows = rows[:limit]
	last := rows[limit-1]
	return rows, &Key{Pos: last.Pos, ID: last.ID}, nil
}

// Due returns up to limit open data requests whose next attempt is at or
// before now, the most overdue first (the exporter's work).
func (q *Queries) Due(ctx context.Context, now time.Time, limit int) ([]Request, error) {
	return readmodel.List(ctx, q.db, "due gdpr requests", scanRequest, `SELECT `+requestColumns+` FROM gdpr_requests
	WHERE kind = ? AND status IN ('pending', 'retrying') AND next_attempt_at <= ? ORDER BY next_attempt_at, position LIMIT ?`,
		domain.GDPRKindDataRequest, now.UnixMicro(), limit)
}

// Settings returns where the shop's exports go (zero settings, no error,
// for a shop the read model does not know).
func (q *Queries) Settings(ctx context.Context, shop string) (Settings, error) {
	s := Settings{ShopID: shop}
	var shopEmail string
	err := q.db.QueryRowContext(ctx, `SELECT shop_contact_email, contact_email, data_request_url, signing_secret FROM gdpr_settings
	WHERE shop_id = ?`, shop).Scan(&shopEmail, &s.ContactEmail, &s.DataRequestURL, &s.SigningSecret)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("gdpr settings of %s: %w", shop, err)
	}
	if s.ContactEmail == "" {
		s.ContactEmail = shopEmail
	}
	return s, nil
}
