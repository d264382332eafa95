// Package notify delivers the merchant's notifications by e-mail and chat
// message, and the operator's alerts by e-mail (issue 18, point 2). The
// in-app notifications are a read model (projections/notifications); this
// is the delivery side, with a store of its own (notify.db).
//
// Its reactor (stable name "notification_outbox") folds each shop's
// notification settings and contact e-mail, and queues one delivery per
// anomaly and channel its severity's settings choose: P1 due at once, P2
// and P3 at the next full hour (the digest). A dedupe key delivers once a
// UTC day (ntf_keys), however often its anomaly is raised again. Reading
// a notification or resolving its anomaly cancels what is still queued of
// it. The dispatcher sends the due deliveries, a P1 alone and the others
// as one digest per shop and channel; it holds a digest during the shop's
// quiet hours (never a P1); it sends a P1 left unread and unresolved again
// after domain.RenotifyAfter (at most domain.MaxRenotify times); a failed
// send is retried with backoff and never dropped (a refusal for good is
// kept as failed); each message sent is recorded (NotificationsSent), and
// the reactor folds that record back (its deliveries done, a P1's reminder
// queued), so that a server taking the notifier over from another sends
// nothing again: the dispatcher starts once the reactor caught up.
//
// It imports channels, commands, domain, envelope, eventlog, projections
// and readmodel.
package notify

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// OutboxName is the reactor's stable name.
const OutboxName = "notification_outbox"

// PrefixDelivery is the id prefix of a notification delivery.
const PrefixDelivery = "ntd_"

