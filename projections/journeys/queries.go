package journeys

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

// Queries reads the journeys read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Journey is a row of the journeys read model; while paused, why
// (domain.PauseReasons) and since when (zero otherwise).
type Journey struct {
	ID, ShopID, Name, Trigger, Status string
	PausedReason                      string
	Steps                             []domain.JourneyStep
	AllowReentry                      bool
	Enrollments                       int
	// Version is the steps version: 1 at creation, +1 per edit.
	Version                        int
	CreatedAt, UpdatedAt, PausedAt time.Time
}

// JourneyFromEvent is the row a JourneyCreated event makes, for answering
// a create before the read model caught up.
func JourneyFromEvent(ev *domain.JourneyCreated) *Journey {
	return &Journey{ID: ev.JourneyID, ShopID: ev.ShopID, Name: ev.Name, Trigger: ev.Trigger, Status: ev.Status, Steps: ev.Steps,
		AllowReentry: ev.AllowReentry, Version: 1, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt}
}

// Enrollment is a row of the enrollments read model.
type Enrollment struct {
	ID, ShopID, JourneyID, CustomerID, Status string
	TriggerEventID, TriggerTopic              string
	// StepsVersion is the journey's steps version the enrollment runs.
	StepsVersion          int
	EnrolledAt, UpdatedAt time.Time
}

// EnrollmentFromEvent is the row a JourneyEnrollmentStarted event makes,
// for answering a manual enrollment before the read model caught up.
func EnrollmentFromEvent(ev *domain.JourneyEnrollmentStarted) *Enrollment {
	return &Enrollment{ID: ev.EnrollmentID, ShopID: ev.ShopID, JourneyID: ev.JourneyID, CustomerID: ev.CustomerID,
		Status: domain.EnrollmentActive, TriggerEventID: ev.TriggerEventID, TriggerTopic: ev.TriggerTopic,
		StepsVersion: ev.Version(), EnrolledAt: ev.EnrolledAt, UpdatedAt: ev.EnrolledAt}
}

// Key is a position in a list: the log position of the row's creation
// (lists are in log order, so rows that arrive during a walk come after
// every key already handed out) and the row's id.
type Key struct {
	P  int64  `json:"p"`
	ID string `json:"id"`
}

// ListQuery selects a page of a list in log order.
type ListQuery struct {
	Shop   string
	Status string // "" for any
	Desc   bool
	After  *Key
	Limit  int
}

const journeyColumns = `journey_id, shop_id, name, trigger_topic, steps, allow_reentry, status, enrollments, created_at, updated_at, position,
	paused_reason, paused_at, version`

// Journeys returns a page of a shop's journeys and the key to continue
// from when more follow.
func (q *Queries) Journeys(ctx context.Context, lq ListQuery) ([]Journey, *Key, error) {
	query, args := page(`SELECT `+journeyColumns+` FROM journeys`, "journey_id", []string{"shop_id = ?"}, []any{lq.Shop}, lq)
	return list(ctx, q.db, "journeys", scanJourney, query, args, lq.Limit)
}

// Journey returns one journey of a shop (not_found otherwise).
func (q *Queries) Journey(ctx context.Context, shop, id string) (*Journey, error) {
	row := q.db.QueryRowContext(ctx, `SELECT `+journeyColumns+` FROM journeys WHERE shop_id = ? AND journey_id = ?`, shop, id)
	j, _, err := scanJourney(row)
	if err := readmodel.FindError(err, "journey"); err != nil {
		return nil, err
	}
	return &j, nil
}

// Steps returns the steps of one version of a shop's journey, as the
// journey had them from that version's edit (version 0 means 1, the
// version of enrollments recorded before journeys could be edited); a
// journey or version the shop does not have is not found. The step runner
// reads the version an enrollment entered with
// (JourneyEnrollmentStarted.Version()).
func (q *Queries) Steps(ctx context.Context, shop, journeyID string, version int) ([]domain.JourneyStep, error) {
	var steps string
	err := q.db.QueryRowContext(ctx, `SELECT steps FROM journey_versions WHERE shop_id = ? AND journey_id = ? AND version = ?`,
		shop, journeyID, max(version, 1)).Scan(&steps)
	if err := readmodel.FindError(err, "journey"); err != nil {
		return nil, err
	}
	var out []domain.JourneyStep
	if err := json.Unmarshal([]byte(steps), &out); err != nil {
		return nil, fmt.Errorf("journey %s version %d steps: %w", journeyID, version, err)
	}
	return out, nil
}

