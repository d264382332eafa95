package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// Queries read the delivery store.
type Queries struct{ db *sql.DB }

// NewQueries returns the queries of a delivery store's database (the CLI
// opens the file itself).
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Delivery is one outbound event's delivery to one subscription.
type Delivery struct {
	ID             string
	SubscriptionID string
	EventID        string
	EventType      string
	Position       int64
	CreatedAt      time.Time
	State          string
	Attempts       int
	NextAttemptAt  time.Time // zero unless pending
	LastAttemptAt  time.Time
	LastStatus     int
	LastReason     string
	SucceededAt    time.Time
	// Log is the delivery's attempts, the latest first (at most
	// MaxAttemptsShown).
	Log []Attempt
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	N             int
	At            time.Time
	Status        int // 0: no answer
	Reason        string
	LatencyMS     int64
	ResponseBody  string // the first 4 KiB of the answer
	NextAttemptAt time.Time
}

// MaxAttemptsShown is how many attempts of a delivery a read returns.
const MaxAttemptsShown = 20

// Key is a position in the delivery list (the log position of the event,
// then the delivery id).
type Key struct {
	Position int64  `json:"p"`
	ID       string `json:"i"`
}

// ListQuery selects a subscription's deliveries.
type ListQuery struct {
	Shop, Subscription string
	State              string // "" for all
	// Desc lists the latest events first.
	Desc  bool
	After *Key
	Limit int
}

// HasSubscription reports whether the delivery side knows subscription id
// of shop.
func (q *Queries) HasSubscription(ctx context.Context, shop, id string) (bool, error) {
	var n int
	err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM wh_subscriptions WHERE id = ? AND shop_id = ?`, id, shop).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("webhook subscription %s: %w", id, err)
	}
	return n > 0, nil
}

const deliveryColumns = `id, subscription_id, event_id, event_type, position, created_at, state, attempts, next_attempt_at,
last_attempt_at, last_status, last_reason, succeeded_at`

// Deliveries lists a subscription's deliveries after a key, with their
// attempts; next is the key of the following page (nil when none).
func (q *Queries) Deliveries(ctx context.Context, lq ListQuery) (rows []Delivery, next *Key, err error) {
	where := []string{"subscription_id = ?", "shop_id = ?"}
	args := []any{lq.Subscription, lq.Shop}
	if lq.State != "" {
		where = append(where, "state = ?")
		args = append(args, lq.State)
	}
	order := "position, id"
	cmp := ">"
	if lq.Desc {
		order, cmp = "position DESC, id DESC", "<"
	}
	if lq.After != nil {
		where = append(where, "(position, id) "+cmp+" (?, ?)")
		args = append(args, lq.After.Position, lq.After.ID)
	}
	args = append(args, lq.Limit+1)
	r, err := q.db.QueryContext(ctx, `SELECT `+deliveryColumns+` FROM wh_deliveries WHERE `+strings.Join(where, " AND ")+
		` ORDER BY `+order+` LIMIT ?`, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	defer r.Close()
	for r.Next() {
		d, err := scanDelivery(r)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, d)
	}
	if err := r.Err(); err != nil {
		return nil, nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	if len(rows) > lq.Limit {
		rows = rows[:lq.Limit]
		last := rows[len(rows)-1]
		next = &Key{Position: last.Position, ID: last.ID}
	}
	for i := range rows {
		if rows[i].Log, err = q.attempts(ctx, rows[i].ID); err != nil {
			return nil, nil, err
		}
	}
	return rows, next, nil
}

// Delivery reads one delivery of a subscription of shop.
func (q *Queries) Delivery(ctx context.Context, shop, subscription, id string) (*Delivery, error) {
	r := q.db.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM wh_deliveries WHERE id = ? AND subscription_id = ? AND shop_id = ?`,
		id, subscription, shop)
	d, err := scanDelivery(r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("webhook delivery")
	}
	if err != nil {
		return nil, err
	}
	if d.Log, err = q.attempts(ctx, d.ID); err != nil {
		return nil, err
	}
	return &d, nil
}

// DeliveryOfEvent reads the delivery of outbound event eventID to a
// subscription (nil when there is none yet).
func (q *Queries) DeliveryOfEvent(ctx context.Context, shop, subscription, eventID string) (*Delivery, error) {
	d, err := q.Delivery(ctx, shop, subscription, domain.WebhookDeliveryID(subscription, eventID))
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return nil, nil
	}
	return d, err
}

// Pending counts a subscription's pending deliveries of events recorded
// since a time.
func (q *Queries) Pending(ctx context.Context, subscription string, since time.Time) (int, error) {
	var n int
	err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM wh_deliveries WHERE subscription_id = ? AND state = 'pending' AND created_at >= ?`,
		subscription, since.UnixMilli()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pending webhook deliveries: %w", err)
	}
	return n, nil
}

func (q *Queries) attempts(ctx context.Context, id string) ([]Attempt, error) {
	r, err := q.db.QueryContext(ctx, `SELECT n, at, status, reason, latency_ms, response_body, next_attempt_at FROM wh_attempts
	WHERE delivery_id = ? ORDER BY n DESC LIMIT ?`, id, MaxAttemptsShown)
	if err != nil {
		return nil, fmt.Errorf("attempts of %s: %w", id, err)
	}
	defer r.Close()
	out := []Attempt{}
	for r.Next() {
		var a Attempt
		var at, next int64
		if err := r.Scan(&a.N, &at, &a.Status, &a.Reason, &a.LatencyMS, &a.ResponseBody, &next); err != nil {
			return nil, fmt.Errorf("attempts of %s: %w", id, err)
		}
		a.At, a.NextAttemptAt = millis(at), millis(next)
		out = append(out, a)
	}
	return out, r.Err()
}

type scanner interface{ Scan(dest ...any) error }

func scanDelivery(r scanner) (Delivery, error) {
	var d Delivery
	var created, next, last, succeeded int64
	if err := r.Scan(&d.ID, &d.SubscriptionID, &d.EventID, &d.EventType, &d.Position, &created, &d.State, &d.Attempts, &next, &last,
		&d.LastStatus, &d.LastReason, &succeeded); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return d, err
		}
		return d, fmt.Errorf("webhook delivery: %w", err)
	}
	d.CreatedAt, d.LastAttemptAt, d.SucceededAt = millis(created), millis(last), millis(succeeded)
	if d.State == StatePending {
		d.NextAttemptAt = millis(next)
	}
	return d, nil
}

// millis is a stored time (Unix milliseconds, 0 for none).
func millis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
