package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// FanoutName is the fan-out reactor's stable name (its checkpoint in the
// delivery store).
const FanoutName = "webhook_fanout"

// secretLabel is the label the subscriptions' secrets are sealed under.
const secretLabel = "webhook-subscription-secret"

// States of a delivery.
const (
	// StatePending: to be attempted at next_attempt_at.
	StatePending = "pending"
	// StateSucceeded: an attempt was answered 2xx.
	StateSucceeded = "succeeded"
	// StateFailed: every attempt of the schedule failed.
	StateFailed = "failed"
	// StateHeld: recorded while the subscription was disabled (or pending
	// when it was): delivered only by a recover or a retry.
	StateHeld = "held"
)

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE wh_subscriptions (
	id                   TEXT PRIMARY KEY,
	shop_id              TEXT NOT NULL,
	url                  TEXT NOT NULL,
	event_types          TEXT NOT NULL,
	enabled              INTEGER NOT NULL,
	secret               TEXT NOT NULL,
	previous_secret      TEXT NOT NULL DEFAULT '',
	previous_valid_until INTEGER NOT NULL DEFAULT 0,
	failing_since        INTEGER NOT NULL DEFAULT 0,
	warned_level         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX wh_subscriptions_shop ON wh_subscriptions (shop_id);
CREATE TABLE wh_payloads (
	event_id TEXT PRIMARY KEY,
	shop_id  TEXT NOT NULL,
	body     BLOB NOT NULL
);
CREATE TABLE wh_deliveries (
	id              TEXT PRIMARY KEY,
	subscription_id TEXT NOT NULL,
	shop_id         TEXT NOT NULL,
	event_id        TEXT NOT NULL,
	event_type      TEXT NOT NULL,
	position        INTEGER NOT NULL,
	created_at      INTEGER NOT NULL,
	state           TEXT NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER NOT NULL DEFAULT 0,
	last_attempt_at INTEGER NOT NULL DEFAULT 0,
	last_status     INTEGER NOT NULL DEFAULT 0,
	last_reason     TEXT NOT NULL DEFAULT '',
	succeeded_at    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX wh_deliveries_due ON wh_deliveries (subscription_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX wh_deliveries_list ON wh_deliveries (subscription_id, position, id);
CREATE INDEX wh_deliveries_created ON wh_deliveries (created_at);
CREATE INDEX wh_deliveries_event ON wh_deliveries (event_id);
CREATE TABLE wh_attempts (
	delivery_id     TEXT NOT NULL,
	n               INTEGER NOT NULL,
	at              INTEGER NOT NULL,
	status          INTEGER NOT NULL,
	reason          TEXT NOT NULL,
	latency_ms      INTEGER NOT NULL,
	response_body   TEXT NOT NULL,
	next_attempt_at INTEGER NOT NULL,
	PRIMARY KEY (delivery_id, n)
);
`}}

// subscriber is what the fan-out needs of a subscription.
type subscriber struct {
	id      string
	enabled bool
	types   []string
}

// fanout is the reactor that records, for every event of the log that
// makes an outbound event, one delivery per subscription of its shop that
// takes its type (pending, or held while the subscription is disabled),
// in the transaction that moves its checkpoint: the log is the outbox, so
// an event committed is delivered even if the process dies at once. It
// also folds the subscriptions (in log order, so an event reaches exactly
// the subscriptions that existed when it was recorded) and the merchant's
// redelivery requests.
type fanout struct {
	codec *envelope.Codec
	// subsChanged is called when a subscription event is applied (the
	// dispatcher reads them again; harmless if the transaction rolls
	// back).
	subsChanged func()
}

func subscriptionTypes() []string {
	return []string{"WebhookSubscriptionCreated", "WebhookSubscriptionUpdated", "WebhookSubscriptionDisabled",
		"WebhookSubscriptionEnabled", "WebhookSubscriptionDeleted", "WebhookSecretRotated", "WebhookSubscriptionFailing",
		"WebhookPingRequested", "WebhookRedeliveryRequested", "WebhookAttemptsRecorded", "ShopErased"}
}

// fanoutProjector returns the fan-out reactor; committed is called after
// each transaction that applied an event (it wakes the dispatcher).
func fanoutProjector(codec *envelope.Codec, committed, subsChanged func()) projections.Projector {
	f := &fanout{codec: codec, subsChanged: subsChanged}
	types := append(subscriptionTypes(), sources...)
	own := map[string]bool{}
	for _, t := range subscriptionTypes() {
		own[t] = true
	}
	apply := projections.Sealing(codec, secretLabel, f.apply)
	// An event of a shop without subscriptions makes no delivery: it is
	// not even decoded (most of a log's events, on most installs), so
	// following the log costs an indexed lookup per event.
	relevant := func(ctx context.Context, tx *sql.Tx, e *eventlog.Event) (bool, error) {
		if own[e.Type] {
			return true, nil
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM wh_subscriptions WHERE shop_id = ? LIMIT 1)`,
			e.ShopID).Scan(&n); err != nil {
			return false, fmt.Errorf("subscriptions of %s: %w", e.ShopID, err)
		}
		return n > 0, nil
	}
	batch := func(ctx context.Context, tx *sql.Tx, events []eventlog.Event) error {
		for i := range events {
			e := &events[i]
			ok, err := relevant(ctx, tx, e)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			d, err := codec.Decode(ctx, e)
			if errors.Is(err, envelope.ErrShopErased) {
				continue
			}
			if err != nil {
				return err
			}
			if err := apply(ctx, tx, e, d); err != nil {
				return err
			}
		}
		return nil
	}
	return projections.Projector{
		Name:        FanoutName,
		Migrations:  migrations,
		Types:       types,
		Handle:      projections.OneByOne(batch),
		HandleBatch: batch,
		Committed: func(eventlog.Event) {
			if committed != nil {
				committed()
			}
		},
	}
}

