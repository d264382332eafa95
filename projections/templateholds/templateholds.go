// Package templateholds is the template reactor: it holds campaigns and
// journeys on the state of the WhatsApp message templates they send. When
// a template is paused or rejected, every campaign and journey of the shop
// that uses it is paused; when it is approved, the campaigns and journeys
// it paused resume and the campaigns awaiting its approval are unblocked
// (the specification's "States and transitions").
//
// Its projector (stable name "template_holds") keeps one small table,
// which template each campaign and journey uses, folded from
// CampaignCreated and JourneyCreated, and on each
// WhatsAppTemplateStatusUpdated runs a command per user of the template.
// The table is its own (not the campaigns or journeys read model) so that,
// the log being applied in order, a template event reaches exactly the
// campaigns and journeys created before it, whatever the other projectors'
// progress. The commands decide on the aggregates' own streams whether
// anything changes (a draft is not paused, a merchant's pause is never
// auto-resumed) and remember the template events they handled, and their
// event ids derive from the template event and the target: redelivery,
// a restart from the checkpoint or a rebuild appends nothing twice.
//
// It imports domain, envelope, eventlog, projections and readmodel.
package templateholds

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name.
const Name = "template_holds"

// Kinds of template users.
const (
	KindCampaign = "campaign"
	KindJourney  = "journey"
)

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE template_users (
	shop_id   TEXT NOT NULL,
	template  TEXT NOT NULL,
	kind      TEXT NOT NULL,
	target_id TEXT NOT NULL,
	position  INTEGER NOT NULL,
	PRIMARY KEY (shop_id, template, target_id)
);
`}}

// Apply asks one campaign or journey (kind, id) of shop to react to a
// template change (the ApplyTemplateToCampaign or ApplyTemplateToJourney
// command). It must be idempotent: the reactor calls it again when an
// event is redelivered or the table is rebuilt. A domain not-found,
// conflict or validation error is skipped (retrying cannot help); any
// other error is retried by the runtime.
type Apply func(ctx context.Context, kind, shop, id string, change domain.TemplateChange) error

// Projector returns the template reactor. apply appends to the event log
// from inside the read-model transaction, as the enrollment reactor does:
// acceptable because it is idempotent, so a transaction that rolls back
// and is retried appends nothing twice.
func Projector(codec *envelope.Codec, apply Apply) projections.Projector {
	cases := fold(apply)
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
	}
}

func fold(apply Apply) projections.TxCases {
	return projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("template_users"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CampaignCreated, e *projections.DecodedEvent) error {
			if ev.Channel != domain.ChannelWhatsApp || ev.TemplateID == "" {
				return nil
			}
			return use(ctx, tx, ev.ShopID, ev.TemplateID, KindCampaign, ev.CampaignID, int64(e.Position))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyCreated, e *projections.DecodedEvent) error {
			for _, s := range ev.Steps {
				if s.Type == domain.StepSendMessage && s.Channel == domain.ChannelWhatsApp && s.Template != "" {
					if err := use(ctx, tx, ev.ShopID, s.Template, KindJourney, ev.JourneyID, int64(e.Position)); err != nil {
						return err
					}
				}
			}
			return nil
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyUpdated, e *projections.DecodedEvent) error {
			// An edit may add templates; rows of templates it dropped
			// stay, harmless: the journey decides (UsesTemplate) on its
			// current steps.
			for _, s := range ev.Steps {
				if s.Type == domain.StepSendMessage && s.Channel == domain.ChannelWhatsApp && s.Template != "" {
					if err := use(ctx, tx, ev.ShopID, s.Template, KindJourney, ev.JourneyID, int64(e.Position)); err != nil {
						return err
					}
				}
			}
			return nil
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppTemplateStatusUpdated, e *projections.DecodedEvent) error {
			return react(ctx, tx, &e.Event, ev, apply)
		}),
	)
}

func use(ctx context.Context, tx *sql.Tx, shop, template, kind, id string, pos int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO template_users (shop_id, template, kind, target_id, position) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (shop_id, template, target_id) DO NOTHING`, shop, template, kind, id, pos)
	if err != nil {
		return fmt.Errorf("template users of %s: %w", shop, err)
	}
	return nil
}

// target is a campaign or journey using a template.
type target struct{ kind, id string }

// react asks every campaign and journey of the shop that uses the
// template (by id, or by name for journey steps) to react to its new
// state, in the order they were created.
func react(ctx context.Context, tx *sql.Tx, e *eventlog.Event, ev *domain.WhatsAppTemplateStatusUpdated, apply Apply) error {
	switch ev.State {
	case domain.TemplateApproved, domain.TemplatePaused, domain.TemplateRejected:
	default:
		return nil
	}
	if apply == nil || ev.TemplateID == "" {
		return nil
	}
	names := []any{ev.ShopID, ev.TemplateID, ev.TemplateID}
	if ev.Name != "" {
		names[2] = ev.Name
	}
	rows, err := tx.QueryContext(ctx, `SELECT kind, target_id, MIN(position) AS p FROM template_users
	WHERE shop_id = ? AND template IN (?, ?) GROUP BY kind, target_id ORDER BY p, target_id`, names...)
	if err != nil {
		return fmt.Errorf("users of template %s: %w", ev.TemplateID, err)
	}
	var targets []target
	for rows.Next() {
		var t target
		var p int64
		if err := rows.Scan(&t.kind, &t.id, &p); err != nil {
			rows.Close()
			return fmt.Errorf("users of template %s: %w", ev.TemplateID, err)
		}
		targets = append(targets, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("users of template %s: %w", ev.TemplateID, err)
	}
	change := domain.TemplateChange{TemplateID: ev.TemplateID, Name: ev.Name, State: ev.State, EventID: e.ID.String()}
	for _, t := range targets {
		if err := apply(ctx, t.kind, ev.ShopID, t.id, change); err != nil {
			switch domain.ErrorCode(err) {
			case domain.CodeNotFound, domain.CodeConflict, domain.CodeInvalid:
				continue
			}
			return fmt.Errorf("%s %s on template %s: %w", t.kind, t.id, ev.TemplateID, err)
		}
	}
	return nil
}
