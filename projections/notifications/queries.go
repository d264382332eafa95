package notifications

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the notifications read model.
type Queries struct{ db *sql.DB }

// NewQueries returns the queries of the read model in db.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Notification is one in-app notification.
type Notification struct {
	ID, ShopID, AnomalyID, Severity, Kind, Title, Summary string
	Resources                                             []domain.AnomalyResource
	CreatedAt                                             time.Time
	ReadAt, ResolvedAt                                    time.Time // zero when not
	Pos                                                   int64
}

// Key is a place in a shop's list: the log position and the id.
type Key struct {
	Pos int64  `json:"pos"`
	ID  string `json:"id"`
}

// Filter selects a shop's notifications, newest first.
type Filter struct {
	ShopID, Severity, Kind string
	// Unread: "true" only unread, "false" only read, "" all.
	Unread string
	After  *Key
	Limit  int
}

const columns = `notification_id, shop_id, anomaly_id, severity, kind, title, summary, resources, created_at, read_at, resolved_at, position`

func scan(s readmodel.Scanner) (Notification, error) {
	var n Notification
	var res string
	var created int64
	var read, resolved sql.NullInt64
	if err := s.Scan(&n.ID, &n.ShopID, &n.AnomalyID, &n.Severity, &n.Kind, &n.Title, &n.Summary, &res, &created, &read, &resolved,
		&n.Pos); err != nil {
		return Notification{}, err
	}
	if err := json.Unmarshal([]byte(res), &n.Resources); err != nil {
		return Notification{}, fmt.Errorf("notification %s resources: %w", n.ID, err)
	}
	n.CreatedAt, n.ReadAt, n.ResolvedAt = readmodel.Time(created), readmodel.NullTime(read), readmodel.NullTime(resolved)
	return n, nil
}

// List lists a shop's notifications, newest first.
func (q *Queries) List(ctx context.Context, f Filter) ([]Notification, *Key, error) {
	conds, args := []string{"shop_id = ?"}, []any{f.ShopID}
	if f.Severity != "" {
		conds, args = append(conds, "severity = ?"), append(args, f.Severity)
	}
	if f.Kind != "" {
		conds, args = append(conds, "kind = ?"), append(args, f.Kind)
	}
	switch f.Unread {
	case "true":
		conds = append(conds, "read_at IS NULL")
	case "false":
		conds = append(conds, "read_at IS NOT NULL")
	}
	if f.After != nil {
		conds, args = append(conds, "(position, notification_id) < (?, ?)"), append(args, f.After.Pos, f.After.ID)
	}
	args = append(args, f.Limit+1)
	rows, err := readmodel.List(ctx, q.db, "notifications", scan, `SELECT `+columns+` FROM notifications WHERE `+strings.Join(conds, " AND ")+
		` ORDER BY position DESC, notification_id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, nil, err
	}
	return readmodel.CutPage(rows, f.Limit, func(n *Notification) Key { return Key{Pos: n.Pos, ID: n.ID} })
}

// Get returns one of a shop's notifications (404 for another shop's).
func (q *Queries) Get(ctx context.Context, shop, id string) (*Notification, error) {
	n, err := scan(q.db.QueryRowContext(ctx, `SELECT `+columns+` FROM notifications WHERE notification_id = ? AND shop_id = ?`, id, shop))
	if err := readmodel.FindError(err, "notification"); err != nil {
		return nil, err
	}
	return &n, nil
}

// Unread counts a shop's unread notifications.
func (q *Queries) Unread(ctx context.Context, shop string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM notifications WHERE shop_id = ? AND read_at IS NULL`, shop).Scan(&n); err != nil {
		return 0, fmt.Errorf("unread notifications: %w", err)
	}
	return n, nil
}

// Settings returns a shop's notification settings (the defaults until it
// configures them) and its contact e-mail.
func (q *Queries) Settings(ctx context.Context, shop string) (domain.NotificationSettings, string, error) {
	var raw, contact string
	err := q.db.QueryRowContext(ctx, `SELECT settings, contact_email FROM notification_settings WHERE shop_id = ?`, shop).Scan(&raw, &contact)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && raw == "") {
		return domain.DefaultNotificationSettings(), contact, nil
	}
	if err != nil {
		return domain.NotificationSettings{}, "", fmt.Errorf("notification settings: %w", err)
	}
	var s domain.NotificationSettings
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return domain.NotificationSettings{}, "", fmt.Errorf("notification settings: %w", err)
	}
	return s, contact, nil
}
