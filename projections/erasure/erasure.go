// Package erasure is the customer erase reactor: on each customers/redact
// (domain.CustomerRedactRequested) it runs the erase pipeline of DESIGN.md
// §5 through an Eraser: shred the data keys of every subject the request
// names, exit the customer's active journey enrollments, and record the
// audit entry (domain.CustomerErased) that every read model folds by
// nulling the customer's personal data.
//
// Its projector (stable name "erasure") keeps two small tables of its own:
// the journeys of each shop (folded from JourneyCreated, so that a request
// reaches exactly the journeys created before it whatever the journeys
// projector's progress), and the follow-ups of each erasure: the physical
// clean-up that must wait until every read model folded the erasure
// (checkpointing the SQLite WAL, forgetting stored idempotent responses,
// erasing warehouse rows). Follow-ups are written in the same transaction
// as the checkpoint, so a crash between the pipeline and its follow-up
// loses nothing: the event is handled again and every step of the pipeline
// is idempotent (shredding a shredded key is a no-op, the commands' event
// ids derive from the request event).
//
// It imports domain, envelope, eventlog, projections and readmodel.
package erasure

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
const Name = "erasure"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE erasure_journeys (
	shop_id    TEXT NOT NULL,
	journey_id TEXT NOT NULL,
	PRIMARY KEY (shop_id, journey_id)
) WITHOUT ROWID;
CREATE TABLE erasure_followups (
	request_event_id TEXT PRIMARY KEY,
	shop_id          TEXT NOT NULL,
	customer_id      TEXT NOT NULL,
	messaging_id     TEXT NOT NULL DEFAULT '',
	erased_position  INTEGER NOT NULL, -- of the CustomerErased event
	requested_at     INTEGER NOT NULL  -- Unix microseconds: when the request was recorded
);
`}}

// Request is one customers/redact to carry out.
type Request struct {
	EventID string // of the CustomerRedactRequested event
	// CorrelationID is the request's (the webhook delivery's) id.
	CorrelationID string
	ShopID        string
	Customer      domain.PrivacyCustomer
	// Orders are the order ids the request listed, and ExternalOrders
	// the platform's ids of the same orders (guest orders' subjects
	// derive from them).
	Orders, ExternalOrders []string
	Journeys               []string // the shop's journeys when the request was made
}

// Eraser runs the pipeline for one request and returns the position of the
// CustomerErased event it recorded (or found recorded).
type Eraser func(ctx context.Context, r Request) (domain.CustomerErased, eventlog.Position, error)

// Projector returns the erase reactor.
func Projector(codec *envelope.Codec, erase Eraser) projections.Projector {
	cases := projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("erasure_journeys"), readmodel.ShopRows("erasure_followups"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.JourneyCreated, _ *projections.DecodedEvent) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO erasure_journeys (shop_id, journey_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
				ev.ShopID, ev.JourneyID)
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerRedactRequested, e *projections.DecodedEvent) error {
			return handleRedact(ctx, tx, &e.Event, ev, erase)
		}),
	)
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
	}
}

func handleRedact(ctx context.Context, tx *sql.Tx, e *eventlog.Event, ev *domain.CustomerRedactRequested, erase Eraser) error {
	journeys, err := shopJourneys(ctx, tx, ev.ShopID)
	if err != nil {
		return err
	}
	r := Request{EventID: e.ID.String(), CorrelationID: e.Metadata.CorrelationID, ShopID: ev.ShopID, Customer: ev.PrivacyCustomer, Orders: ev.OrdersToRedact,
		ExternalOrders: ev.OrdersToRedactExternal, Journeys: journeys}
	erased, pos, err := erase(ctx, r)
	if err != nil {
		return fmt.Errorf("erase customer: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO erasure_followups (request_event_id, shop_id, customer_id, messaging_id, erased_position, requested_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		r.EventID, ev.ShopID, erased.CustomerID, erased.MessagingCustomerID, int64(pos), e.RecordedAt.UnixMicro())
	return err
}

func shopJourneys(ctx context.Context, tx *sql.Tx, shop string) ([]string, error) {
	return readmodel.Strings(ctx, tx, `SELECT journey_id FROM erasure_journeys WHERE shop_id = ? ORDER BY journey_id`, shop)
}

// Followup is an erasure whose physical clean-up is pending.
type Followup struct {
	RequestEventID string
	ShopID         string
	CustomerID     string
	MessagingID    string
	ErasedPosition eventlog.Position
	RequestedAt    int64 // Unix microseconds
}

// Queries reads and settles the pending follow-ups.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model database.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Pending returns up to limit follow-ups in the order of their erasures.
func (q *Queries) Pending(ctx context.Context, limit int) ([]Followup, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT request_event_id, shop_id, customer_id, messaging_id, erased_position, requested_at
		FROM erasure_followups ORDER BY erased_position LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Followup
	for rows.Next() {
		var f Followup
		var pos int64
		if err := rows.Scan(&f.RequestEventID, &f.ShopID, &f.CustomerID, &f.MessagingID, &pos, &f.RequestedAt); err != nil {
			return nil, err
		}
		f.ErasedPosition = eventlog.Position(pos)
		out = append(out, f)
	}
	return out, rows.Err()
}

// Settle removes a follow-up once its clean-up is done.
func Settle(ctx context.Context, store readmodel.Store, requestEventID string) error {
	return store.Maintain(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM erasure_followups WHERE request_event_id = ?`, requestEventID)
		return err
	})
}
