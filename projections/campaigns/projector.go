package campaigns

import (
	"context"
	"database/sql"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "campaigns"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE audiences (
	audience_id TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	name        TEXT NOT NULL,
	filters     TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	created_pos INTEGER NOT NULL,
	version     INTEGER NOT NULL
);
CREATE INDEX audiences_shop_created ON audiences (shop_id, created_pos, audience_id);
CREATE TABLE campaigns (
	campaign_id TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	name        TEXT NOT NULL,
	audience_id TEXT NOT NULL,
	channel     TEXT NOT NULL,
	template_id TEXT NOT NULL,
	status      TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	launched_at INTEGER NOT NULL DEFAULT 0,
	created_pos INTEGER NOT NULL,
	version     INTEGER NOT NULL
);
CREATE INDEX campaigns_shop_created ON campaigns (shop_id, created_pos, campaign_id);
CREATE INDEX campaigns_shop_status ON campaigns (shop_id, status, created_pos, campaign_id);
`}, {Version: 2, SQL: `
ALTER TABLE campaigns ADD COLUMN paused_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE campaigns ADD COLUMN paused_at INTEGER NOT NULL DEFAULT 0;
`}, {Version: 3, SQL: `
ALTER TABLE campaigns ADD COLUMN content TEXT NOT NULL DEFAULT '';
ALTER TABLE campaigns ADD COLUMN template_name TEXT NOT NULL DEFAULT '';
ALTER TABLE campaigns ADD COLUMN template_language TEXT NOT NULL DEFAULT '';
ALTER TABLE campaigns ADD COLUMN recipients INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN skipped_no_consent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN skipped_no_address INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN snapshot_parts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN completed_at INTEGER NOT NULL DEFAULT 0;
`}}

// Projector returns the audiences and campaigns projector; codec decodes
// the events.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
	}
}

// cases fold each event type; each write is guarded by the row's version so a
// replayed event changes nothing.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("audiences"), readmodel.ShopRows("campaigns"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AudienceCreated, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		_, err := tx.ExecContext(ctx, `INSERT INTO audiences (audience_id, shop_id, name, filters, created_at, created_pos, version)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (audience_id) DO NOTHING`,
			ev.AudienceID, ev.ShopID, ev.Name, readmodel.JSONText(ev.Filters, "{}"), readmodel.Micros(ev.CreatedAt), pos, pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignCreated, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		content := ""
		if ev.Content != nil {
			content = readmodel.JSONText(ev.Content, "")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO campaigns (campaign_id, shop_id, name, audience_id, channel, template_id,
			status, created_at, updated_at, created_pos, version, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (campaign_id) DO NOTHING`,
			ev.CampaignID, ev.ShopID, ev.Name, ev.AudienceID, ev.Channel, ev.TemplateID, domain.CampaignStatusDraft,
			readmodel.Micros(ev.CreatedAt), readmodel.Micros(ev.CreatedAt), pos, pos, content)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignLaunched, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		at := readmodel.Micros(ev.LaunchedAt)
		_, err := tx.ExecContext(ctx, `UPDATE campaigns SET status = ?, launched_at = ?, updated_at = ?, version = ?,
			template_name = ?, template_language = ? WHERE campaign_id = ? AND shop_id = ? AND version < ?`,
			ev.Status, at, at, pos, ev.TemplateName, ev.TemplateLanguage, ev.CampaignID, ev.ShopID, pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignAudienceSnapshotted, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		_, err := tx.ExecContext(ctx, `UPDATE campaigns SET recipients = ?, skipped_no_consent = skipped_no_consent + ?,
			skipped_no_address = skipped_no_address + ?, snapshot_parts = snapshot_parts + 1, version = ?
			WHERE campaign_id = ? AND shop_id = ? AND version < ?`,
			ev.TotalRecipients, ev.SkippedConsent, ev.SkippedAddress, pos, ev.CampaignID, ev.ShopID, pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignCompleted, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		at := readmodel.Micros(ev.CompletedAt)
		_, err := tx.ExecContext(ctx, `UPDATE campaigns SET status = ?, completed_at = ?, updated_at = ?, version = ?
			WHERE campaign_id = ? AND shop_id = ? AND version < ?`, domain.CampaignStatusCompleted, at, at, pos, ev.CampaignID, ev.ShopID, pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignPaused, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		at := readmodel.Micros(ev.PausedAt)
		err := setStatus(ctx, tx, ev.CampaignID, ev.ShopID, domain.CampaignStatusPaused, ev.Reason, at, at, pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignResumed, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		err := setStatus(ctx, tx, ev.CampaignID, ev.ShopID, ev.Status, "", 0, readmodel.Micros(ev.ResumedAt), pos)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignApprovalGranted, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		err := setStatus(ctx, tx, ev.CampaignID, ev.ShopID, ev.Status, "", 0, readmodel.Micros(ev.GrantedAt), pos)
		return err
	}),
)

// setStatus moves a campaign to status with its pause reason and time
// ("" and 0 unless paused).
func setStatus(ctx context.Context, tx *sql.Tx, id, shop, status, reason string, pausedAt, at, pos int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE campaigns SET status = ?, paused_reason = ?, paused_at = ?, updated_at = ?, version = ?
		WHERE campaign_id = ? AND shop_id = ? AND version < ?`, status, reason, pausedAt, at, pos, id, shop, pos)
	return err
}
