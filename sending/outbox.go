package sending

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// OutboxName is the outbox reactor's stable name (its checkpoint in the
// sending store).
const OutboxName = "message_outbox"

// Outbox row states.
const (
	// StateQueued: to be sent at due_at.
	StateQueued = "queued"
	// StateHeld: its campaign is not sending (awaiting approval, paused):
	// queued again when it is.
	StateHeld = "held"
	// StateInFlight: claimed and being sent.
	StateInFlight = "in_flight"
	// StateInDoubt: left in flight by a crash; a WhatsApp message waits
	// for its status webhook until due_at, then is queued again.
	StateInDoubt = "in_doubt"
	// StateSettled: an in-doubt message whose status webhook arrived: it
	// was sent; its outcome is to be recorded.
	StateSettled = "settled"
	// StateDone: the outcome is recorded.
	StateDone = "done"
)

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE snd_campaigns (
	campaign_id       TEXT PRIMARY KEY,
	shop_id           TEXT NOT NULL,
	channel           TEXT NOT NULL,
	status            TEXT NOT NULL,
	template_id       TEXT NOT NULL DEFAULT '',
	template_name     TEXT NOT NULL DEFAULT '',
	template_language TEXT NOT NULL DEFAULT '',
	content           TEXT NOT NULL DEFAULT '',
	parts_expected    INTEGER NOT NULL DEFAULT 0,
	parts_received    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX snd_campaigns_shop ON snd_campaigns (shop_id);
CREATE TABLE snd_outbox (
	message_id          TEXT PRIMARY KEY,
	shop_id             TEXT NOT NULL,
	customer_id         TEXT NOT NULL,
	channel             TEXT NOT NULL,
	intent              TEXT NOT NULL,
	campaign_id         TEXT NOT NULL DEFAULT '',
	journey_id          TEXT NOT NULL DEFAULT '',
	enrollment_id       TEXT NOT NULL DEFAULT '',
	step                INTEGER NOT NULL DEFAULT 0,
	flow                TEXT NOT NULL DEFAULT '',
	state               TEXT NOT NULL,
	outcome             TEXT NOT NULL DEFAULT '',
	attempts            INTEGER NOT NULL DEFAULT 0,
	due_at              INTEGER NOT NULL,
	provider_message_id TEXT NOT NULL DEFAULT '',
	last_error          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX snd_outbox_due ON snd_outbox (due_at) WHERE state = 'queued';
CREATE INDEX snd_outbox_due_shop ON snd_outbox (shop_id, due_at, message_id) WHERE state = 'queued';
CREATE INDEX snd_outbox_campaign ON snd_outbox (campaign_id, state) WHERE campaign_id <> '';
CREATE INDEX snd_outbox_in_flight ON snd_outbox (state) WHERE state = 'in_flight';
CREATE INDEX snd_outbox_in_doubt ON snd_outbox (due_at) WHERE state = 'in_doubt';
CREATE INDEX snd_outbox_settled ON snd_outbox (message_id) WHERE state = 'settled';
CREATE INDEX snd_outbox_shop ON snd_outbox (shop_id);
`}, {Version: 2, SQL: `
-- When a WhatsApp message was sent (the daily allowance counts them), and
-- each shop's sending number: its tier and quality rating, and the last
-- quality event whose new allowance was announced.
ALTER TABLE snd_outbox ADD COLUMN sent_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX snd_outbox_whatsapp_sent ON snd_outbox (shop_id, sent_at) WHERE channel = 'whatsapp' AND outcome = 'sent';
CREATE TABLE snd_numbers (
	shop_id              TEXT PRIMARY KEY,
	display_phone_number TEXT NOT NULL,
	tier                 TEXT NOT NULL DEFAULT '',
	rating               TEXT NOT NULL DEFAULT '',
	event_id             TEXT NOT NULL,
	announced            TEXT NOT NULL DEFAULT ''
);
`}, {Version: 3, SQL: `
-- The journeys' enrollments the runner executes: the step to run next and
-- when (a wait is a due time: durable), and the content of the messages
-- of journeys' steps (a campaign's is its campaign's).
CREATE TABLE snd_enrollments (
	enrollment_id TEXT PRIMARY KEY,
	shop_id       TEXT NOT NULL,
	journey_id    TEXT NOT NULL,
	customer_id   TEXT NOT NULL,
	version       INTEGER NOT NULL,
	step          INTEGER NOT NULL DEFAULT 0,
	state         TEXT NOT NULL,
	reason        TEXT NOT NULL DEFAULT '',
	due_at        INTEGER NOT NULL,
	enrolled_at   INTEGER NOT NULL,
	position      INTEGER NOT NULL
);
CREATE INDEX snd_enrollments_due ON snd_enrollments (due_at) WHERE state = 'active';
CREATE INDEX snd_enrollments_finishing ON snd_enrollments (enrollment_id) WHERE state = 'finishing';
CREATE INDEX snd_enrollments_shop ON snd_enrollments (shop_id);
ALTER TABLE snd_outbox ADD COLUMN content TEXT NOT NULL DEFAULT '';
`}, flowMigration}

// outboxProjector returns the outbox reactor; committed is called after
// each transaction that applied an event (it wakes the dispatcher), with
// now the clock of due times.
func outboxProjector(codec *envelope.Codec, now func() int64, committed func()) projections.Projector {
	cases := projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("snd_campaigns"), readmodel.ShopRows("snd_outbox"),
				readmodel.ShopRows("snd_numbers"), readmodel.ShopRows("snd_enrollments"), readmodel.ShopRows("snd_flow_settings"),
				readmodel.ShopRows("snd_flow_runs"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationReplyRequested, e *projections.DecodedEvent) error {
			return queueReply(ctx, tx, ev, len(e.Redacted) > 0, now())
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
			// A reply's text and recipient leave the store; one not sent
			// yet is then skipped (its customer is not found).
			return exec(ctx, tx, `UPDATE snd_outbox SET content = '{}' WHERE shop_id = ? AND customer_id IN (?, ?)
				AND json_extract(content, '$.reply_to') IS NOT NULL`, ev.ShopID, ev.CustomerID, ev.MessagingCustomerID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.FlowConfigured, _ *projections.DecodedEvent) error {
			return configureFlow(ctx, tx, ev)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignCreated, _ *projections.DecodedEvent) error {
			content := ""
			if ev.Content != nil {
				content = readmodel.JSONText(ev.Content, "")
			}
			return exec(ctx, tx, `INSERT INTO snd_campaigns (campaign_id, shop_id, channel, status, template_id, content)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (campaign_id) DO NOTHING`,
				ev.CampaignID, ev.ShopID, ev.Channel, domain.CampaignStatusDraft, ev.TemplateID, content)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignLaunched, _ *projections.DecodedEvent) error {
			return exec(ctx, tx, `UPDATE snd_campaigns SET status = ?, template_name = ?, template_language = ? WHERE campaign_id = ?`,
				ev.Status, ev.TemplateName, ev.TemplateLanguage, ev.CampaignID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignAudienceSnapshotted, _ *projections.DecodedEvent) error {
			return snapshot(ctx, tx, ev, now())
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignPaused, _ *projections.DecodedEvent) error {
			return setStatus(ctx, tx, ev.CampaignID, domain.CampaignStatusPaused, now())
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignResumed, _ *projections.DecodedEvent) error {
			return setStatus(ctx, tx, ev.CampaignID, ev.Status, now())
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignApprovalGranted, _ *projections.DecodedEvent) error {
			return setStatus(ctx, tx, ev.CampaignID, ev.Status, now())
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignCompleted, _ *projections.DecodedEvent) error {
			return setStatus(ctx, tx, ev.CampaignID, domain.CampaignStatusCompleted, now())
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MessageOutcomesRecorded, _ *projections.DecodedEvent) error {
			for _, o := range ev.Outcomes {
				if err := done(ctx, tx, o.MessageID, o.Outcome, o.ProviderMessageID); err != nil {
					return err
				}
				if o.Flow != "" {
					// A store rebuilt from the log: the run's message went.
					if err := exec(ctx, tx, `UPDATE snd_flow_runs SET state = ? WHERE message_id = ? AND state = ?`, runDone,
						o.MessageID, runWaiting); err != nil {
						return err
					}
				}
			}
			return nil
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentStarted, e *projections.DecodedEvent) error {
			return exec(ctx, tx, `INSERT INTO snd_enrollments (enrollment_id, shop_id, journey_id, customer_id, version, state, due_at, enrolled_at,
				position) VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?) ON CONFLICT (enrollment_id) DO NOTHING`,
				ev.EnrollmentID, ev.ShopID, ev.JourneyID, ev.CustomerID, ev.Version(), now(), ev.EnrolledAt.UnixMicro(), int64(e.Position))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentExited, _ *projections.DecodedEvent) error {
			return exec(ctx, tx, `UPDATE snd_enrollments SET state = 'done', reason = ? WHERE enrollment_id = ?`, ev.Reason, ev.EnrollmentID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentCompleted, _ *projections.DecodedEvent) error {
			return exec(ctx, tx, `UPDATE snd_enrollments SET state = 'done' WHERE enrollment_id = ?`, ev.EnrollmentID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppPhoneQualityUpdated, e *projections.DecodedEvent) error {
			// The number's allowance changed: its waiting messages are
			// looked at again now.
			if err := exec(ctx, tx, `INSERT INTO snd_numbers (shop_id, display_phone_number, tier, rating, event_id) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (shop_id) DO UPDATE SET display_phone_number = excluded.display_phone_number,
					tier = CASE WHEN excluded.tier <> '' THEN excluded.tier ELSE snd_numbers.tier END,
					rating = CASE WHEN excluded.rating <> '' THEN excluded.rating ELSE snd_numbers.rating END,
					event_id = excluded.event_id`,
				ev.ShopID, ev.DisplayPhoneNumber, ev.CurrentLimit, ev.Rating, e.ID.String()); err != nil {
				return err
			}
			return exec(ctx, tx, `UPDATE snd_outbox SET due_at = MIN(due_at, ?) WHERE state = 'queued' AND shop_id = ? AND channel = 'whatsapp'`,
				now(), ev.ShopID)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MessageStatusReported, _ *projections.DecodedEvent) error {
			// A status carrying back a message id settles that message if
			// a crash left it in doubt.
			if !domain.HasPrefixID(ev.ClientReference, domain.PrefixMessage) {
				return nil
			}
			return exec(ctx, tx, `UPDATE snd_outbox SET state = ?, provider_message_id = ? WHERE message_id = ? AND shop_id = ?
				AND state IN (?, ?)`, StateSettled, ev.MessageID, ev.ClientReference, ev.ShopID, StateInFlight, StateInDoubt)
		}),
	)
	handle := cases.Handle(codec, nil)
	return projections.Projector{
		Name:       OutboxName,
		Migrations: migrations,
		Types:      append(cases.Types(), flowTriggerTypes...),
		Handle: func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
			if slices.Contains(flowTriggerTypes, e.Type) {
				return flowTrigger(ctx, tx, codec, e, now())
			}
			return handle(ctx, tx, e)
		},
		Committed: func(eventlog.Event) {
			if committed != nil {
				committed()
			}
		},
	}
}

// Outcomes of a done row: domain.OutcomeSent, OutcomeFailed, OutcomeSkipped.
const (
	outcomeSent    = domain.OutcomeSent
	outcomeFailed  = domain.OutcomeFailed
	outcomeSkipped = domain.OutcomeSkipped
)

func exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("%s: %w", strings.Fields(query)[0], err)
	}
	return nil
}

// setStatus moves a campaign to status: its queued messages are held
// while it is not sending, and queued again, due now, when it is.
func setStatus(ctx context.Context, tx *sql.Tx, campaign, status string, now int64) error {
	if err := exec(ctx, tx, `UPDATE snd_campaigns SET status = ? WHERE campaign_id = ?`, status, campaign); err != nil {
		return err
	}
	if status == domain.CampaignStatusSending {
		return exec(ctx, tx, `UPDATE snd_outbox SET state = ?, due_at = MAX(due_at, ?) WHERE campaign_id = ? AND campaign_id <> '' AND state = ?`,
			StateQueued, now, campaign, StateHeld)
	}
	return exec(ctx, tx, `UPDATE snd_outbox SET state = ? WHERE campaign_id = ? AND campaign_id <> '' AND state = ?`, StateHeld, campaign, StateQueued)
}

// done marks a message's outcome recorded (from the log, which is the
// record: the dispatcher marks its own sends too, this covers a crash
// between the record and the mark).
func done(ctx context.Context, tx *sql.Tx, id, outcome, providerID string) error {
	return exec(ctx, tx, `UPDATE snd_outbox SET state = ?, outcome = ?, provider_message_id = CASE WHEN ? <> '' THEN ? ELSE provider_message_id END
		WHERE message_id = ? AND state <> ?`, StateDone, outcome, providerID, providerID, id, StateDone)
}

// queueReply queues a conversation reply as a transactional WhatsApp
// text message, due now; a reply whose personal fields were erased before
// it was queued is not sent.
func queueReply(ctx context.Context, tx *sql.Tx, ev *domain.ConversationReplyRequested, redacted bool, now int64) error {
	if redacted || ev.To == "" || ev.Text == "" {
		return nil
	}
	c := journeyContent{MessageContent: domain.MessageContent{Text: ev.Text}, ReplyTo: ev.To}
	return exec(ctx, tx, `INSERT INTO snd_outbox (message_id, shop_id, customer_id, channel, intent, state, due_at, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`, ev.MessageID, ev.ShopID, ev.CustomerID,
		domain.ChannelWhatsApp, domain.IntentTransactional, StateQueued, now, readmodel.JSONText(c, "{}"))
}

// snapshot queues one message per recipient of a part of a campaign's
// audience snapshot, due now.
func snapshot(ctx context.Context, tx *sql.Tx, ev *domain.CampaignAudienceSnapshotted, now int64) error {
	var channel, status string
	err := tx.QueryRowContext(ctx, `SELECT channel, status FROM snd_campaigns WHERE campaign_id = ?`, ev.CampaignID).Scan(&channel, &status)
	if err != nil {
		return fmt.Errorf("campaign %s of a snapshot: %w", ev.CampaignID, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO snd_outbox (message_id, shop_id, customer_id, channel, intent, campaign_id, state, due_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`)
	if err != nil {
		return fmt.Errorf("queue a snapshot: %w", err)
	}
	defer stmt.Close()
	state := StateHeld
	if status == domain.CampaignStatusSending {
		state = StateQueued
	}
	for _, customer := range ev.Recipients {
		if _, err := stmt.ExecContext(ctx, domain.CampaignMessageID(ev.CampaignID, customer), ev.ShopID, customer, channel,
			domain.IntentMarketing, ev.CampaignID, state, now); err != nil {
			return fmt.Errorf("queue a snapshot: %w", err)
		}
	}
	return exec(ctx, tx, `UPDATE snd_campaigns SET parts_expected = ?, parts_received = parts_received + 1 WHERE campaign_id = ?`,
		ev.Parts, ev.CampaignID)
}
