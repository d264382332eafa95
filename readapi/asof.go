package readapi

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // the in-memory read model of an as-of read

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/audit"
	"github.com/cgp-platform/cgp/projections/customers"
)

// ParamAsOf is the query parameter of an as-of read.
const ParamAsOf = "as_of"

// AsOf rebuilds resources as they stood at an instant, from the log: the
// audit index finds the events concerned (recorded at or before the
// instant), the log gives them back by position, and the resource's own
// projector folds them into a private in-memory read model, so an as-of
// read is the same fold as the live read model's.
type AsOf struct {
	q     *audit.Queries
	log   eventlog.Log
	codec *envelope.Codec
	wait  Waiter
	now   func() time.Time
}

// NewAsOf returns the as-of reader.
func NewAsOf(q *audit.Queries, log eventlog.Log, codec *envelope.Codec, wait Waiter, now func() time.Time) *AsOf {
	return &AsOf{q: q, log: log, codec: codec, wait: wait, now: now}
}

// ParseAsOf reads the as_of parameter: an RFC 3339 instant (or a date,
// midnight UTC) not in the future. ok is false when absent.
func ParseAsOf(r *http.Request, now time.Time) (t time.Time, ok bool, err error) {
	vs, present := r.URL.Query()[ParamAsOf]
	if !present {
		return time.Time{}, false, nil
	}
	if len(vs) != 1 {
		return time.Time{}, false, httpapi.InvalidParameter(ParamAsOf, "the parameter is given more than once")
	}
	t, err = ParseInstant(vs[0])
	if err != nil {
		return time.Time{}, false, httpapi.InvalidParameter(ParamAsOf, err.Error())
	}
	if t.After(now) {
		return time.Time{}, false, httpapi.InvalidParameter(ParamAsOf, "as_of is in the future")
	}
	return t, true, nil
}

var asOfDBs atomic.Uint64

// Customer rebuilds customer id of shop as it stood at instant at: the
// events of its stream and of the streams of its orders (those sealed with
// its key) recorded at or before at, folded by the customers projector with
// lifecycle stages computed at at. Not found when it did not exist yet.
func (a *AsOf) Customer(ctx context.Context, shop, id string, at time.Time) (*customers.Customer, error) {
	upTo, err := a.q.LastRecordedBefore(ctx, shop, at)
	if err != nil || upTo == 0 {
		return nil, orNotFound(err)
	}
	streams, err := a.q.Streams(ctx, shop, id, upTo)
	if err != nil || len(streams) == 0 {
		return nil, orNotFound(err)
	}
	entries, err := a.q.StreamPositions(ctx, shop, streams, upTo)
	if err != nil {
		return nil, err
	}
	evs, err := ReadEntries(ctx, a.log, sortEntries(entries))
	if err != nil {
		return nil, err
	}
	// A private database of one connection, gone when closed.
	db, err := sql.Open("sqlite3", fmt.Sprintf("file:asof%d?mode=memory&cache=private", asOfDBs.Add(1)))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	proj := customers.Projector(a.codec, func() time.Time { return at })
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	for _, m := range proj.Migrations {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return nil, fmt.Errorf("as-of read model: %w", err)
		}
	}
	for i := range evs {
		if err := proj.Handle(ctx, tx, evs[i]); err != nil {
			return nil, fmt.Errorf("as-of fold: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return customers.NewQueries(db).Get(ctx, shop, id)
}

func orNotFound(err error) error {
	if err != nil {
		return err
	}
	return domain.NotFound("customer")
}

// sortEntries orders entries of several streams by position.
func sortEntries(entries []audit.Entry) []audit.Entry {
	slices.SortFunc(entries, func(a, b audit.Entry) int { return cmp.Compare(a.Position, b.Position) })
	return entries
}

// handleCustomerAsOf answers GET /api/v1/customers/{id}?as_of=… in the
// single-customer shape, rebuilt from the log.
func (c *Customers) handleCustomerAsOf(w http.ResponseWriter, r *http.Request, shop, id string, at time.Time) {
	if _, err := httpapi.ParseInclude(r, nil); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if err := WaitForPosition(r, c.asOf.wait, audit.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cust, err := c.asOf.Customer(r.Context(), shop, id, at)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteResource(w, r, http.StatusOK, CustomerResource(cust, at))
}
