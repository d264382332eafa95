// Package journeys is the read model of journeys and their enrollments,
// and the enrollment reactor: an active journey enrolls the customer of
// each commerce event of its trigger topic.
package journeys

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

// Name is the projector's stable name.
const Name = "journeys"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE journeys (
	journey_id    TEXT PRIMARY KEY,
	shop_id       TEXT NOT NULL,
	name          TEXT NOT NULL,
	trigger_topic TEXT NOT NULL,
	steps         TEXT NOT NULL DEFAULT '[]',
	allow_reentry INTEGER NOT NULL DEFAULT 0,
	status        TEXT NOT NULL,
	enrollments   INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	position      INTEGER NOT NULL
);
CREATE INDEX journeys_shop_position ON journeys (shop_id, position);
CREATE INDEX journeys_shop_trigger ON journeys (shop_id, trigger_topic, status);
CREATE TABLE journey_enrollments (
	enrollment_id    TEXT PRIMARY KEY,
	shop_id          TEXT NOT NULL,
	journey_id       TEXT NOT NULL,
	customer_id      TEXT NOT NULL,
	status           TEXT NOT NULL,
	trigger_event_id TEXT NOT NULL,
	trigger_topic    TEXT NOT NULL,
	enrolled_at      INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	position         INTEGER NOT NULL
);
CREATE INDEX journey_enrollments_journey ON journey_enrollments (shop_id, journey_id, position);
`}, {Version: 2, SQL: `
ALTER TABLE journeys ADD COLUMN paused_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE journeys ADD COLUMN paused_at INTEGER NOT NULL DEFAULT 0;
`}}

// Types are the events the projector folds: the journey events, and the
// commerce events that carry a topic and a customer (the triggers).
var Types = []string{"ShopErased", "JourneyEnrollmentExited", "JourneyCreated", "JourneyEnrollmentStarted", "JourneyPaused", "JourneyResumed", "CustomerCreated", "OrderRecorded", "CheckoutRecorded", "SubscriptionContractRecorded"}

// Enroll asks for the enrollment of a customer in a journey (the
// EnrollInJourney command). It must be idempotent: the reactor calls it
// again when an event is redelivered or the read model is rebuilt.
type Enroll func(ctx context.Context, in domain.Enrollment) error

// Projector returns the journeys projector. With enroll nil it only keeps
// the read model (no reactor).
//
// The reactor runs inside the projector: when a trigger event is handled,
// the journeys table holds exactly the journeys created before it (the
// log is applied in order), so a trigger that happened before a journey
// existed enrolls nobody; the query also compares positions to say so.
// enroll appends to the event log from inside the read-model transaction:
// acceptable because the append is idempotent (deterministic event id,
// once-per-customer decided on the enrollment stream), so a transaction
// that rolls back and is retried appends nothing twice.
func Projector(codec *envelope.Codec, enroll Enroll) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      Types,
		Handle: handle(projections.Decoding(codec, Types, func(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded) error {
			return apply(ctx, tx, e, d, enroll)
		})),
	}
}

// triggerTypes are the events that may enroll a customer.
var triggerTypes = map[string]bool{"CustomerCreated": true, "OrderRecorded": true, "CheckoutRecorded": true, "SubscriptionContractRecorded": true}

// handle passes a trigger event over without decoding it when its shop has
// no journey that was active before it: the commerce events flow through
// here at the ingestion rate, and most shops have no journey for most of
// them.
func handle(decoded func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error) func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
	return func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
		if triggerTypes[e.Type] {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM journeys WHERE shop_id = ? AND status = ? AND position < ? LIMIT 1`,
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