// Enrollments returns a page of a journey's enrollments.
func (q *Queries) Enrollments(ctx context.Context, journeyID string, lq ListQuery) ([]Enrollment, *Key, error) {
	query, args := page(`SELECT enrollment_id, shop_id, journey_id, customer_id, status, trigger_event_id, trigger_topic,
	enrolled_at, updated_at, position, steps_version FROM journey_enrollments`, "enrollment_id",
		[]string{"shop_id = ?", "journey_id = ?"}, []any{lq.Shop, journeyID}, lq)
	return list(ctx, q.db, "enrollments", scanEnrollment, query, args, lq.Limit)
}

// page completes base with the conditions, the status filter, the page's
// start, its order and limit (one more row, to tell whether more follow).
func page(base, id string, conds []string, args []any, lq ListQuery) (string, []any) {
	if lq.Status != "" {
		conds, args = append(conds, "status = ?"), append(args, lq.Status)
	}
	dir, cmp := "ASC", ">"
	if lq.Desc {
		dir, cmp = "DESC", "<"
	}
	if lq.After != nil {
		conds, args = append(conds, fmt.Sprintf("(position, %s) %s (?, ?)", id, cmp)), append(args, lq.After.P, lq.After.ID)
	}
	return fmt.Sprintf("%s WHERE %s ORDER BY position %s, %s %s LIMIT ?", base, strings.Join(conds, " AND "), dir, id, dir),
		append(args, lq.Limit+1)
}

// keyed is a scanned row with its list key.
type keyed[T any] struct {
	row T
	key Key
}

func list[T any](ctx context.Context, db *sql.DB, what string, scan func(readmodel.Scanner) (T, Key, error), query string, args []any, limit int) ([]T, *Key, error) {
	rows, err := readmodel.List(ctx, db, what, func(s readmodel.Scanner) (keyed[T], error) {
		v, k, err := scan(s)
		return keyed[T]{v, k}, err
	}, query, args...)
	if err != nil {
		return nil, nil, err
	}
	var next *Key
	if len(rows) > limit {
		rows = rows[:limit]
		next = &rows[limit-1].key
	}
	out := make([]T, len(rows))
	for i := range rows {
		out[i] = rows[i].row
	}
	return out, next, nil
}

func scanJourney(s readmodel.Scanner) (Journey, Key, error) {
	var j Journey
	var steps string
	var created, updated, pos, paused int64
	if err := s.Scan(&j.ID, &j.ShopID, &j.Name, &j.Trigger, &steps, &j.AllowReentry, &j.Status, &j.Enrollments, &created, &updated, &pos,
		&j.PausedReason, &paused, &j.Version); err != nil {
		return Journey{}, Key{}, err
	}
	j.CreatedAt, j.UpdatedAt, j.PausedAt = readmodel.Time(created), readmodel.Time(updated), readmodel.Time(paused)
	if err := json.Unmarshal([]byte(steps), &j.Steps); err != nil {
		return Journey{}, Key{}, fmt.Errorf("journey %s steps: %w", j.ID, err)
	}
	return j, Key{P: pos, ID: j.ID}, nil
}

func scanEnrollment(s readmodel.Scanner) (Enrollment, Key, error) {
	var e Enrollment
	var enrolled, updated, pos int64
	if err := s.Scan(&e.ID, &e.ShopID, &e.JourneyID, &e.CustomerID, &e.Status, &e.TriggerEventID, &e.TriggerTopic, &enrolled, &updated, &pos,
		&e.StepsVersion); err != nil {
		return Enrollment{}, Key{}, err
	}
	e.EnrolledAt, e.UpdatedAt = readmodel.Time(enrolled), readmodel.Time(updated)
	return e, Key{P: pos, ID: e.ID}, nil
}
