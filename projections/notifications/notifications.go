// Package notifications is the read model of the merchant's in-app
// notifications (issue 18) and of each shop's notification settings.
//
// Its projector (stable name "notifications") keeps notifications, one row
// per anomaly of a shop (AnomalyRaised; operator anomalies, without a
// shop, are not a shop's notifications) with its read and resolved times
// (NotificationRead, AnomalyResolved), and notification_settings, a shop's
// settings (NotificationSettingsChanged) and contact e-mail (ShopCreated):
// the merchant's own addresses, not a customer's, erased with the shop. The
// titles and summaries of anomalies carry no personal data.
//
// It imports domain, envelope, projections and readmodel.
package notifications

import (
	"context"
	"database/sql"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name.
const Name = "notifications"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE notifications (
	notification_id TEXT PRIMARY KEY,
	shop_id         TEXT NOT NULL,
	anomaly_id      TEXT NOT NULL,
	severity        TEXT NOT NULL,
	kind            TEXT NOT NULL,
	title           TEXT NOT NULL,
	summary         TEXT NOT NULL DEFAULT '',
	resources       TEXT NOT NULL DEFAULT '[]',
	created_at      INTEGER NOT NULL,
	read_at         INTEGER,
	resolved_at     INTEGER,
	position        INTEGER NOT NULL
);
CREATE INDEX notifications_shop ON notifications (shop_id, position, notification_id);
CREATE INDEX notifications_unread ON notifications (shop_id) WHERE read_at IS NULL;
CREATE TABLE notification_settings (
	shop_id       TEXT PRIMARY KEY,
	contact_email TEXT NOT NULL DEFAULT '',
	settings      TEXT NOT NULL DEFAULT ''
);
`}}

// Projector returns the notifications projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.WrapErrors("notifications", apply)
		}),
	}
}

var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("notifications"), readmodel.ShopRows("notification_settings"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopCreated, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO notification_settings (shop_id, contact_email) VALUES (?, ?)
			ON CONFLICT (shop_id) DO UPDATE SET contact_email = excluded.contact_email`, ev.ShopID, ev.ContactEmail)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.NotificationSettingsChanged, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO notification_settings (shop_id, settings) VALUES (?, ?)
			ON CONFLICT (shop_id) DO UPDATE SET settings = excluded.settings`, ev.ShopID, readmodel.JSONText(ev.Settings, ""))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AnomalyRaised, e *projections.DecodedEvent) error {
		if ev.ShopID == "" {
			return nil // the operator's
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO notifications (notification_id, shop_id, anomaly_id, severity, kind, title, summary,
			resources, created_at, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (notification_id) DO NOTHING`,
			domain.NotificationID(ev.AnomalyID), ev.ShopID, ev.AnomalyID, ev.Severity, ev.Kind, ev.Title, ev.Summary,
			readmodel.JSONText(ev.Resources, "[]"), ev.RaisedAt.UnixMicro(), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AnomalyResolved, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE notifications SET resolved_at = ? WHERE notification_id = ? AND resolved_at IS NULL`,
			ev.ResolvedAt.UnixMicro(), domain.NotificationID(ev.AnomalyID))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.NotificationRead, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE notifications SET read_at = ? WHERE notification_id = ? AND shop_id = ? AND read_at IS NULL`,
			ev.ReadAt.UnixMicro(), ev.NotificationID, ev.ShopID)
		return err
	}),
)