func (f *fanout) apply(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
	at := e.RecordedAt.UnixMilli()
	if f.subsChanged != nil && e.Type != "WebhookAttemptsRecorded" && (strings.HasPrefix(e.Type, "Webhook") || e.Type == "ShopErased") {
		f.subsChanged()
	}
	switch ev := d.Event.(type) {
	case *domain.WebhookSubscriptionCreated:
		types, _ := json.Marshal(ev.EventTypes)
		return exec(ctx, tx, `INSERT INTO wh_subscriptions (id, shop_id, url, event_types, enabled, secret) VALUES (?, ?, ?, ?, 1, ?)
		ON CONFLICT (id) DO NOTHING`, ev.SubscriptionID, ev.ShopID, ev.URL, string(types), ev.Secret)
	case *domain.WebhookSubscriptionUpdated:
		types, _ := json.Marshal(ev.EventTypes)
		// A new address starts a new failing period.
		return exec(ctx, tx, `UPDATE wh_subscriptions SET url = ?, event_types = ?,
		failing_since = CASE WHEN url = ? THEN failing_since ELSE 0 END, warned_level = CASE WHEN url = ? THEN warned_level ELSE 0 END
		WHERE id = ?`, ev.URL, string(types), ev.URL, ev.URL, ev.SubscriptionID)
	case *domain.WebhookSubscriptionDisabled:
		if err := exec(ctx, tx, `UPDATE wh_subscriptions SET enabled = 0 WHERE id = ?`, ev.SubscriptionID); err != nil {
			return err
		}
		return exec(ctx, tx, `UPDATE wh_deliveries SET state = 'held' WHERE subscription_id = ? AND state = 'pending' AND event_type != ?`,
			ev.SubscriptionID, domain.WebhookPingType)
	case *domain.WebhookSubscriptionEnabled:
		return exec(ctx, tx, `UPDATE wh_subscriptions SET enabled = 1, failing_since = 0, warned_level = 0 WHERE id = ?`, ev.SubscriptionID)
	case *domain.WebhookSubscriptionDeleted:
		return deleteSubscription(ctx, tx, ev.SubscriptionID)
	case *domain.WebhookSecretRotated:
		until := int64(0)
		if !ev.PreviousValidUntil.IsZero() {
			until = ev.PreviousValidUntil.UnixMilli()
		}
		return exec(ctx, tx, `UPDATE wh_subscriptions SET previous_secret = CASE WHEN ? > 0 THEN secret ELSE '' END,
		previous_valid_until = ?, secret = ? WHERE id = ?`, until, until, ev.Secret, ev.SubscriptionID)
	case *domain.WebhookSubscriptionFailing:
		return exec(ctx, tx, `UPDATE wh_subscriptions SET warned_level = MAX(warned_level, ?) WHERE id = ?`, ev.Level, ev.SubscriptionID)
	case *domain.WebhookPingRequested:
		body, err := json.Marshal(Body{ID: ev.PingID, Type: domain.WebhookPingType, CreatedAt: e.RecordedAt.UTC(), ShopID: ev.ShopID,
			Data: map[string]any{"subscription_id": ev.SubscriptionID}})
		if err != nil {
			return fmt.Errorf("encode ping: %w", err)
		}
		return record(ctx, tx, e, ev.PingID, domain.WebhookPingType, body, []subscriber{{id: ev.SubscriptionID, enabled: true}})
	case *domain.WebhookRedeliveryRequested:
		if ev.Kind == domain.WebhookRedeliverOne {
			return exec(ctx, tx, `UPDATE wh_deliveries SET state = 'pending', next_attempt_at = ? WHERE id = ? AND subscription_id = ?`,
				at, ev.DeliveryID, ev.SubscriptionID)
		}
		return exec(ctx, tx, `UPDATE wh_deliveries SET state = 'pending', next_attempt_at = ?
		WHERE subscription_id = ? AND state IN ('pending', 'failed', 'held') AND created_at >= ?`,
			at, ev.SubscriptionID, ev.Since.UnixMilli())
	case *domain.WebhookAttemptsRecorded:
		return foldAttempts(ctx, tx, ev)
	case *domain.ShopErased:
		for _, q := range []string{
			`DELETE FROM wh_attempts WHERE delivery_id IN (SELECT id FROM wh_deliveries WHERE shop_id = ?)`,
			`DELETE FROM wh_deliveries WHERE shop_id = ?`, `DELETE FROM wh_payloads WHERE shop_id = ?`,
			`DELETE FROM wh_subscriptions WHERE shop_id = ?`,
		} {
			if err := exec(ctx, tx, q, ev.ShopID); err != nil {
				return err
			}
		}
		return nil
	}
	typ, data, ok := Outbound(d.Event)
	if !ok {
		return nil
	}
	subs, err := f.subscribers(ctx, tx, e.ShopID)
	if err != nil || len(subs) == 0 {
		return err
	}
	var to []subscriber
	for _, s := range subs {
		if domain.WebhookSubscribes(s.types, typ) {
			to = append(to, s)
		}
	}
	if len(to) == 0 {
		return nil
	}
	body, err := encode(e, typ, data)
	if err != nil {
		return fmt.Errorf("encode outbound %s: %w", typ, err)
	}
	return record(ctx, tx, e, EventID(e.ID.String()), typ, body, to)
}

