package readapi

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/enrollment"
	"github.com/cgp-platform/cgp/projections/journeys"
)

// Journeys serves the journey and enrollment reads from the journeys read
// model.
type Journeys struct {
	q         *journeys.Queries
	customers CustomerFinder
	auth      *auth.Authenticator
	cursors   *httpapi.CursorCodec
	wait      Waiter
	now       func() time.Time // the instant included customers' lifecycle stages are computed at
}

// NewJourneys returns the journey read handlers; customers serves the
// enrollments' include=customer.
//
// A read waiting for a position (X-Wait-For-Position) waits for the
// enrollment reactor too: once it returns, the enrollments of every
// trigger up to that position are recorded in the log (as they were when
// the journeys projector enrolled), so a client can wait for a position
// after them to see them.
func NewJourneys(q *journeys.Queries, customers CustomerFinder, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Journeys {
	return &Journeys{q: q, customers: customers, auth: a, cursors: cursors, wait: withEnrollment{wait}, now: time.Now}
}

// withEnrollment waits for the enrollment reactor besides the projectors
// named.
type withEnrollment struct{ Waiter }

func (w withEnrollment) WaitFor(ctx context.Context, pos eventlog.Position, projectors ...string) error {
	return w.Waiter.WaitFor(ctx, pos, append(slices.Clip(projectors), enrollment.Name)...)
}

// JourneyListSpec is the allow-list of the journey list's parameters.
// created_at sorts in log order (the order journeys were created).
var JourneyListSpec = httpapi.ListSpec{
	Resource:    "journeys",
	Filters:     map[string]httpapi.FilterKind{"status": httpapi.EnumFilter(domain.JourneyStatuses()...)},
	Sorts:       []string{"created_at"},
	DefaultSort: "-created_at",
}

// EnrollmentListSpec is the allow-list of a journey's enrollment list.
func EnrollmentListSpec(journeyID string) httpapi.ListSpec {
	return httpapi.ListSpec{
		Resource:    "journey_enrollments:" + journeyID,
		Filters:     map[string]httpapi.FilterKind{"status": httpapi.EnumFilter(domain.EnrollmentStatuses()...)},
		Sorts:       []string{"enrolled_at"},
		DefaultSort: "-enrolled_at",
	}
}

// Routes registers the journey reads.
func (j *Journeys) Routes(r *mux.Router) {
	r.Handle("/api/v1/journeys", httpapi.Stable(httpapi.Compressed(j.auth.Require(domain.ScopeJourneysRead, http.HandlerFunc(j.handleList))))).Methods(http.MethodGet)
	r.Handle("/api/v1/journeys/{id}", httpapi.Beta(httpapi.Compressed(j.auth.Require(domain.ScopeJourneysRead, http.HandlerFunc(j.handleGet))))).Methods(http.MethodGet)
	r.Handle("/api/v1/journeys/{id}/enrollments", httpapi.Stable(httpapi.Compressed(j.auth.Require(domain.ScopeJourneysRead, http.HandlerFunc(j.handleEnrollments))))).Methods(http.MethodGet)
}

func (j *Journeys) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, j.cursors, j.wait, journeys.Name, JourneyListSpec, func(params httpapi.ListParams, after *journeys.Key) ([]httpapi.Resource, *journeys.Key, error) {
		rows, next, err := j.q.Journeys(r.Context(), journeys.ListQuery{Shop: p.ShopID, Status: params.Filters["status"],
			Desc: params.Sort.Desc, After: after, Limit: params.Limit})
		items := make([]httpapi.Resource, len(rows))
		for i := range rows {
			items[i] = JourneyResource(&rows[i])
		}
		return items, next, err
	})
}

// handleGet serves one journey with its current steps and version; a
// journey the shop does not have is not found.
func (j *Journeys) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, j.wait, journeys.Name, p.ShopID, func(ctx context.Context, shop string) (*journeys.Journey, error) {
		return j.q.Journey(ctx, shop, id)
	}, JourneyResource)
}

// handleEnrollments lists a journey's enrollments; a journey the shop does
// not have is not found.
func (j *Journeys) handleEnrollments(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeKeyset(w, r, j.cursors, j.wait, journeys.Name, EnrollmentListSpec(id), func(params httpapi.ListParams, after *journeys.Key) ([]httpapi.Resource, *journeys.Key, error) {
		if _, err := j.q.Journey(r.Context(), p.ShopID, id); err != nil {
			return nil, nil, err
		}
		rows, next, err := j.q.Enrollments(r.Context(), id, journeys.ListQuery{Shop: p.ShopID, Status: params.Filters["status"],
			Desc: params.Sort.Desc, After: after, Limit: params.Limit})
		items := make([]httpapi.Resource, len(rows))
		for i := range rows {
			items[i] = EnrollmentResource(&rows[i])
		}
		return items, next, err
	}, customerRelation(j.customers, p.ShopID, j.now, func(res httpapi.Resource) string {
		if a, ok := res.Attributes.(EnrollmentAttributes); ok {
			return a.CustomerID
		}
		return ""
	}))
}

