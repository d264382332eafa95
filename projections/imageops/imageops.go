// Package imageops is the read model of the image operations (issue 19).
//
// Its projector (stable name "imageops") keeps image_operations, one row
// per operation (ImageOperationRequested) with its status, attempts
// (ImageOperationStarted), result or failure (ImageOperationSucceeded,
// ImageOperationFailed) and timings. It serves GET /api/v1/images and the
// image workers' queue: the operations whose status is queued or
// processing are the work still to do, which the log alone decides, so a
// restart (or a replay) finds exactly the operations it has to finish. No
// personal data; the rows go with the shop (ShopErased).
//
// It imports domain, envelope, projections and readmodel.
package imageops

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
const Name = "imageops"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE image_operations (
	operation_id  TEXT PRIMARY KEY,
	shop_id       TEXT NOT NULL,
	kind          TEXT NOT NULL,
	status        TEXT NOT NULL,
	options       TEXT NOT NULL DEFAULT '{}',
	month         TEXT NOT NULL,
	credits       INTEGER NOT NULL,
	key_id        TEXT NOT NULL DEFAULT '',
	input         TEXT NOT NULL DEFAULT '{}',
	result        TEXT,
	engine        TEXT NOT NULL DEFAULT '',
	metadata      TEXT NOT NULL DEFAULT '{}',
	attempts      INTEGER NOT NULL DEFAULT 0,
	failure_code  TEXT NOT NULL DEFAULT '',
	failure       TEXT NOT NULL DEFAULT '',
	run_ms        INTEGER,
	requested_at  INTEGER NOT NULL,
	started_at    INTEGER,
	finished_at   INTEGER,
	position      INTEGER NOT NULL
);
CREATE INDEX image_operations_shop ON image_operations (shop_id, position, operation_id);
CREATE INDEX image_operations_pending ON image_operations (position) WHERE status IN ('queued', 'processing');
`}}

// Projector returns the image operations' projector; changed, when set, is
// called after each committed event of an operation (the workers wake on a
// request, Prefer: wait on an outcome).
func Projector(codec *envelope.Codec, changed func()) projections.Projector {
	p := projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.WrapErrors("image operations", apply)
		}),
	}
	if changed != nil {
		p.Committed = func(eventlog.Event) { changed() }
	}
	return p
}

var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("image_operations"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ImageOperationRequested, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO image_operations (operation_id, shop_id, kind, status, options, month, credits,
			key_id, input, requested_at, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (operation_id) DO NOTHING`,
			ev.OperationID, ev.ShopID, ev.Kind, domain.ImageStatusQueued, readmodel.JSONText(ev.Options, "{}"), ev.Month, ev.Credits,
			ev.KeyID, readmodel.JSONText(ev.Input, "{}"), ev.At.UnixMicro(), int64(e.Position))
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ImageOperationStarted, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE image_operations SET status = ?, attempts = ?, engine = ?,
			started_at = COALESCE(started_at, ?) WHERE operation_id = ? AND status IN (?, ?)`,
			domain.ImageStatusProcessing, ev.Attempt, ev.Engine, ev.At.UnixMicro(), ev.OperationID,
			domain.ImageStatusQueued, domain.ImageStatusProcessing)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ImageOperationSucceeded, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE image_operations SET status = ?, result = ?, engine = ?, metadata = ?, run_ms = ?,
			finished_at = ? WHERE operation_id = ?`,
			domain.ImageStatusSucceeded, readmodel.JSONText(ev.Result, "{}"), ev.Engine, readmodel.JSONText(ev.Metadata, "{}"),
			ev.RunMillis, ev.At.UnixMicro(), ev.OperationID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ImageOperationFailed, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE image_operations SET status = ?, failure_code = ?, failure = ?, finished_at = ?
			WHERE operation_id = ?`, domain.ImageStatusFailed, ev.Code, ev.Reason, ev.At.UnixMicro(), ev.OperationID)
		return err
	}),
)
