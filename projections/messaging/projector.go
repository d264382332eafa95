package messaging

import (
	"context"
	"database/sql"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "messaging"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE whatsapp_accounts (
	business_account_id TEXT PRIMARY KEY,
	shop_id             TEXT NOT NULL,
	phone_number_id     TEXT NOT NULL,
	app_secret          TEXT NOT NULL,
	verify_token_hash   TEXT NOT NULL,
	connected_at        INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	version             INTEGER NOT NULL
);
CREATE INDEX whatsapp_accounts_verify ON whatsapp_accounts (verify_token_hash);
CREATE INDEX whatsapp_accounts_shop ON whatsapp_accounts (shop_id);
CREATE TABLE provider_connections (
	shop_id      TEXT NOT NULL,
	provider     TEXT NOT NULL,
	token_hash   TEXT NOT NULL UNIQUE,
	connected_at INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	version      INTEGER NOT NULL,
	PRIMARY KEY (shop_id, provider)
);
CREATE TABLE inbound_messages (
	shop_id             TEXT NOT NULL,
	message_id          TEXT NOT NULL,
	customer_id         TEXT NOT NULL,
	business_account_id TEXT NOT NULL,
	phone_number_id     TEXT NOT NULL,
	from_phone          TEXT,
	profile_name        TEXT,
	type                TEXT NOT NULL,
	text                TEXT,
	sent_at             INTEGER NOT NULL,
	queue               TEXT NOT NULL,
	redacted            INTEGER NOT NULL DEFAULT 0,
	version             INTEGER NOT NULL,
	PRIMARY KEY (shop_id, message_id)
);
CREATE INDEX inbound_messages_queue ON inbound_messages (shop_id, queue, sent_at, message_id);
CREATE INDEX inbound_messages_customer ON inbound_messages (customer_id);
CREATE TABLE message_log (
	shop_id      TEXT NOT NULL,
	message_id   TEXT NOT NULL,
	customer_id  TEXT NOT NULL DEFAULT '',
	source       TEXT NOT NULL,
	last_status  TEXT NOT NULL,
	delivered_at INTEGER,
	opened_at    INTEGER,
	failed_at    INTEGER,
	error_code   TEXT NOT NULL DEFAULT '',
	error_title  TEXT NOT NULL DEFAULT '',
	updated_at   INTEGER NOT NULL,
	version      INTEGER NOT NULL,
	PRIMARY KEY (shop_id, message_id)
);
CREATE INDEX message_log_customer ON message_log (customer_id);
CREATE TABLE message_templates (
	shop_id             TEXT NOT NULL,
	template_id         TEXT NOT NULL,
	business_account_id TEXT NOT NULL,
	name                TEXT NOT NULL,
	language            TEXT NOT NULL,
	state               TEXT NOT NULL,
	last_event          TEXT NOT NULL,
	reason              TEXT NOT NULL,
	updated_at          INTEGER NOT NULL,
	version             INTEGER NOT NULL,
	PRIMARY KEY (shop_id, template_id)
);
CREATE TABLE phone_numbers (
	shop_id              TEXT NOT NULL,
	display_phone_number TEXT NOT NULL,
	business_account_id  TEXT NOT NULL,
	rating               TEXT NOT NULL,
	last_event           TEXT NOT NULL,
	current_limit        TEXT NOT NULL,
	updated_at           INTEGER NOT NULL,
	version              INTEGER NOT NULL,
	PRIMARY KEY (shop_id, display_phone_number)
);
CREATE TABLE account_alerts (
	position            INTEGER PRIMARY KEY,
	shop_id             TEXT NOT NULL,
	business_account_id TEXT NOT NULL,
	entity_type         TEXT NOT NULL,
	entity_id           TEXT NOT NULL,
	severity            TEXT NOT NULL,
	status              TEXT NOT NULL,
	alert_type          TEXT NOT NULL,
	description         TEXT NOT NULL,
	at                  INTEGER NOT NULL
);
CREATE INDEX account_alerts_shop ON account_alerts (shop_id, position);
CREATE TABLE account_reviews (
	position            INTEGER PRIMARY KEY,
	shop_id             TEXT NOT NULL,
	business_account_id TEXT NOT NULL,
	decision            TEXT NOT NULL,
	at                  INTEGER NOT NULL
);
CREATE INDEX account_reviews_shop ON account_reviews (shop_id, position);
`}, {Version: 2, SQL: `
ALTER TABLE whatsapp_accounts ADD COLUMN access_token TEXT NOT NULL DEFAULT '';
`}, {Version: 3, SQL: outboundMigration}}

// Projector returns the messaging projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.Sealing(codec, SecretLabel, projections.WrapErrors("messaging", apply))
		}),
	}
}

// cases fold each event type. Every write is idempotent: rows carry the
// position of the event that last wrote them (version) and only a later
// position changes them; history rows are keyed by position.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID,
			readmodel.ShopRows("whatsapp_accounts"), readmodel.ShopRows("provider_connections"),
			readmodel.ShopRows("inbound_messages"), readmodel.ShopRows("message_log"), readmodel.ShopRows("message_templates"),
			readmodel.ShopRows("phone_numbers"), readmodel.ShopRows("account_alerts"), readmodel.ShopRows("account_reviews"),
			readmodel.ShopRows("campaign_message_counts"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
		return eraseCustomer(ctx, tx, ev)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppAccountConnected, e *projections.DecodedEvent) error {
		pos := e.Position
		return upsertAccount(ctx, tx, account{ev.BusinessAccountID, ev.ShopID, ev.PhoneNumberID, ev.AppSecret, ev.VerifyTokenHash, ev.AccessToken}, ev.ConnectedAt, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppAccountCredentialsRotated, e *projections.DecodedEvent) error {
		pos := e.Position
		return upsertAccount(ctx, tx, account{ev.BusinessAccountID, ev.ShopID, ev.PhoneNumberID, ev.AppSecret, ev.VerifyTokenHash, ev.AccessToken}, ev.RotatedAt, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MessagingProviderConnected, e *projections.DecodedEvent) error {
		pos := e.Position
		return upsertProvider(ctx, tx, ev.ShopID, ev.Provider, ev.TokenHash, ev.ConnectedAt, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MessagingProviderTokenRotated, e *projections.DecodedEvent) error {
		pos := e.Position
		return upsertProvider(ctx, tx, ev.ShopID, ev.Provider, ev.TokenHash, ev.RotatedAt, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppMessageReceived, e *projections.DecodedEvent) error {
		pos := e.Position
		_, err := tx.ExecContext(ctx, `INSERT INTO inbound_messages (shop_id, message_id, customer_id, business_account_id,
			phone_number_id, from_phone, profile_name, type, text, sent_at, queue, redacted, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, message_id) DO NOTHING`,
			ev.ShopID, ev.MessageID, ev.CustomerID, ev.BusinessAccountID, ev.PhoneNumberID, readmodel.NullIfEmpty(ev.From),
			ev.ProfileName, ev.Type, ev.Text, ev.SentAt.UnixMicro(), ev.Queue, len(e.Redacted) > 0, pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MessageStatusReported, e *projections.DecodedEvent) error {
		pos := e.Position
		if done, err := applyOwnStatus(ctx, tx, ev, pos); done || err != nil {
			return err
		}
		return applyStatus(ctx, tx, ev, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MessageOutcomesRecorded, e *projections.DecodedEvent) error {
		for i := range ev.Outcomes {
			if err := applyOutcome(ctx, tx, &ev.Outcomes[i], e.Position); err != nil {
				return err
			}
		}
		return nil
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppTemplateStatusUpdated, e *projections.DecodedEvent) error {
		pos := e.Position
		_, err := tx.ExecContext(ctx, `INSERT INTO message_templates (shop_id, template_id, business_account_id, name, language,
			state, last_event, reason, updated_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (shop_id, template_id) DO UPDATE SET
				business_account_id = excluded.business_account_id,
				name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE message_templates.name END,
				language = CASE WHEN excluded.language <> '' THEN excluded.language ELSE message_templates.language END,
				state = excluded.state, last_event = excluded.last_event, reason = excluded.reason,
				updated_at = excluded.updated_at, version = excluded.version
			WHERE message_templates.version < excluded.version`,
			ev.ShopID, ev.TemplateID, ev.BusinessAccountID, ev.Name, ev.Language, ev.State, ev.Event, ev.Reason, ev.At.UnixMicro(), pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppPhoneQualityUpdated, e *projections.DecodedEvent) error {
		pos := e.Position
		_, err := tx.ExecContext(ctx, `INSERT INTO phone_numbers (shop_id, display_phone_number, business_account_id, rating,
			last_event, current_limit, updated_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (shop_id, display_phone_number) DO UPDATE SET
				business_account_id = excluded.business_account_id,
				rating = CASE WHEN excluded.rating <> '' THEN excluded.rating ELSE phone_numbers.rating END,
				last_event = excluded.last_event,
				current_limit = CASE WHEN excluded.current_limit <> '' THEN excluded.current_limit ELSE phone_numbers.current_limit END,
				updated_at = excluded.updated_at, version = excluded.version
			WHERE phone_numbers.version < excluded.version`,
			ev.ShopID, ev.DisplayPhoneNumber, ev.BusinessAccountID, ev.Rating, ev.Event, ev.CurrentLimit, ev.At.UnixMicro(), pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppAccountAlertReceived, e *projections.DecodedEvent) error {
		pos := e.Position
		_, err := tx.ExecContext(ctx, `INSERT INTO account_alerts (position, shop_id, business_account_id, entity_type, entity_id,
			severity, status, alert_type, description, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (position) DO NOTHING`,
			pos, ev.ShopID, ev.BusinessAccountID, ev.EntityType, ev.EntityID, ev.Severity, ev.Status, ev.AlertType, ev.Description, ev.At.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppAccountReviewUpdated, e *projections.DecodedEvent) error {
		pos := e.Position
		_, err := tx.ExecContext(ctx, `INSERT INTO account_reviews (position, shop_id, business_account_id, decision, at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (position) DO NOTHING`,
			pos, ev.ShopID, ev.BusinessAccountID, ev.Decision, ev.At.UnixMicro())
		return err
	}),
)

// account is a whatsapp_accounts row as a connection event gives it, its
// secrets already sealed (Sealing).
type account struct {
	id, shop, phone, appSecret, verifyHash, accessToken string
}

// upsertAccount writes a connection. An empty access token keeps the row's
// current one (a rotation without --access-token leaves sending as it was).
func upsertAccount(ctx context.Context, tx *sql.Tx, a account, at time.Time, pos eventlog.Position) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO whatsapp_accounts (business_account_id, shop_id, phone_number_id, app_secret,
		verify_token_hash, access_token, connected_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (business_account_id) DO UPDATE SET
			phone_number_id = excluded.phone_number_id, app_secret = excluded.app_secret,
			verify_token_hash = excluded.verify_token_hash,
			access_token = CASE WHEN excluded.access_token <> '' THEN excluded.access_token ELSE whatsapp_accounts.access_token END,
			updated_at = excluded.updated_at, version = excluded.version
		WHERE whatsapp_accounts.version < excluded.version AND whatsapp_accounts.shop_id = excluded.shop_id`,
		a.id, a.shop, a.phone, a.appSecret, a.verifyHash, a.accessToken, at.UnixMicro(), at.UnixMicro(), pos)
	return err
}

func upsertProvider(ctx context.Context, tx *sql.Tx, shop, provider, hash string, at time.Time, pos eventlog.Position) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO provider_connections (shop_id, provider, token_hash, connected_at, updated_at, version)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, provider) DO UPDATE SET
			token_hash = excluded.token_hash, updated_at = excluded.updated_at, version = excluded.version
		WHERE provider_connections.version < excluded.version`,
		shop, provider, hash, at.UnixMicro(), at.UnixMicro(), pos)
	return err
}

// applyStatus creates the message's log row if needed and sets the time of
// the status: the first delivered, read and failed report each set their
// column; the last report's status is kept as sent.
func applyStatus(ctx context.Context, tx *sql.Tx, ev *domain.MessageStatusReported, pos eventlog.Position) error {
	at := ev.At.UnixMicro()
	var delivered, opened, failed any
	code, title := "", ""
	switch ev.Status {
	case domain.MessageStatusDelivered:
		delivered = at
	case domain.MessageStatusRead:
		opened = at
	case domain.MessageStatusFailed:
		failed, code, title = at, ev.ErrorCode, ev.ErrorTitle
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO message_log (shop_id, message_id, customer_id, source, last_status,
		delivered_at, opened_at, failed_at, error_code, error_title, updated_at, version, created_pos)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (shop_id, message_id) DO UPDATE SET
			customer_id = CASE WHEN message_log.customer_id = '' THEN excluded.customer_id ELSE message_log.customer_id END,
			source = excluded.source, last_status = excluded.last_status,
			delivered_at = COALESCE(message_log.delivered_at, excluded.delivered_at),
			opened_at = COALESCE(message_log.opened_at, excluded.opened_at),
			failed_at = COALESCE(message_log.failed_at, excluded.failed_at),
			error_code = CASE WHEN message_log.failed_at IS NULL AND excluded.failed_at IS NOT NULL THEN excluded.error_code ELSE message_log.error_code END,
			error_title = CASE WHEN message_log.failed_at IS NULL AND excluded.failed_at IS NOT NULL THEN excluded.error_title ELSE message_log.error_title END,
			updated_at = excluded.updated_at, version = excluded.version
		WHERE message_log.version < excluded.version`,
		ev.ShopID, ev.MessageID, ev.CustomerID, ev.Source, ev.Status, delivered, opened, failed, code, title, at, pos, pos)
	return err
}

// SecretLabel binds the sealed secrets of whatsapp_accounts.app_secret and
// whatsapp_accounts.access_token (envelope.Codec.SealSecret; one label for
// the projector's secrets, its name kept from when the app secret was the
// only one so that existing read models still open): the secrets the
// queries return are sealed, and the receiver and the sending work open
// them with this label and the shop id.
const SecretLabel = "whatsapp_accounts.app_secret"
