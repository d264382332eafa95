// Package gdprrequests is the read model of the GDPR requests the service
// must answer, and of where a shop's data exports go.
//
// Its projector (stable name "gdpr_requests") keeps two tables of its own:
// gdpr_requests, one row per customers/data_request (CustomerDataRequested)
// with its status (pending, retrying, completed), attempts, last failure
// reason, next attempt and due date (received + 30 days), folded from
// DataExportAttemptFailed and GdprRequestCompleted; and gdpr_settings, a
// shop's data-request URL, signing secret and contact e-mail (from
// ShopCreated and ShopPrivacySettingsChanged). No personal data is kept:
// a request row points at its CustomerDataRequested event, which the
// exporter reads and decodes again for each attempt.
//
// The projector is the data-export reactor's trigger: Committed reports
// each new request so the exporter can act at once (cmd/cgp/dataexport.go).
//
// It imports domain, envelope, eventlog, projections and readmodel.
package gdprrequests

import (
	"context"
	"database/sql"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name.
const Name = "gdpr_requests"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE gdpr_requests (
	request_id          TEXT PRIMARY KEY,
	shop_id             TEXT NOT NULL,
	kind                TEXT NOT NULL,
	customer_id         TEXT NOT NULL DEFAULT '',
	platform_request_id TEXT NOT NULL DEFAULT '',
	event_id            TEXT NOT NULL,
	event_stream        TEXT NOT NULL,
	event_revision      INTEGER NOT NULL,
	status              TEXT NOT NULL,
	attempts            INTEGER NOT NULL DEFAULT 0,
	last_reason         TEXT NOT NULL DEFAULT '',
	channel             TEXT NOT NULL DEFAULT '',
	received_at         INTEGER NOT NULL,
	due_at              INTEGER NOT NULL,
	next_attempt_at     INTEGER NOT NULL DEFAULT 0,
	completed_at        INTEGER NOT NULL DEFAULT 0,
	bytes               INTEGER NOT NULL DEFAULT 0,
	sha256              TEXT NOT NULL DEFAULT '',
	position            INTEGER NOT NULL
);
CREATE INDEX gdpr_requests_shop ON gdpr_requests (shop_id, position, request_id);
CREATE INDEX gdpr_requests_due ON gdpr_requests (status, next_attempt_at);
CREATE TABLE gdpr_settings (
	shop_id            TEXT PRIMARY KEY,
	shop_contact_email TEXT NOT NULL DEFAULT '',
	contact_email      TEXT NOT NULL DEFAULT '',
	data_request_url   TEXT NOT NULL DEFAULT '',
	signing_secret     TEXT NOT NULL DEFAULT '',
	updated_at         INTEGER NOT NULL
);
`}}

// Projector returns the GDPR requests projector. requested, when set, is
// called after the transaction that recorded a new request committed (it
// must be quick: the exporter only wakes up).
func Projector(codec *envelope.Codec, requested func()) projections.Projector {
	p := projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.Sealing(codec, SecretLabel, projections.WrapErrors("gdpr requests", apply))
		}),
	}
	if requested != nil {
		p.Committed = func(e eventlog.Event) {
			if e.Type == "CustomerDataRequested" {
				requested()
			}
		}
	}
	return p
}

// cases fold each event type.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM gdpr_settings WHERE shop_id = ?`, ev.ShopID)
		if err == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM gdpr_requests WHERE shop_id = ?`, ev.ShopID)
		}
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopCreated, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gdpr_settings (shop_id, shop_contact_email, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (shop_id) DO UPDATE SET shop_contact_email = excluded.shop_contact_email`,
			ev.ShopID, ev.ContactEmail, ev.CreatedAt.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopPrivacySettingsChanged, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gdpr_settings (shop_id, contact_email, data_request_url, signing_secret, updated_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (shop_id) DO UPDATE SET contact_email = excluded.contact_email,
		data_request_url = excluded.data_request_url, signing_secret = excluded.signing_secret, updated_at = excluded.updated_at`,
			ev.ShopID, ev.ContactEmail, ev.DataRequestURL, ev.SigningSecret, ev.ChangedAt.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerDataRequested, e *projections.DecodedEvent) error {
		received := e.OccurredAt.UTC()
		_, err := tx.ExecContext(ctx, `INSERT INTO gdpr_requests (request_id, shop_id, kind, customer_id, platform_request_id,
		event_id, event_stream, event_revision, status, received_at, due_at, next_attempt_at, position)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING`,
			domain.GDPRRequestID(ev.ShopID, e.ID.String()), ev.ShopID, domain.GDPRKindDataRequest, ev.PrivacyCustomer.CustomerID,
			ev.RequestID, e.ID.String(), e.StreamID, int64(e.Revision), domain.GDPRStatusPending, received.UnixMicro(),
			received.Add(domain.GDPRDeadline).UnixMicro(), received.UnixMicro(), int64(e.Position))
		return err
	}),
	// A customers/redact is listed beside the data requests: pending until
	// the erasure reactor erased the customer (CustomerErased names the
	// request's event), completed then. The exporter takes data requests
	// only (Due).
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerRedactRequested, e *projections.DecodedEvent) error {
		received := e.OccurredAt.UTC()
		_, err := tx.ExecContext(ctx, `INSERT INTO gdpr_requests (request_id, shop_id, kind, customer_id, platform_request_id,
		event_id, event_stream, event_revision, status, received_at, due_at, next_attempt_at, position)
		VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT (request_id) DO NOTHING`,
			domain.GDPRRequestID(ev.ShopID, e.ID.String()), ev.ShopID, domain.GDPRKindRedact, ev.PrivacyCustomer.CustomerID,
			e.ID.String(), e.StreamID, int64(e.Revision), domain.GDPRStatusPending, received.UnixMicro(),
			received.Add(domain.GDPRDeadline).UnixMicro(), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE gdpr_requests SET status = ?, completed_at = ? WHERE request_id = ? AND status <> ?`,
			domain.GDPRStatusCompleted, ev.ErasedAt.UnixMicro(), domain.GDPRRequestID(ev.ShopID, ev.RequestEventID), domain.GDPRStatusCompleted)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.DataExportAttemptFailed, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE gdpr_requests SET
		status = CASE WHEN status = ? THEN status ELSE ? END,
		last_reason = CASE WHEN status = ? OR attempts > ? THEN last_reason ELSE ? END,
		channel = CASE WHEN status = ? OR attempts > ? THEN channel ELSE ? END,
		next_attempt_at = CASE WHEN status = ? OR attempts > ? THEN next_attempt_at ELSE ? END,
		attempts = MAX(attempts, ?)
		WHERE request_id = ?`,
			domain.GDPRStatusCompleted, domain.GDPRStatusRetrying,
			domain.GDPRStatusCompleted, ev.Attempt, ev.Reason,
			domain.GDPRStatusCompleted, ev.Attempt, ev.Channel,
			domain.GDPRStatusCompleted, ev.Attempt, ev.NextAttemptAt.UnixMicro(),
			ev.Attempt, ev.RequestID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.GdprRequestCompleted, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE gdpr_requests SET status = ?, channel = ?, completed_at = ?, bytes = ?, sha256 = ?,
		next_attempt_at = 0, attempts = attempts + 1 WHERE request_id = ? AND status <> ?`,
			domain.GDPRStatusCompleted, ev.Channel, ev.CompletedAt.UnixMicro(), ev.Bytes, ev.SHA256, ev.RequestID, domain.GDPRStatusCompleted)
		return err
	}),
)

// SecretLabel binds the sealed secrets of gdpr_settings.signing_secret
// (envelope.Codec.SealSecret): the secret the queries return is sealed,
// and the receiver opens it with the same label and the shop id.
const SecretLabel = "gdpr_settings.signing_secret"