// JourneyStep is a step in a journey's attributes: the members its type
// and channel take (domain.JourneyStep), the others left out.
type JourneyStep struct {
	Type       string   `json:"type"`
	Hours      *int     `json:"hours,omitempty"`
	Channel    *string  `json:"channel,omitempty"`
	Template   *string  `json:"template,omitempty"`
	Subject    *string  `json:"subject,omitempty"`
	Text       *string  `json:"text,omitempty"`
	HTML       *string  `json:"html,omitempty"`
	Language   *string  `json:"language,omitempty"`
	Parameters []string `json:"parameters,omitempty"`
	Condition  *string  `json:"condition,omitempty"`
	Tag        *string  `json:"tag,omitempty"`
	Otherwise  *string  `json:"otherwise,omitempty"`
}

// JourneyAttributes are a journey's attributes in the admin API.
type JourneyAttributes struct {
	Name         string        `json:"name"`
	Trigger      string        `json:"trigger"`
	Status       string        `json:"status"`
	AllowReentry bool          `json:"allow_reentry"`
	Steps        []JourneyStep `json:"steps"`
	// Version is the steps version: 1 at creation, +1 per edit.
	Version int `json:"version"`
	// EnrollmentCount is how many enrollments the journey has had.
	EnrollmentCount int       `json:"enrollment_count"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	// PausedReason (manual, template_paused, template_rejected) and
	// PausedAt are set while the journey is paused, else null.
	PausedReason *string    `json:"paused_reason"`
	PausedAt     *time.Time `json:"paused_at"`
}

// JourneyResource renders a journey.
func JourneyResource(j *journeys.Journey) httpapi.Resource {
	a := JourneyAttributes{Name: j.Name, Trigger: j.Trigger, Status: j.Status, AllowReentry: j.AllowReentry,
		Steps: make([]JourneyStep, len(j.Steps)), Version: max(j.Version, 1), EnrollmentCount: j.Enrollments, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		PausedReason: optional(j.PausedReason), PausedAt: zeroTimeAsNull(j.PausedAt)}
	for i, s := range j.Steps {
		a.Steps[i] = JourneyStep{Type: s.Type, Channel: optional(s.Channel), Template: optional(s.Template),
			Subject: optional(s.Subject), Text: optional(s.Text), HTML: optional(s.HTML), Language: optional(s.Language),
			Parameters: s.Parameters, Condition: optional(s.Condition), Tag: optional(s.Tag), Otherwise: optional(s.Otherwise)}
		if s.Type == domain.StepWait {
			h := s.Hours
			a.Steps[i].Hours = &h
		}
	}
	return httpapi.Resource{ID: j.ID, Type: "journey", Attributes: a,
		Relationships: map[string]httpapi.Relationship{
			"enrollments": httpapi.RelatedLink("/api/v1/journeys/" + j.ID + "/enrollments"),
		}}
}

// EnrollmentAttributes are an enrollment's attributes in the admin API.
type EnrollmentAttributes struct {
	JourneyID    string `json:"journey_id"`
	CustomerID   string `json:"customer_id"`
	Status       string `json:"status"`
	TriggerTopic string `json:"trigger_topic"`
	// StepsVersion is the journey's steps version the enrollment runs.
	StepsVersion int       `json:"steps_version"`
	EnrolledAt   time.Time `json:"enrolled_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// EnrollmentResource renders an enrollment.
func EnrollmentResource(e *journeys.Enrollment) httpapi.Resource {
	return httpapi.Resource{ID: e.ID, Type: "enrollment", Attributes: EnrollmentAttributes{JourneyID: e.JourneyID,
		CustomerID: e.CustomerID, Status: e.Status, TriggerTopic: e.TriggerTopic, StepsVersion: max(e.StepsVersion, 1), EnrolledAt: e.EnrolledAt, UpdatedAt: e.UpdatedAt},
		Relationships: map[string]httpapi.Relationship{
			"customer": httpapi.RelatedLink("/api/v1/customers/" + e.CustomerID),
		}}
}
