// Package anomalies is the anomaly reactor (issue 18, point 1): it raises
// and resolves the shops' anomalies from the events that reveal them.
//
//   - WhatsAppTemplateStatusUpdated: PAUSED raises a P1 template_paused,
//     REJECTED (and DISABLED, when the platform sends it) a P1
//     template_rejected, under the key template:<template id>; APPROVED
//     resolves it.
//   - WhatsAppPhoneQualityUpdated, by its rating as received: YELLOW raises
//     a P2 number_quality_yellow (key quality_yellow:<display number>), RED
//     a P1 number_quality_red (key quality_red:<display number>) and
//     resolves the yellow one, GREEN resolves both.
//   - WebhookSubscriptionFailing raises a P2 webhook_subscription_failing
//     (key webhook_failing:<subscription id>), once per failing period;
//     WebhookSubscriptionRecovered resolves it. A disabling for failures or
//     410 Gone raises a P1 webhook_subscription_disabled (key
//     webhook_disabled:<subscription id>) and resolves the failing one; the
//     merchant's own disabling raises nothing and resolves the failing one;
//     an enabling or a deletion resolves both.
//   - DataExportAttemptFailed, when the attempt is within ExportWarning of
//     the request's 30-day deadline: a P1 data_request_export_failing (key
//     export:<request id>); GdprRequestCompleted resolves it.
//
// The brute-force alert, an operator anomaly, is raised by the
// authenticator's callback (app), not here.
//
// The cause of each command is the triggering event's id and position, so
// a redelivery, a retried batch, a restart from the checkpoint or a
// rebuild of the reactor records nothing twice (domain.Anomaly). Its only table, which data requests of
// which shop are due when (folded from CustomerDataRequested), is its own,
// so that the log being applied in order, an export failure always finds
// its request. Its stable name is "anomaly_raiser".
//
// It imports domain, envelope, projections and readmodel.
package anomalies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the reactor's stable name.
const Name = "anomaly_raiser"

