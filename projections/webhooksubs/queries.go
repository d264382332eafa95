package webhooksubs

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the webhook subscriptions read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Subscription is a row of the read model. Times are zero when unset.
type Subscription struct {
	ID, ShopID, URL, Description string
	EventTypes                   []string
	Enabled                      bool
	// DisabledReason (domain.WebhookDisabled…) and DisabledAt are set
	// while the subscription is disabled.
	DisabledReason string
	DisabledAt     time.Time
	// FailingSince, FailingLevel and DisableAt are the last failing
	// warning's, until a change or an enabling clears them.
	FailingSince time.Time
	FailingLevel int
	DisableAt    time.Time
	// SecretRotatedAt is the last rotation; PreviousSecretValidUntil is
	// when the secret before it stops signing (zero: at the rotation).
	SecretRotatedAt          time.Time
	PreviousSecretValidUntil time.Time
	CreatedAt, UpdatedAt     time.Time
}

// FromCreated is the row a WebhookSubscriptionCreated makes, for answering
// a create before the read model caught up.
func FromCreated(ev *domain.WebhookSubscriptionCreated) *Subscription {
	return &Subscription{ID: ev.SubscriptionID, ShopID: ev.ShopID, URL: ev.URL, EventTypes: ev.EventTypes, Description: ev.Description,
		Enabled: true, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt}
}

// Key is a position in the list: the log position of the subscription's
// creation and its id.
type Key struct {
	P  int64  `json:"p"`
	ID string `json:"id"`
}

// ListQuery selects a page of a shop's subscriptions in log order.
type ListQuery struct {
	Shop  string
	Desc  bool
	After *Key
	Limit int
}

const columns = `subscription_id, shop_id, url, event_types, description, enabled, disabled_reason, disabled_at, failing_since,
	failing_level, disable_at, secret_rotated_at, previous_secret_valid_until, created_at, updated_at, position`

// Subscriptions returns a page of a shop's subscriptions and the key to
// continue from when more follow.
func (q *Queries) Subscriptions(ctx context.Context, lq ListQuery) ([]Subscription, *Key, error) {
	dir, cmp := "ASC", ">"
	if lq.Desc {
		dir, cmp = "DESC", "<"
	}
	where, args := "shop_id = ?", []any{lq.Shop}
	if lq.After != nil {
		where += fmt.Sprintf(" AND (position, subscription_id) %s (?, ?)", cmp)
		args = append(args, lq.After.P, lq.After.ID)
	}
	rows, err := readmodel.List(ctx, q.db, "webhook subscriptions", scanKeyed, fmt.Sprintf(`SELECT `+columns+`
FROM webhook_subscriptions WHERE %s ORDER BY position %s, subscription_id %s LIMIT ?`, where, dir, dir), append(args, lq.Limit+1)...)
	if err != nil {
		return nil, nil, err
	}
	var next *Key
	if len(rows) > lq.Limit {
		rows = rows[:lq.Limit]
		next = &rows[lq.Limit-1].key
	}
	out := make([]Subscription, len(rows))
	for i := range rows {
		out[i] = rows[i].sub
	}
	return out, next, nil
}

// Subscription returns one subscription of a shop; another shop's is not
// found.
func (q *Queries) Subscription(ctx context.Context, shop, id string) (*Subscription, error) {
	k, err := scanKeyed(q.db.QueryRowContext(ctx, `SELECT `+columns+` FROM webhook_subscriptions WHERE shop_id = ? AND subscription_id = ?`, shop, id))
	if err := readmodel.FindError(err, "webhook subscription"); err != nil {
		return nil, err
	}
	return &k.sub, nil
}

// Built reports whether the read model exists in this store (false when
// no server of this version ran on it yet).
func (q *Queries) Built(ctx context.Context) (bool, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'webhook_subscriptions'`).Scan(&n); err != nil {
		return false, fmt.Errorf("webhook subscriptions: %w", err)
	}
	return n > 0, nil
}

type keyed struct {
	sub Subscription
	key Key
}

func scanKeyed(s readmodel.Scanner) (keyed, error) {
	var w Subscription
	var types string
	var disabled, since, disableAt, rotated, prevUntil, created, updated, pos int64
	if err := s.Scan(&w.ID, &w.ShopID, &w.URL, &types, &w.Description, &w.Enabled, &w.DisabledReason, &disabled, &since,
		&w.FailingLevel, &disableAt, &rotated, &prevUntil, &created, &updated, &pos); err != nil {
		return keyed{}, err
	}
	if err := json.Unmarshal([]byte(types), &w.EventTypes); err != nil {
		return keyed{}, fmt.Errorf("webhook subscription %s event types: %w", w.ID, err)
	}
	w.DisabledAt, w.FailingSince, w.DisableAt = readmodel.Time(disabled), readmodel.Time(since), readmodel.Time(disableAt)
	w.SecretRotatedAt, w.PreviousSecretValidUntil = readmodel.Time(rotated), readmodel.Time(prevUntil)
	w.CreatedAt, w.UpdatedAt = readmodel.Time(created), readmodel.Time(updated)
	return keyed{sub: w, key: Key{P: pos, ID: w.ID}}, nil
}