func apply(ctx context.Context, tx *sql.Tx, e *eventlog.Event, d envelope.Decoded, enroll Enroll) error {
	pos := int64(e.Position)
	switch ev := d.Event.(type) {
	case *domain.ShopErased:
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("journey_enrollments"), readmodel.ShopRows("journeys"))
	case *domain.JourneyCreated:
		_, err := tx.ExecContext(ctx, `INSERT INTO journeys (journey_id, shop_id, name, trigger_topic, steps, allow_reentry, status,
		created_at, updated_at, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (journey_id) DO NOTHING`,
			ev.JourneyID, ev.ShopID, ev.Name, ev.Trigger, readmodel.JSONText(ev.Steps, "[]"), ev.AllowReentry, ev.Status,
			readmodel.Micros(ev.CreatedAt), readmodel.Micros(ev.CreatedAt), pos)
		return err
	case *domain.JourneyEnrollmentStarted:
		return applyEnrollment(ctx, tx, ev, pos)
	case *domain.JourneyEnrollmentExited:
		_, err := tx.ExecContext(ctx, `UPDATE journey_enrollments SET status = ?, updated_at = ?, position = ? WHERE enrollment_id = ? AND shop_id = ?`,
			domain.EnrollmentExited, readmodel.Micros(ev.ExitedAt), pos, ev.EnrollmentID, ev.ShopID)
		return err
	case *domain.JourneyPaused:
		at := readmodel.Micros(ev.PausedAt)
		_, err := tx.ExecContext(ctx, `UPDATE journeys SET status = ?, paused_reason = ?, paused_at = ?, updated_at = ?
		WHERE journey_id = ? AND shop_id = ?`, domain.JourneyStatusPaused, ev.Reason, at, at, ev.JourneyID, ev.ShopID)
		return err
	case *domain.JourneyResumed:
		_, err := tx.ExecContext(ctx, `UPDATE journeys SET status = ?, paused_reason = '', paused_at = 0, updated_at = ?
		WHERE journey_id = ? AND shop_id = ?`, domain.JourneyStatusActive, readmodel.Micros(ev.ResumedAt), ev.JourneyID, ev.ShopID)
		return err
	case *domain.CustomerCreated:
		return react(ctx, tx, e, ev.ShopID, "customers/create", ev.CustomerID, enroll)
	case *domain.OrderRecorded:
		if ev.Stale {
			return nil
		}
		return react(ctx, tx, e, ev.ShopID, ev.Topic, ev.CustomerID, enroll)
	case *domain.CheckoutRecorded:
		if ev.Stale {
			return nil
		}
		return react(ctx, tx, e, ev.ShopID, ev.Topic, ev.CustomerID, enroll)
	case *domain.SubscriptionContractRecorded:
		return react(ctx, tx, e, ev.ShopID, ev.Topic, ev.CustomerID, enroll)
	}
	return nil
}

func applyEnrollment(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentStarted, pos int64) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO journey_enrollments (enrollment_id, shop_id, journey_id, customer_id, status,
	trigger_event_id, trigger_topic, enrolled_at, updated_at, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (enrollment_id) DO NOTHING`,
		ev.EnrollmentID, ev.ShopID, ev.JourneyID, ev.CustomerID, domain.EnrollmentActive, ev.TriggerEventID, ev.TriggerTopic,
		readmodel.Micros(ev.EnrolledAt), readmodel.Micros(ev.EnrolledAt), pos)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // replayed
	}
	_, err = tx.ExecContext(ctx, `UPDATE journeys SET enrollments = enrollments + 1 WHERE journey_id = ?`, ev.JourneyID)
	return err
}

// react enrolls the customer of a trigger event in every active journey of
// the shop with that trigger created before the event.
func react(ctx context.Context, tx *sql.Tx, e *eventlog.Event, shop, topic, customer string, enroll Enroll) error {
	if enroll == nil || customer == "" || topic == "" {
		return nil // a guest: nobody to enroll
	}
	rows, err := tx.QueryContext(ctx, `SELECT journey_id, allow_reentry FROM journeys
	WHERE shop_id = ? AND trigger_topic = ? AND status = ? AND position < ? ORDER BY position`,
		shop, topic, domain.JourneyStatusActive, int64(e.Position))
	if err != nil {
		return fmt.Errorf("journeys of %s: %w", topic, err)
	}
	type match struct {
		id      string
		reentry bool
	}
	var matches []match
	for rows.Next() {
		var m match
		if err := rows.Scan(&m.id, &m.reentry); err != nil {
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
			TriggerEventID: e.ID.String(), TriggerTopic: topic, AllowReentry: m.reentry}); err != nil {
			if domain.ErrorCode(err) == domain.CodeInvalid {
				continue // ids the enrollment rules reject: retrying cannot help
			}
			return fmt.Errorf("enroll in %s: %w", m.id, err)
		}
	}
	return nil
}
