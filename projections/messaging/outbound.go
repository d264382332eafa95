package messaging

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The messages the service sends: each outcome of a
// MessageOutcomesRecorded (sent, failed, skipped) is a message_log row
// under the service's own message id, with what sent it; the provider's status reports land
// on it by the provider's message id; each campaign's counts are kept as
// the rows change, so reading them costs one row whatever the audience.

// outboundMigration adds the sent messages to the message log.
const outboundMigration = `
ALTER TABLE message_log ADD COLUMN channel TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN intent TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN provider TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN provider_message_id TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN campaign_id TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN journey_id TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN enrollment_id TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE message_log ADD COLUMN flow TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN sent_at INTEGER;
ALTER TABLE message_log ADD COLUMN skipped_at INTEGER;
ALTER TABLE message_log ADD COLUMN skip_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE message_log ADD COLUMN created_pos INTEGER NOT NULL DEFAULT 0;
UPDATE message_log SET created_pos = version;
CREATE INDEX message_log_provider ON message_log (shop_id, provider_message_id) WHERE provider_message_id <> '';
CREATE INDEX message_log_list ON message_log (shop_id, created_pos, message_id);
CREATE INDEX message_log_campaign ON message_log (shop_id, campaign_id, created_pos) WHERE campaign_id <> '';
CREATE INDEX message_log_journey ON message_log (shop_id, journey_id, created_pos) WHERE journey_id <> '';
CREATE TABLE campaign_message_counts (
	shop_id     TEXT NOT NULL,
	campaign_id TEXT NOT NULL,
	sent        INTEGER NOT NULL DEFAULT 0,
	delivered   INTEGER NOT NULL DEFAULT 0,
	read        INTEGER NOT NULL DEFAULT 0,
	failed      INTEGER NOT NULL DEFAULT 0,
	skipped     INTEGER NOT NULL DEFAULT 0,
	opted_out   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (shop_id, campaign_id)
);
`

// StatusSkipped is the status of a message that was not sent (its
// skip_reason says why).
const StatusSkipped = "skipped"

// outcomeRow is what an outcome writes on its row.
type outcomeRow struct {
	status, provider, providerID, code, reason string
	sentAt, failedAt, skippedAt                int64
	// carried are the statuses a provider reported before the outcome
	// was recorded (from its provider-keyed row).
	delivered, opened, failed sql.NullInt64
	carriedCode, carriedTitle string
}

// countDelta is a change of a campaign's counts.
type countDelta struct{ sent, delivered, read, failed, skipped, optedOut int }

