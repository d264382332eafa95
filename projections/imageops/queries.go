package imageops

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the image operations' read model.
type Queries struct{ db *sql.DB }

// NewQueries returns the queries of the read model in db.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Operation is one image operation.
type Operation struct {
	ID, ShopID, Kind, Status, Month, KeyID, Engine string
	Options, Metadata                              map[string]string
	Credits, Attempts                              int
	Input                                          domain.ImageRef
	Result                                         *domain.ImageRef // nil until it succeeded
	FailureCode, Failure                           string
	RunMillis                                      int64 // 0 until it succeeded
	RequestedAt                                    time.Time
	StartedAt, FinishedAt                          time.Time // zero when not
	Pos                                            int64
}

// Finished reports whether the operation succeeded or failed.
func (o *Operation) Finished() bool {
	return o.Status == domain.ImageStatusSucceeded || o.Status == domain.ImageStatusFailed
}

// Key is a place in a shop's list: the log position and the id.
type Key struct {
	Pos int64  `json:"pos"`
	ID  string `json:"id"`
}

// Filter selects a shop's operations, newest first.
type Filter struct {
	ShopID, Kind, Status string
	After                *Key
	Limit                int
}

const columns = `operation_id, shop_id, kind, status, options, month, credits, key_id, input, result, engine, metadata, attempts,
	failure_code, failure, run_ms, requested_at, started_at, finished_at, position`

func scan(s readmodel.Scanner) (Operation, error) {
	var o Operation
	var opts, input, meta string
	var result sql.NullString
	var runMS, started, finished sql.NullInt64
	var requested int64
	if err := s.Scan(&o.ID, &o.ShopID, &o.Kind, &o.Status, &opts, &o.Month, &o.Credits, &o.KeyID, &input, &result, &o.Engine, &meta,
		&o.Attempts, &o.FailureCode, &o.Failure, &runMS, &requested, &started, &finished, &o.Pos); err != nil {
		return Operation{}, err
	}
	if err := json.Unmarshal([]byte(opts), &o.Options); err != nil {
		return Operation{}, fmt.Errorf("image operation %s options: %w", o.ID, err)
	}
	if err := json.Unmarshal([]byte(meta), &o.Metadata); err != nil {
		return Operation{}, fmt.Errorf("image operation %s metadata: %w", o.ID, err)
	}
	if err := json.Unmarshal([]byte(input), &o.Input); err != nil {
		return Operation{}, fmt.Errorf("image operation %s input: %w", o.ID, err)
	}
	if result.Valid {
		o.Result = &domain.ImageRef{}
		if err := json.Unmarshal([]byte(result.String), o.Result); err != nil {
			return Operation{}, fmt.Errorf("image operation %s result: %w", o.ID, err)
		}
	}
	o.RunMillis = runMS.Int64
	o.RequestedAt, o.StartedAt, o.FinishedAt = readmodel.Time(requested), readmodel.NullTime(started), readmodel.NullTime(finished)
	return o, nil
}

// List lists a shop's operations, newest first.
func (q *Queries) List(ctx context.Context, f Filter) ([]Operation, *Key, error) {
	conds, args := []string{"shop_id = ?"}, []any{f.ShopID}
	if f.Kind != "" {
		conds, args = append(conds, "kind = ?"), append(args, f.Kind)
	}
	if f.Status != "" {
		conds, args = append(conds, "status = ?"), append(args, f.Status)
	}
	if f.After != nil {
		conds, args = append(conds, "(position, operation_id) < (?, ?)"), append(args, f.After.Pos, f.After.ID)
	}
	args = append(args, f.Limit+1)
	rows, err := readmodel.List(ctx, q.db, "image operations", scan, `SELECT `+columns+` FROM image_operations WHERE `+
		strings.Join(conds, " AND ")+` ORDER BY position DESC, operation_id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, nil, err
	}
	return readmodel.CutPage(rows, f.Limit, func(o *Operation) Key { return Key{Pos: o.Pos, ID: o.ID} })
}

// Get returns one of a shop's operations (not found for another shop's).
func (q *Queries) Get(ctx context.Context, shop, id string) (*Operation, error) {
	o, err := scan(q.db.QueryRowContext(ctx, `SELECT `+columns+` FROM image_operations WHERE operation_id = ? AND shop_id = ?`, id, shop))
	if err := readmodel.FindError(err, "image operation"); err != nil {
		return nil, err
	}
	return &o, nil
}

// Pending returns up to limit operations still to finish (queued or
// processing), oldest first, skipping those in skip (the ones a worker
// holds).
func (q *Queries) Pending(ctx context.Context, limit int, skip map[string]bool) ([]Operation, error) {
	rows, err := readmodel.List(ctx, q.db, "pending image operations", scan, `SELECT `+columns+` FROM image_operations
		WHERE status IN (?, ?) ORDER BY position LIMIT ?`, domain.ImageStatusQueued, domain.ImageStatusProcessing, limit+len(skip))
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, o := range rows {
		if !skip[o.ID] && len(out) < limit {
			out = append(out, o)
		}
	}
	return out, nil
}
