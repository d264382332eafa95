// Package journeys is the read model of journeys and their enrollments,
// and of the shops' settings of the built-in flows (domain.Flows).
// Who enrolls is decided by the enrollment reactor (projections/enrollment),
// not here: this projector issues no command, so a replay may rebuild it.
package journeys

import (
	"context"
	"database/sql"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
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
`}, {Version: 3, SQL: `
ALTER TABLE journeys ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE journey_enrollments ADD COLUMN steps_version INTEGER NOT NULL DEFAULT 1;
CREATE TABLE journey_versions (
	journey_id TEXT NOT NULL,
	version    INTEGER NOT NULL,
	shop_id    TEXT NOT NULL,
	steps      TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (journey_id, version)
);
CREATE INDEX journey_versions_shop ON journey_versions (shop_id);
INSERT INTO journey_versions (journey_id, version, shop_id, steps, created_at)
	SELECT journey_id, 1, shop_id, steps, created_at FROM journeys;
`}, {Version: 4, SQL: `
CREATE TABLE flow_settings (
	shop_id       TEXT NOT NULL,
	flow          TEXT NOT NULL,
	settings      TEXT NOT NULL,
	configured_at INTEGER NOT NULL,
	PRIMARY KEY (shop_id, flow)
);
`}}

// Projector returns the journeys projector, a read model only: the
// enrollments are decided by the enrollment reactor (projections/enrollment)
// and folded here from the JourneyEnrollmentStarted events it records.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
	}
}

var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("journey_enrollments"), readmodel.ShopRows("journey_versions"),
			readmodel.ShopRows("journeys"), readmodel.ShopRows("flow_settings"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyCreated, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO journeys (journey_id, shop_id, name, trigger_topic, steps, allow_reentry, status,
		created_at, updated_at, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (journey_id) DO NOTHING`,
			ev.JourneyID, ev.ShopID, ev.Name, ev.Trigger, readmodel.JSONText(ev.Steps, "[]"), ev.AllowReentry, ev.Status,
			readmodel.Micros(ev.CreatedAt), readmodel.Micros(ev.CreatedAt), int64(e.Position))
		if err != nil {
			return err
		}
		return addVersion(ctx, tx, ev.ShopID, ev.JourneyID, 1, ev.Steps, ev.CreatedAt)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyUpdated, _ *projections.DecodedEvent) error {
		// A journey leaving paused (archived) forgets why it was paused.
		_, err := tx.ExecContext(ctx, `UPDATE journeys SET name = ?, steps = ?, allow_reentry = ?, status = ?, version = ?, updated_at = ?,
		paused_reason = CASE WHEN ? = 'paused' THEN paused_reason ELSE '' END, paused_at = CASE WHEN ? = 'paused' THEN paused_at ELSE 0 END
		WHERE journey_id = ? AND shop_id = ? AND version < ?`,
			ev.Name, readmodel.JSONText(ev.Steps, "[]"), ev.AllowReentry, ev.Status, ev.Version, readmodel.Micros(ev.UpdatedAt),
			ev.Status, ev.Status, ev.JourneyID, ev.ShopID, ev.Version)
		if err != nil {
			return err
		}
		return addVersion(ctx, tx, ev.ShopID, ev.JourneyID, ev.Version, ev.Steps, ev.UpdatedAt)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentStarted, e *projections.DecodedEvent) error {
		return applyEnrollment(ctx, tx, ev, int64(e.Position))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentExited, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE journey_enrollments SET status = ?, updated_at = ?, position = ? WHERE enrollment_id = ? AND shop_id = ?`,
			domain.EnrollmentExited, readmodel.Micros(ev.ExitedAt), int64(e.Position), ev.EnrollmentID, ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentCompleted, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE journey_enrollments SET status = ?, updated_at = ?, position = ? WHERE enrollment_id = ? AND shop_id = ?`,
			domain.EnrollmentCompleted, readmodel.Micros(ev.CompletedAt), int64(e.Position), ev.EnrollmentID, ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyPaused, _ *projections.DecodedEvent) error {
		at := readmodel.Micros(ev.PausedAt)
		_, err := tx.ExecContext(ctx, `UPDATE journeys SET status = ?, paused_reason = ?, paused_at = ?, updated_at = ?
		WHERE journey_id = ? AND shop_id = ?`, domain.JourneyStatusPaused, ev.Reason, at, at, ev.JourneyID, ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyResumed, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE journeys SET status = ?, paused_reason = '', paused_at = 0, updated_at = ?
		WHERE journey_id = ? AND shop_id = ?`, domain.JourneyStatusActive, readmodel.Micros(ev.ResumedAt), ev.JourneyID, ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.FlowConfigured, _ *projections.DecodedEvent) error {
		// Settings hold every setting after the edit: the last one wins.
		_, err := tx.ExecContext(ctx, `INSERT INTO flow_settings (shop_id, flow, settings, configured_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (shop_id, flow) DO UPDATE SET settings = excluded.settings, configured_at = excluded.configured_at`,
			ev.ShopID, ev.Flow, readmodel.JSONText(ev.Settings, "{}"), readmodel.Micros(ev.ConfiguredAt))
		return err
	}),
)

// addVersion keeps the steps of one version of a journey, for the step
// runner (Queries.Steps): enrollments run the version they entered with.
func addVersion(ctx context.Context, tx *sql.Tx, shop, journey string, version int, steps []domain.JourneyStep, at time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO journey_versions (journey_id, version, shop_id, steps, created_at) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (journey_id, version) DO NOTHING`, journey, version, shop, readmodel.JSONText(steps, "[]"), readmodel.Micros(at))
	return err
}

func applyEnrollment(ctx context.Context, tx *sql.Tx, ev *domain.JourneyEnrollmentStarted, pos int64) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO journey_enrollments (enrollment_id, shop_id, journey_id, customer_id, status,
	trigger_event_id, trigger_topic, enrolled_at, updated_at, position, steps_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (enrollment_id) DO NOTHING`,
		ev.EnrollmentID, ev.ShopID, ev.JourneyID, ev.CustomerID, domain.EnrollmentActive, ev.TriggerEventID, ev.TriggerTopic,
		readmodel.Micros(ev.EnrolledAt), readmodel.Micros(ev.EnrolledAt), pos, ev.Version())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // replayed
	}
	_, err = tx.ExecContext(ctx, `UPDATE journeys SET enrollments = enrollments + 1 WHERE journey_id = ?`, ev.JourneyID)
	return err
}