// ExportWarning is how close to its deadline (domain.GDPRDeadline after
// the request) a failed export attempt raises an anomaly: the last seven
// of the thirty days, when the merchant still has time to act.
const ExportWarning = 7 * 24 * time.Hour

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE anomaly_data_requests (
	request_id TEXT PRIMARY KEY,
	shop_id    TEXT NOT NULL,
	due_at     INTEGER NOT NULL
);
CREATE INDEX anomaly_data_requests_shop ON anomaly_data_requests (shop_id);
`}}

// Raise raises an anomaly (the RaiseAnomaly command). It must be
// idempotent for a cause, as the command is.
type Raise func(ctx context.Context, d domain.AnomalyDraft) error

// Resolve resolves the open anomaly of a dedupe key, if any (the
// ResolveAnomaly command); idempotent for a cause.
type Resolve func(ctx context.Context, shopID, dedupeKey string, cause Trigger, reason string) error

// Trigger is the event that causes a raise or a resolution: its id (the
// cause) and its log position.
type Trigger struct {
	ID       string
	Position uint64
}

func triggerOf(e *projections.DecodedEvent) Trigger {
	return Trigger{ID: e.ID.String(), Position: uint64(e.Position)}
}

// Projector returns the anomaly reactor. raise and resolve append to the
// event log from inside the read-model transaction, as the template
// reactor does: acceptable because they are idempotent, so a transaction
// that rolls back and is retried appends nothing twice. A domain
// not-found (an erased shop) or validation error is skipped (retrying
// cannot help); any other error is retried by the runtime. Nil raise and
// resolve: the reactor only folds its table (listing names and tables).
func Projector(codec *envelope.Codec, raise Raise, resolve Resolve) projections.Projector {
	r := reactor{raise: raise, resolve: resolve}
	cases := r.fold()
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
	}
}

type reactor struct {
	raise   Raise
	resolve Resolve
}

func (r reactor) fold() projections.TxCases {
	return projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("anomaly_data_requests"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppTemplateStatusUpdated, e *projections.DecodedEvent) error {
			return r.template(ctx, ev, triggerOf(e))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppPhoneQualityUpdated, e *projections.DecodedEvent) error {
			return r.quality(ctx, ev, triggerOf(e))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionFailing, e *projections.DecodedEvent) error {
			return r.do(ctx, domain.AnomalyDraft{ShopID: ev.ShopID, Severity: domain.SeverityP2, Kind: domain.AnomalyWebhookFailing,
				Title: "Webhook deliveries keep failing",
				Summary: fmt.Sprintf("Deliveries to your webhook subscription %s have failed since %s. Unless one succeeds, "+
					"the subscription is disabled automatically at %s. Check that the endpoint is up and answers 2xx; "+
					"the delivery log shows each attempt's status.", ev.SubscriptionID, ev.FailingSince.UTC().Format(time.RFC3339),
					ev.DisableAt.UTC().Format(time.RFC3339)),
				Resources: []domain.AnomalyResource{{Type: "webhook_subscription", ID: ev.SubscriptionID}},
				DedupeKey: webhookFailingKey(ev.SubscriptionID), Cause: e.ID.String(), CausePosition: uint64(e.Position)})
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionRecovered, e *projections.DecodedEvent) error {
			return r.settle(ctx, ev.ShopID, webhookFailingKey(ev.SubscriptionID), triggerOf(e), "a delivery succeeded")
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionDisabled, e *projections.DecodedEvent) error {
			return r.webhookDisabled(ctx, ev, triggerOf(e))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionEnabled, e *projections.DecodedEvent) error {
			return r.settle(ctx, ev.ShopID, webhookFailingKey(ev.SubscriptionID), triggerOf(e), "enabled",
				webhookDisabledKey(ev.SubscriptionID))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WebhookSubscriptionDeleted, e *projections.DecodedEvent) error {
			return r.settle(ctx, ev.ShopID, webhookFailingKey(ev.SubscriptionID), triggerOf(e), "deleted",
				webhookDisabledKey(ev.SubscriptionID))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerDataRequested, e *projections.DecodedEvent) error {
			id := domain.GDPRRequestID(ev.ShopID, e.ID.String())
			_, err := tx.ExecContext(ctx, `INSERT INTO anomaly_data_requests (request_id, shop_id, due_at) VALUES (?, ?, ?)
			ON CONFLICT (request_id) DO NOTHING`, id, ev.ShopID, e.OccurredAt.UTC().Add(domain.GDPRDeadline).UnixMicro())
			if err != nil {
				return fmt.Errorf("data request %s: %w", id, err)
			}
			return nil
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.DataExportAttemptFailed, e *projections.DecodedEvent) error {
			return r.exportFailed(ctx, tx, ev, triggerOf(e))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.GdprRequestCompleted, e *projections.DecodedEvent) error {
			if ev.Kind != domain.GDPRKindDataRequest {
				return nil
			}
			return r.settle(ctx, ev.ShopID, exportKey(ev.RequestID), triggerOf(e), "the export was delivered")
		}),
	)
}

func webhookFailingKey(id string) string  { return "webhook_failing:" + id }
func webhookDisabledKey(id string) string { return "webhook_disabled:" + id }
func exportKey(id string) string          { return "export:" + id }

// TemplateKey, QualityYellowKey and QualityRedKey are the dedupe keys of
// a template's and a number's anomalies.
func TemplateKey(templateID string) string { return "template:" + templateID }

// QualityYellowKey is the dedupe key of a number's YELLOW anomaly.
func QualityYellowKey(display string) string { return "quality_yellow:" + display }

// QualityRedKey is the dedupe key of a number's RED anomaly.
func QualityRedKey(display string) string { return "quality_red:" + display }

func (r reactor) template(ctx context.Context, ev *domain.WhatsAppTemplateStatusUpdated, cause Trigger) error {
	if ev.TemplateID == "" {
		return nil
	}
	key := TemplateKey(ev.TemplateID)
	name := ev.Name
	if name == "" {
		name = ev.TemplateID
	}
	name = clip(name, 100)
	d := domain.AnomalyDraft{ShopID: ev.ShopID, Severity: domain.SeverityP1, DedupeKey: key, Cause: cause.ID, CausePosition: cause.Position,
		Resources: []domain.AnomalyResource{{Type: "template", ID: ev.TemplateID}}}
	switch {
	case ev.State == domain.TemplateApproved:
		return r.settle(ctx, ev.ShopID, key, cause, "the template was approved")
	case ev.State == domain.TemplatePaused:
		d.Kind = domain.AnomalyTemplatePaused
		d.Title = fmt.Sprintf("WhatsApp template “%s” was paused by the platform", name)
		d.Summary = fmt.Sprintf("WhatsApp paused the message template “%s” (%s), usually because recipients reported or blocked its "+
			"messages. Every campaign and journey sending it has been paused automatically. Review the template's content "+
			"and audience; when WhatsApp approves it again, the campaigns and journeys it paused resume on their own.",
			name, ev.TemplateID)
	case ev.State == domain.TemplateRejected || strings.EqualFold(ev.Event, "DISABLED"):
		d.Kind = domain.AnomalyTemplateRejected
		verb := "rejected"
		if ev.State != domain.TemplateRejected {
			verb = "disabled"
		}
		d.Title = fmt.Sprintf("WhatsApp template “%s” was %s by the platform", name, verb)
		d.Summary = fmt.Sprintf("WhatsApp %s the message template “%s” (%s). Every campaign and journey sending it has been "+
			"paused automatically and cannot send it. Edit the template to meet WhatsApp's policies and submit it again, "+
			"or switch the campaigns and journeys to another approved template.", verb, name, ev.TemplateID)
		if ev.Reason != "" && !strings.EqualFold(ev.Reason, "NONE") {
			d.Summary += " Reason given: " + clip(ev.Reason, 200) + "."
		}
	default:
		return nil
	}
	return r.do(ctx, d)
}

func (r reactor) quality(ctx context.Context, ev *domain.WhatsAppPhoneQualityUpdated, cause Trigger) error {
	number := ev.DisplayPhoneNumber
	if number == "" {
		return nil
	}
	res := []domain.AnomalyResource{{Type: "phone_number", ID: number}}
	switch ev.Rating {
	case domain.QualityYellow:
		return r.do(ctx, domain.AnomalyDraft{ShopID: ev.ShopID, Severity: domain.SeverityP2, Kind: domain.AnomalyNumberQualityYellow,
			Title: fmt.Sprintf("WhatsApp number %s dropped to YELLOW quality", number),
			Summary: "Recipients have been blocking or reporting recent messages from this number. Its daily send rate is " +
				"halved automatically until the quality recovers. Investigate: check which campaigns and journeys sent " +
				"lately, their audiences and opt-ins, and their frequency; a further drop to RED stops sending on the number.",
			Resources: res, DedupeKey: QualityYellowKey(number), Cause: cause.ID, CausePosition: cause.Position})
	case domain.QualityRed:
		err := r.do(ctx, domain.AnomalyDraft{ShopID: ev.ShopID, Severity: domain.SeverityP1, Kind: domain.AnomalyNumberQualityRed,
			Title: fmt.Sprintf("WhatsApp number %s dropped to RED quality: sending stopped", number),
			Summary: "Recipients have been blocking or reporting many messages from this number. Sending on it has stopped " +
				"to protect it from being restricted. Pause the campaigns and journeys that sent lately, review their " +
				"audiences and opt-ins, and wait for the quality to recover before sending again.",
			Resources: res, DedupeKey: QualityRedKey(number), Cause: cause.ID, CausePosition: cause.Position})
		if err != nil {
			return err
		}
		return r.settle(ctx, ev.ShopID, QualityYellowKey(number), cause, "the quality dropped to RED")
	case domain.QualityGreen:
		return r.settle(ctx, ev.ShopID, QualityYellowKey(number), cause, "the quality is GREEN again", QualityRedKey(number))
	}
	return nil
}

func (r reactor) webhookDisabled(ctx context.Context, ev *domain.WebhookSubscriptionDisabled, cause Trigger) error {
	if ev.Reason == domain.WebhookDisabledByMerchant {
		return r.settle(ctx, ev.ShopID, webhookFailingKey(ev.SubscriptionID), cause, "disabled by the merchant")
	}
	why := "its deliveries kept failing for the whole auto-disable period"
	if ev.Reason == domain.WebhookDisabledGone {
		why = "its endpoint answered 410 Gone"
	}
	err := r.do(ctx, domain.AnomalyDraft{ShopID: ev.ShopID, Severity: domain.SeverityP1, Kind: domain.AnomalyWebhookDisabled,
		Title: "A webhook subscription was disabled",
		Summary: fmt.Sprintf("Your webhook subscription %s was disabled automatically because %s. Events are still recorded "+
			"for it, undelivered. Fix the endpoint, enable the subscription again (PATCH enabled=true) and recover the "+
			"events missed meanwhile.", ev.SubscriptionID, why),
		Resources: []domain.AnomalyResource{{Type: "webhook_subscription", ID: ev.SubscriptionID}},
		DedupeKey: webhookDisabledKey(ev.SubscriptionID), Cause: cause.ID, CausePosition: cause.Position})
	if err != nil {
		return err
	}
	return r.settle(ctx, ev.ShopID, webhookFailingKey(ev.SubscriptionID), cause, "the subscription was disabled")
}

func (r reactor) exportFailed(ctx context.Context, tx *sql.Tx, ev *domain.DataExportAttemptFailed, cause Trigger) error {
	var due int64
	err := tx.QueryRowContext(ctx, `SELECT due_at FROM anomaly_data_requests WHERE request_id = ? AND shop_id = ?`,
		ev.RequestID, ev.ShopID).Scan(&due)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // not a data request this reactor saw (another kind, or an erased shop's)
	}
	if err != nil {
		return fmt.Errorf("data request %s: %w", ev.RequestID, err)
	}
	deadline := time.UnixMicro(due).UTC()
	if ev.AttemptedAt.Before(deadline.Add(-ExportWarning)) {
		return nil
	}
	return r.do(ctx, domain.AnomalyDraft{ShopID: ev.ShopID, Severity: domain.SeverityP1, Kind: domain.AnomalyExportFailing,
		Title: "A customer data export keeps failing near its legal deadline",
		Summary: fmt.Sprintf("The export of customer data request %s could not be delivered (attempt %d: %s). The request must "+
			"be answered by %s. Check the shop's privacy settings (data request URL or contact e-mail) so that the next "+
			"attempt succeeds.", ev.RequestID, ev.Attempt, clip(ev.Reason, 100), deadline.Format(time.RFC3339)),
		Resources: []domain.AnomalyResource{{Type: "data_request", ID: ev.RequestID}},
		DedupeKey: exportKey(ev.RequestID), Cause: cause.ID, CausePosition: cause.Position})
}

// do raises d, skipping what retrying cannot help.
func (r reactor) do(ctx context.Context, d domain.AnomalyDraft) error {
	if r.raise == nil {
		return nil
	}
	return skip(r.raise(ctx, d), d.Kind)
}

// settle resolves the open anomalies of keys (key first), if any.
func (r reactor) settle(ctx context.Context, shop, key string, cause Trigger, reason string, more ...string) error {
	if r.resolve == nil {
		return nil
	}
	for _, k := range append([]string{key}, more...) {
		if err := skip(r.resolve(ctx, shop, k, cause, reason), k); err != nil {
			return err
		}
	}
	return nil
}

func skip(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case domain.ErrorCode(err) == domain.CodeNotFound, domain.ErrorCode(err) == domain.CodeInvalid:
		return nil
	}
	return fmt.Errorf("anomaly %s: %w", what, err)
}

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