// record stores the outbound event's body once and a delivery of it per
// subscriber: pending and due at once, or held for a disabled one.
func record(ctx context.Context, tx *sql.Tx, e *eventlog.Event, eventID, typ string, body []byte, to []subscriber) error {
	if err := exec(ctx, tx, `INSERT INTO wh_payloads (event_id, shop_id, body) VALUES (?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
		eventID, e.ShopID, body); err != nil {
		return err
	}
	at := e.RecordedAt.UnixMilli()
	for _, s := range to {
		state := StatePending
		if !s.enabled {
			state = StateHeld
		}
		if err := exec(ctx, tx, `INSERT INTO wh_deliveries (id, subscription_id, shop_id, event_id, event_type, position, created_at, state,
		next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			domain.WebhookDeliveryID(s.id, eventID), s.id, e.ShopID, eventID, typ, int64(e.Position), at, state, at); err != nil {
			return err
		}
	}
	return nil
}

// foldAttempts applies a batch of recorded attempts: each delivery's new
// state and its attempt log, and each subscription's failing period (its
// last attempt in the batch other than a test ends it, a success, or
// starts it, a failure). Deliveries gone meanwhile (a subscription
// deleted, a delivery purged) are skipped.
func foldAttempts(ctx context.Context, tx *sql.Tx, ev *domain.WebhookAttemptsRecorded) error {
	last := map[string]domain.WebhookAttempt{}
	var order []string
	for _, a := range ev.Attempts {
		state, next, succeeded := StatePending, int64(0), int64(0)
		switch a.Outcome {
		case domain.WebhookAttemptSucceeded:
			state, succeeded = StateSucceeded, a.At.UnixMilli()
		case domain.WebhookAttemptGivenUp:
			state = StateFailed
		default:
			next = a.NextAttemptAt.UnixMilli()
		}
		res, err := tx.ExecContext(ctx, `UPDATE wh_deliveries SET state = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?,
		last_status = ?, last_reason = ?, succeeded_at = CASE WHEN ? > 0 THEN ? ELSE succeeded_at END WHERE id = ? AND attempts <= ?`,
			state, a.Attempt, next, a.At.UnixMilli(), a.Status, a.ErrorCode, succeeded, succeeded, a.DeliveryID, a.Attempt)
		if err != nil {
			return fmt.Errorf("record delivery %s: %w", a.DeliveryID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			continue // gone, or a later attempt is on record already
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO wh_attempts (delivery_id, n, at, status, reason, latency_ms, response_body, next_attempt_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (delivery_id, n) DO UPDATE SET at = excluded.at, status = excluded.status,
		reason = excluded.reason, latency_ms = excluded.latency_ms, response_body = excluded.response_body,
		next_attempt_at = excluded.next_attempt_at`,
			a.DeliveryID, a.Attempt, a.At.UnixMilli(), a.Status, a.ErrorCode, a.LatencyMS, a.Answer, next); err != nil {
			return fmt.Errorf("record attempt of %s: %w", a.DeliveryID, err)
		}
		if a.EventType != domain.WebhookPingType {
			if _, ok := last[a.SubscriptionID]; !ok {
				order = append(order, a.SubscriptionID)
			}
			last[a.SubscriptionID] = a
		}
	}
	for _, id := range order {
		a := last[id]
		if a.Outcome == domain.WebhookAttemptSucceeded {
			if err := exec(ctx, tx, `UPDATE wh_subscriptions SET failing_since = 0, warned_level = 0 WHERE id = ?`, id); err != nil {
				return err
			}
			continue
		}
		if err := exec(ctx, tx, `UPDATE wh_subscriptions SET failing_since = CASE WHEN failing_since = 0 THEN ? ELSE failing_since END
		WHERE id = ?`, a.At.UnixMilli(), id); err != nil {
			return err
		}
	}
	return nil
}

func deleteSubscription(ctx context.Context, tx *sql.Tx, id string) error {
	for _, q := range []string{
		// Bodies no other subscription's delivery refers to go with it.
		`DELETE FROM wh_payloads WHERE event_id IN (SELECT event_id FROM wh_deliveries WHERE subscription_id = ?1)
		AND NOT EXISTS (SELECT 1 FROM wh_deliveries d WHERE d.event_id = wh_payloads.event_id AND d.subscription_id != ?1)`,
		`DELETE FROM wh_attempts WHERE delivery_id IN (SELECT id FROM wh_deliveries WHERE subscription_id = ?)`,
		`DELETE FROM wh_deliveries WHERE subscription_id = ?`, `DELETE FROM wh_subscriptions WHERE id = ?`,
	} {
		if err := exec(ctx, tx, q, id); err != nil {
			return err
		}
	}
	return nil
}

func (f *fanout) subscribers(ctx context.Context, tx *sql.Tx, shop string) ([]subscriber, error) {
	var subs []subscriber
	rows, err := tx.QueryContext(ctx, `SELECT id, enabled, event_types FROM wh_subscriptions WHERE shop_id = ? ORDER BY id`, shop)
	if err != nil {
		return nil, fmt.Errorf("subscriptions of %s: %w", shop, err)
	}
	defer rows.Close()
	for rows.Next() {
		var s subscriber
		var types string
		if err := rows.Scan(&s.id, &s.enabled, &types); err != nil {
			return nil, fmt.Errorf("subscriptions of %s: %w", shop, err)
		}
		if err := json.Unmarshal([]byte(types), &s.types); err != nil {
			return nil, fmt.Errorf("subscription %s types: %w", s.id, err)
		}
		subs = append(subs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("subscriptions of %s: %w", shop, err)
	}
	return subs, nil
}

func exec(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("webhook deliveries: %w", err)
	}
	return nil
}
