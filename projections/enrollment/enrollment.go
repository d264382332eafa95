// Package enrollment is the journey enrollment reactor: an active journey
// enrolls the customer of each commerce event of its trigger topic, through
// the EnrollInJourney command keyed by the trigger event's id.
//
// Its projector (stable name "journey_enrollment") keeps one small table
// of its own, the journeys of each shop with their trigger, re-entry rule,
// status and steps version, folded from the journey events (an enrollment
// runs the steps version current at its trigger). The table is its own (not
// the journeys read model) so that, the log being applied in order, a
// trigger reaches exactly the journeys created before it and active as of
// it, whatever the other projectors' progress: a trigger that happened
// before a journey existed, or while it was paused, enrolls nobody. The
// command decides on the enrollment stream whether the customer may enroll
// (once per customer unless re-entry is allowed) and its event id derives
// from the journey and the trigger event: redelivery, a restart from the
// checkpoint or a rebuild from position 0 appends nothing twice. As a
// reactor it is never replayed.
//
// It imports domain, envelope, eventlog, projections and readmodel.
package enrollment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the reactor's stable name.
const Name = "journey_enrollment"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE enrollment_journeys (
	journey_id    TEXT PRIMARY KEY,
	shop_id       TEXT NOT NULL,
	trigger_topic TEXT NOT NULL,
	allow_reentry INTEGER NOT NULL,
	status        TEXT NOT NULL,
	position      INTEGER NOT NULL -- of the JourneyCreated event
);
CREATE INDEX enrollment_journeys_shop_trigger ON enrollment_journeys (shop_id, trigger_topic, status);
`}, {Version: 2, SQL: `
ALTER TABLE enrollment_journeys ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
`}}

// Enroll asks for the enrollment of a customer in a journey (the
// EnrollInJourney command). It must be idempotent: the reactor calls it
// again when an event is redelivered or the table is rebuilt. A domain
// validation error is skipped (retrying cannot help); any other error is
// retried by the runtime, then the trigger is parked.
type Enroll func(ctx context.Context, in domain.Enrollment) error

// Projector returns the enrollment reactor. enroll appends to the event log
// from inside the reactor's transaction: acceptable because it is
// idempotent, so a transaction that rolls back and is retried appends
// nothing twice. With enroll nil it folds its table and enrolls nobody
// (for listing names and tables only; never run it so).
func Projector(codec *envelope.Codec, enroll Enroll) projections.Projector {
	cases := fold(enroll)
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     skipIdle(cases.Handle(codec, nil)),
	}
}

func fold(enroll Enroll) projections.TxCases {
	return projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("enrollment_journeys"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyCreated, e *projections.DecodedEvent) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO enrollment_journeys (journey_id, shop_id, trigger_topic, allow_reentry, status, position)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (journey_id) DO NOTHING`,
				ev.JourneyID, ev.ShopID, ev.Trigger, ev.AllowReentry, ev.Status, int64(e.Position))
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyUpdated, _ *projections.DecodedEvent) error {
			// An edit: triggers after it enroll with its steps version
			// and re-entry rule, and an archived journey enrolls nobody.
			_, err := tx.ExecContext(ctx, `UPDATE enrollment_journeys SET status = ?, allow_reentry = ?, version = ?
			WHERE journey_id = ? AND shop_id = ? AND version < ?`, ev.Status, ev.AllowReentry, ev.Version, ev.JourneyID, ev.ShopID, ev.Version)
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyPaused, _ *projections.DecodedEvent) error {
			return setStatus(ctx, tx, ev.ShopID, ev.JourneyID, domain.JourneyStatusPaused)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyResumed, _ *projections.DecodedEvent) error {
			return setStatus(ctx, tx, ev.ShopID, ev.JourneyID, domain.JourneyStatusActive)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerCreated, e *projections.DecodedEvent) error {
			return react(ctx, tx, e, ev.ShopID, "customers/create", ev.CustomerID, enroll)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.OrderRecorded, e *projections.DecodedEvent) error {
			if ev.Stale {
				return nil
			}
			return react(ctx, tx, e, ev.ShopID, ev.Topic, ev.CustomerID, enroll)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CheckoutRecorded, e *projections.DecodedEvent) error {
			if ev.Stale {
				return nil
			}
			return react(ctx, tx, e, ev.ShopID, ev.Topic, ev.CustomerID, enroll)
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.SubscriptionContractRecorded, e *projections.DecodedEvent) error {
			return react(ctx, tx, e, ev.ShopID, ev.Topic, ev.CustomerID, enroll)
		}),
	)
}

func setStatus(ctx context.Context, tx *sql.Tx, shop, journey, status string) error {
	_, err := tx.ExecContext(ctx, `UPDATE enrollment_journeys SET status = ? WHERE journey_id = ? AND shop_id = ?`, status, journey, shop)
	return err
}

// triggerTypes are the events that may enroll a customer.
var triggerTypes = map[string]bool{"CustomerCreated": true, "OrderRecorded": true, "CheckoutRecorded": true, "SubscriptionContractRecorded": true}

// skipIdle passes a trigger event over without decoding it when its shop
// has no journey that was active before it: the commerce events flow
// through here at the ingestion rate, and most shops have no journey for
// most of them.
func skipIdle(decoded func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error) func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
	return func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
		if triggerTypes[e.Type] {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM enrollment_journeys WHERE shop_id = ? AND status = ? AND position < ? LIMIT 1`,
				e.ShopID, domain.JourneyStatusActive, int64(e.Position)).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("journeys of %s: %w", e.ShopID, err)
			}
		}
		return decoded(ctx, tx, e)
	}
}

// react enrolls the customer of a trigger event in every journey of the
// shop with that trigger, created before the event and active as of it, in
// the order they were created.
func react(ctx context.Context, tx *sql.Tx, e *projections.DecodedEvent, shop, topic, customer string, enroll Enroll) error {
	if enroll == nil || customer == "" || topic == "" {
		return nil // a guest: nobody to enroll
	}
	rows, err := tx.QueryContext(ctx, `SELECT journey_id, allow_reentry, version FROM enrollment_journeys
	WHERE shop_id = ? AND trigger_topic = ? AND status = ? AND position < ? ORDER BY position`,
		shop, topic, domain.JourneyStatusActive, int64(e.Position))
	if err != nil {
		return fmt.Errorf("journeys of %s: %w", topic, err)
	}
	type match struct {
		id      string
		reentry bool
		version int
	}
	var matches []match
	for rows.Next() {
		var m match
		if err := rows.Scan(&m.id, &m.reentry, &m.version); err != nil {
			rows.Close()
			return fmt.Errorf("journeys of %s: %w", topic, err)
		}
		matches = append(matches, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("journeys of %s: %w", topic, err)
	}
	for _, m := range matches {
		if err := enroll(ctx, domain.Enrollment{ShopID: shop, JourneyID: m.id, CustomerID: customer,
			TriggerEventID: e.ID.String(), TriggerTopic: topic, AllowReentry: m.reentry, StepsVersion: m.version}); err != nil {
			if domain.ErrorCode(err) == domain.CodeInvalid {
				continue // ids the enrollment rules reject: retrying cannot help
			}
			return fmt.Errorf("enroll in %s: %w", m.id, err)
		}
	}
	return nil
}