// Delivery states.
const (
	stateQueued    = "queued"
	stateDone      = "done"
	stateCancelled = "cancelled"
	stateFailed    = "failed"
)

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE ntf_settings (
	shop_id       TEXT PRIMARY KEY,
	domain        TEXT NOT NULL DEFAULT '',
	contact_email TEXT NOT NULL DEFAULT '',
	settings      TEXT NOT NULL DEFAULT ''
);
CREATE TABLE ntf_keys (
	shop_id    TEXT NOT NULL,
	dedupe_key TEXT NOT NULL,
	day        INTEGER NOT NULL,
	PRIMARY KEY (shop_id, dedupe_key, day)
);
CREATE TABLE ntf_anomalies (
	anomaly_id   TEXT PRIMARY KEY,
	shop_id      TEXT NOT NULL,
	severity     TEXT NOT NULL,
	kind         TEXT NOT NULL,
	title        TEXT NOT NULL,
	summary      TEXT NOT NULL DEFAULT '',
	raised_at    INTEGER NOT NULL,
	acknowledged INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX ntf_anomalies_shop ON ntf_anomalies (shop_id);
CREATE TABLE ntf_outbox (
	delivery_id TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	channel     TEXT NOT NULL,
	anomaly_id  TEXT NOT NULL,
	severity    TEXT NOT NULL,
	reminder    INTEGER NOT NULL DEFAULT 0,
	due_at      INTEGER NOT NULL,
	state       TEXT NOT NULL,
	attempts    INTEGER NOT NULL DEFAULT 0,
	last_error  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ntf_outbox_due ON ntf_outbox (due_at) WHERE state = 'queued';
CREATE INDEX ntf_outbox_anomaly ON ntf_outbox (anomaly_id);
CREATE INDEX ntf_outbox_shop ON ntf_outbox (shop_id);
`}}

// DeliveryID is the id of the delivery of an anomaly on a channel (its
// reminder-th reminder; 0 for the first).
func DeliveryID(anomalyID, channel string, reminder int) string {
	return domain.IDFromExternal(PrefixDelivery, "notification-delivery", anomalyID, fmt.Sprintf("%s/%d", channel, reminder))
}

// nextDigest is the next full hour after now (the digests' due time).
func nextDigest(now time.Time) time.Time {
	return now.UTC().Truncate(domain.DigestEvery).Add(domain.DigestEvery)
}

// outboxProjector returns the reactor; now is the dispatcher's clock,
// committed wakes the dispatcher, operator tells whether operator alerts
// have an address.
func outboxProjector(codec *envelope.Codec, now func() time.Time, committed func(), operator bool) projections.Projector {
	cases := projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("ntf_settings"), readmodel.ShopRows("ntf_keys"),
				readmodel.ShopRows("ntf_anomalies"), readmodel.ShopRows("ntf_outbox"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopCreated, _ *projections.DecodedEvent) error {
			return exec(ctx, tx, `INSERT INTO ntf_settings (shop_id, domain, contact_email) VALUES (?, ?, ?)
				ON CONFLICT (shop_id) DO UPDATE SET domain = excluded.domain, contact_email = excluded.contact_email`,
				ev.ShopID, ev.Domain, ev.ContactEmail)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.NotificationSettingsChanged, _ *projections.DecodedEvent) error {
			return exec(ctx, tx, `INSERT INTO ntf_settings (shop_id, settings) VALUES (?, ?)
				ON CONFLICT (shop_id) DO UPDATE SET settings = excluded.settings`, ev.ShopID, readmodel.JSONText(ev.Settings, ""))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AnomalyRaised, _ *projections.DecodedEvent) error {
			return queue(ctx, tx, ev, now(), operator)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AnomalyResolved, _ *projections.DecodedEvent) error {
			return acknowledge(ctx, tx, ev.AnomalyID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.NotificationRead, _ *projections.DecodedEvent) error {
			return acknowledge(ctx, tx, ev.AnomalyID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.NotificationsSent, _ *projections.DecodedEvent) error {
			return markSent(ctx, tx, ev)
		}),
	)
	return projections.Projector{
		Name:       OutboxName,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
		Committed: func(eventlog.Event) {
			if committed != nil {
				committed()
			}
		},
	}
}

// queue records an anomaly and queues its deliveries.
func queue(ctx context.Context, tx *sql.Tx, ev *domain.AnomalyRaised, now time.Time, operator bool) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO ntf_anomalies (anomaly_id, shop_id, severity, kind, title, summary, raised_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (anomaly_id) DO NOTHING`,
		ev.AnomalyID, ev.ShopID, ev.Severity, ev.Kind, ev.Title, ev.Summary, ev.RaisedAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("record anomaly: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // seen already
	}
	// Once per dedupe key per UTC day.
	res, err = tx.ExecContext(ctx, `INSERT INTO ntf_keys (shop_id, dedupe_key, day) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		ev.ShopID, ev.DedupeKey, ev.RaisedAt.UTC().Truncate(domain.NotifyWindow).Unix())
	if err != nil {
		return fmt.Errorf("dedupe key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	var channels []string
	if ev.ShopID == "" {
		if operator {
			channels = []string{domain.NotifyEmail}
		}
	} else {
		s, err := settingsOf(ctx, tx, ev.ShopID)
		if err != nil {
			return err
		}
		for _, c := range domain.NotifyChannels() {
			if s.Settings.Wants(ev.Severity, c) {
				channels = append(channels, c)
			}
		}
	}
	due := now
	if ev.Severity != domain.SeverityP1 {
		due = nextDigest(now)
	}
	for _, c := range channels {
		if err := exec(ctx, tx, `INSERT INTO ntf_outbox (delivery_id, shop_id, channel, anomaly_id, severity, due_at, state)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING`,
			DeliveryID(ev.AnomalyID, c, 0), ev.ShopID, c, ev.AnomalyID, ev.Severity, due.UnixMicro(), stateQueued); err != nil {
			return err
		}
	}
	return nil
}

// markSent folds a send the log records, this server's dispatcher's or
// another server's (which ran the notifier before this one took it over):
// its deliveries are done and a P1's reminder is queued, as the dispatcher
// does after a send, so that a server taking the notifier over sends
// nothing again. For this server's own sends it changes nothing (the
// dispatcher did it, or does it after: both are no-ops the second time).
func markSent(ctx context.Context, tx *sql.Tx, ev *domain.NotificationsSent) error {
	for _, id := range ev.AnomalyIDs {
		var shop, severity string
		var acknowledged bool
		err := tx.QueryRowContext(ctx, `SELECT shop_id, severity, acknowledged FROM ntf_anomalies WHERE anomaly_id = ?`, id).
			Scan(&shop, &severity, &acknowledged)
		if err == sql.ErrNoRows {
			continue // its shop was erased
		}
		if err != nil {
			return fmt.Errorf("anomaly of a sent notification: %w", err)
		}
		if err := exec(ctx, tx, `UPDATE ntf_outbox SET state = ?, last_error = '' WHERE delivery_id = ? AND state = ?`,
			stateDone, DeliveryID(id, ev.Channel, ev.Reminder), stateQueued); err != nil {
			return err
		}
		if !acknowledged {
			if err := remind(ctx, tx, shop, ev.Channel, id, severity, ev.Reminder, ev.SentAt); err != nil {
				return err
			}
		}
	}
	return nil
}

// remind queues the next reminder of a P1 delivery (its reminder-th) sent
// at sentAt, due domain.RenotifyAfter later, unless MaxRenotify were sent
// or the anomaly was read or resolved meanwhile.
func remind(ctx context.Context, tx *sql.Tx, shop, channel, anomalyID, severity string, reminder int, sentAt time.Time) error {
	if severity != domain.SeverityP1 || reminder >= domain.MaxRenotify {
		return nil
	}
	return exec(ctx, tx, `INSERT INTO ntf_outbox (delivery_id, shop_id, channel, anomaly_id, severity, reminder, due_at, state)
		SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM ntf_anomalies WHERE anomaly_id = ? AND acknowledged = 0)
		ON CONFLICT (delivery_id) DO NOTHING`,
		DeliveryID(anomalyID, channel, reminder+1), shop, channel, anomalyID, severity, reminder+1,
		sentAt.Add(domain.RenotifyAfter).UnixMicro(), stateQueued, anomalyID)
}

// acknowledge marks an anomaly read or resolved: nothing more of it is
// sent.
func acknowledge(ctx context.Context, tx *sql.Tx, anomalyID string) error {
	if err := exec(ctx, tx, `UPDATE ntf_anomalies SET acknowledged = 1 WHERE anomaly_id = ?`, anomalyID); err != nil {
		return err
	}
	return exec(ctx, tx, `UPDATE ntf_outbox SET state = ? WHERE anomaly_id = ? AND state = ?`, stateCancelled, anomalyID, stateQueued)
}

// shopSettings are a shop's settings as the notifier reads them.
type shopSettings struct {
	Domain, ContactEmail string
	Settings             domain.NotificationSettings
}

// settingsOf reads a shop's settings (the defaults until it configures
// them).
func settingsOf(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, shop string) (shopSettings, error) {
	var s shopSettings
	var raw string
	err := q.QueryRowContext(ctx, `SELECT domain, contact_email, settings FROM ntf_settings WHERE shop_id = ?`, shop).
		Scan(&s.Domain, &s.ContactEmail, &raw)
	if err != nil && err != sql.ErrNoRows {
		return s, fmt.Errorf("notification settings: %w", err)
	}
	s.Settings = domain.DefaultNotificationSettings()
	if raw != "" {
		if err := jsonUnmarshal(raw, &s.Settings); err != nil {
			return s, fmt.Errorf("notification settings: %w", err)
		}
	}
	return s, nil
}

// emails are where a shop's e-mail notifications go: its addresses, or
// its contact e-mail.
func (s shopSettings) emails() []string {
	if len(s.Settings.Emails) > 0 {
		return s.Settings.Emails
	}
	if s.ContactEmail != "" {
		return []string{s.ContactEmail}
	}
	return nil
}

func exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("%s: %w", strings.Fields(query)[0], err)
	}
	return nil
}