func bump(ctx context.Context, tx *sql.Tx, shop, campaign string, d countDelta) error {
	if campaign == "" || d == (countDelta{}) {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO campaign_message_counts (shop_id, campaign_id, sent, delivered, read, failed, skipped, opted_out)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, campaign_id) DO UPDATE SET
			sent = sent + excluded.sent, delivered = delivered + excluded.delivered, read = read + excluded.read,
			failed = failed + excluded.failed, skipped = skipped + excluded.skipped, opted_out = opted_out + excluded.opted_out`,
		shop, campaign, d.sent, d.delivered, d.read, d.failed, d.skipped, d.optedOut)
	if err != nil {
		return fmt.Errorf("count campaign messages: %w", err)
	}
	return nil
}

// insertOutcome writes a message's outcome row, once: a row of that id
// already there (a replayed event, or the log's one outcome per message)
// changes nothing.
func insertOutcome(ctx context.Context, tx *sql.Tx, ref domain.MessageRef, o outcomeRow, pos eventlog.Position) error {
	last := o.status
	switch {
	case o.failed.Valid:
		last = domain.MessageStatusFailed
	case o.opened.Valid:
		last = domain.MessageStatusRead
	case o.delivered.Valid:
		last = domain.MessageStatusDelivered
	}
	failedAt := sql.NullInt64{Int64: o.failedAt, Valid: o.failedAt != 0}
	code, title := o.code, ""
	if o.failed.Valid {
		failedAt, code, title = o.failed, o.carriedCode, o.carriedTitle
	}
	if o.opened.Valid && !o.delivered.Valid {
		o.delivered = o.opened // read implies delivered
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO message_log (shop_id, message_id, customer_id, source, last_status,
		delivered_at, opened_at, failed_at, error_code, error_title, updated_at, version, channel, intent, provider,
		provider_message_id, campaign_id, journey_id, enrollment_id, step, flow, sent_at, skipped_at, skip_reason, created_pos)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, message_id) DO NOTHING`,
		ref.ShopID, ref.MessageID, ref.CustomerID, ref.Channel, last, o.delivered, o.opened, failedAt, code, title,
		max(o.sentAt, o.failedAt, o.skippedAt), pos, ref.Channel, ref.Intent, o.provider, o.providerID, ref.CampaignID, ref.JourneyID,
		ref.EnrollmentID, ref.Step, ref.Flow, sql.NullInt64{Int64: o.sentAt, Valid: o.sentAt != 0},
		sql.NullInt64{Int64: o.skippedAt, Valid: o.skippedAt != 0}, o.reason, pos)
	if err != nil {
		return fmt.Errorf("record message outcome: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	var d countDelta
	switch o.status {
	case domain.MessageStatusSent:
		d.sent = 1
	case domain.MessageStatusFailed:
		d.failed = 1
	case StatusSkipped:
		d.skipped = 1
		if o.reason == domain.SkipNoConsent {
			d.optedOut = 1
		}
	}
	if o.delivered.Valid {
		d.delivered = 1
	}
	if o.opened.Valid {
		d.read = 1
	}
	if o.failed.Valid && o.status != domain.MessageStatusFailed {
		d.failed++
	}
	return bump(ctx, tx, ref.ShopID, ref.CampaignID, d)
}

// applyOutcome records a message's outcome. Statuses the provider
// reported before a sent message was recorded were kept under the
// provider's id: that row is folded into the message's and removed.
func applyOutcome(ctx context.Context, tx *sql.Tx, o *domain.MessageOutcome, pos eventlog.Position) error {
	at := o.At.UnixMicro()
	switch o.Outcome {
	case domain.OutcomeFailed:
		return insertOutcome(ctx, tx, o.MessageRef, outcomeRow{status: domain.MessageStatusFailed, provider: o.Provider,
			failedAt: at, code: o.ErrorCode}, pos)
	case domain.OutcomeSkipped:
		return insertOutcome(ctx, tx, o.MessageRef, outcomeRow{status: StatusSkipped, skippedAt: at, reason: o.SkipReason}, pos)
	}
	row := outcomeRow{status: domain.MessageStatusSent, provider: o.Provider, providerID: o.ProviderMessageID, sentAt: at}
	var exists int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM message_log WHERE shop_id = ? AND message_id = ?`, o.ShopID, o.MessageID).Scan(&exists)
	if err == nil {
		return nil // applied already
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("find message: %w", err)
	}
	if o.ProviderMessageID != "" && o.ProviderMessageID != o.MessageID {
		err := tx.QueryRowContext(ctx, `DELETE FROM message_log WHERE shop_id = ? AND message_id = ? AND channel = ''
			RETURNING delivered_at, opened_at, failed_at, error_code, error_title`, o.ShopID, o.ProviderMessageID).
			Scan(&row.delivered, &row.opened, &row.failed, &row.carriedCode, &row.carriedTitle)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("fold earlier statuses: %w", err)
		}
	}
	return insertOutcome(ctx, tx, o.MessageRef, row, pos)
}

// applyOwnStatus lands a status report on the message the service sent
// with that provider id; done is false when the service sent no such
// message (the report is then kept under the provider's id). Read implies
// delivered; each first report of a kind counts once for the campaign.
func applyOwnStatus(ctx context.Context, tx *sql.Tx, ev *domain.MessageStatusReported, pos eventlog.Position) (bool, error) {
	var id, campaign string
	var delivered, opened, failed bool
	var version int64
	err := tx.QueryRowContext(ctx, `SELECT message_id, campaign_id, delivered_at IS NOT NULL, opened_at IS NOT NULL,
		failed_at IS NOT NULL, version FROM message_log WHERE shop_id = ? AND provider_message_id = ? AND provider_message_id <> '' LIMIT 1`, ev.ShopID, ev.MessageID).
		Scan(&id, &campaign, &delivered, &opened, &failed, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find message by provider id: %w", err)
	}
	if version >= int64(pos) {
		return true, nil // applied already
	}
	at := ev.At.UnixMicro()
	var d countDelta
	var setDelivered, setOpened, setFailed any
	code, title := "", ""
	switch ev.Status {
	case domain.MessageStatusDelivered:
		setDelivered = at
		if !delivered {
			d.delivered = 1
		}
	case domain.MessageStatusRead:
		setDelivered, setOpened = at, at
		if !delivered {
			d.delivered = 1
		}
		if !opened {
			d.read = 1
		}
	case domain.MessageStatusFailed:
		setFailed, code, title = at, ev.ErrorCode, ev.ErrorTitle
		if !failed {
			d.failed = 1
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE message_log SET
			delivered_at = COALESCE(delivered_at, ?), opened_at = COALESCE(opened_at, ?),
			error_code = CASE WHEN failed_at IS NULL AND ? IS NOT NULL THEN ? ELSE error_code END,
			error_title = CASE WHEN failed_at IS NULL AND ? IS NOT NULL THEN ? ELSE error_title END,
			failed_at = COALESCE(failed_at, ?),
			last_status = ?, updated_at = ?, version = ?
		WHERE shop_id = ? AND message_id = ?`,
		setDelivered, setOpened, setFailed, code, setFailed, title, setFailed, ev.Status, at, pos, ev.ShopID, id)
	if err != nil {
		return false, fmt.Errorf("apply status: %w", err)
	}
	return true, bump(ctx, tx, ev.ShopID, campaign, d)
}
