package writeapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/readapi"
)

// ScopeJourneysWrite is the scope of the journey writes.
const ScopeJourneysWrite = domain.ScopeJourneysWrite

// Journeys serves the journey writes.
type Journeys struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	q    *journeys.Queries
	wait readapi.Waiter
}

// NewJourneys returns the journey write handlers. idem wraps every write
// in Idempotency-Key handling; q and wait answer pause and resume with the
// journey as the read model shows it once caught up.
func NewJourneys(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *journeys.Queries,
	wait readapi.Waiter) *Journeys {
	return &Journeys{cmds: cmds, auth: a, idem: idem, q: q, wait: wait}
}

// Routes registers the journey writes: create (stable); edit, pause,
// resume and manual enrollment (beta).
func (j *Journeys) Routes(r *mux.Router) {
	write := func(h http.HandlerFunc) http.Handler { return j.auth.Require(ScopeJourneysWrite, j.idem(h)) }
	r.Handle("/api/v1/journeys", httpapi.Stable(write(j.handleCreate))).Methods(http.MethodPost)
	r.Handle("/api/v1/journeys/{id}", httpapi.Beta(write(j.handlePatch))).Methods(http.MethodPatch)
	r.Handle("/api/v1/journeys/{id}/pause", httpapi.Beta(write(j.handlePause))).Methods(http.MethodPost)
	r.Handle("/api/v1/journeys/{id}/enrollments", httpapi.Beta(j.auth.Require(domain.ScopeCustomersWrite, j.idem(http.HandlerFunc(j.handleEnroll))))).
		Methods(http.MethodPost)
	r.Handle("/api/v1/journeys/{id}/resume", httpapi.Beta(write(j.handleResume))).Methods(http.MethodPost)
}

type journeyCreateBody struct {
	Name         string               `json:"name"`
	Trigger      string               `json:"trigger"`
	Status       string               `json:"status"`
	AllowReentry bool                 `json:"allow_reentry"`
	Steps        []domain.JourneyStep `json:"steps"`
}

// handleCreate creates a journey and answers 201 with it, built from the
// command's result (X-Event-Position tells a GET what to wait for).
func (j *Journeys) handleCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body journeyCreateBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	d := domain.JourneyDraft{Name: body.Name, Trigger: body.Trigger, Status: body.Status, AllowReentry: body.AllowReentry, Steps: body.Steps}
	res, ev, err := j.cmds.CreateJourney(r.Context(), commands.CreateJourney{ShopID: p.ShopID, Draft: d}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.JourneyResource(journeys.JourneyFromEvent(ev)))
}

// journeyPatchBody is a partial edit: an absent (or null) member stays as
// it is. The trigger cannot change (an unknown attribute, 422).
type journeyPatchBody struct {
	Name         *string               `json:"name"`
	Steps        *[]domain.JourneyStep `json:"steps"`
	AllowReentry *bool                 `json:"allow_reentry"`
	Status       *string               `json:"status"`
}

// handlePatch edits a journey and answers 200 with it: an edit that
// changes something records JourneyUpdated with the next version.
// Enrollments keep running the version they entered with.
func (j *Journeys) handlePatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	var body journeyPatchBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.Name == nil && body.Steps == nil && body.AllowReentry == nil && body.Status == nil {
		httpapi.WriteError(w, r, domain.Invalid("data.attributes", "send at least one of name, steps, allow_reentry, status"))
		return
	}
	patch := domain.JourneyPatch{Name: body.Name, Steps: body.Steps, AllowReentry: body.AllowReentry, Status: body.Status}
	if patch.Steps != nil && *patch.Steps == nil {
		patch.Steps = &[]domain.JourneyStep{} // "steps": [] is a change (refused), not "unchanged"
	}
	res, ev, err := j.cmds.UpdateJourney(r.Context(), commands.UpdateJourney{ShopID: p.ShopID, JourneyID: id, Patch: patch}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	j.serve(w, r, p.ShopID, id, res, func(jr *journeys.Journey) {
		if ev == nil || jr.Version >= ev.Version {
			return
		}
		jr.Name, jr.Steps, jr.AllowReentry, jr.Status, jr.Version, jr.UpdatedAt = ev.Name, ev.Steps, ev.AllowReentry, ev.Status, ev.Version, ev.UpdatedAt
		if ev.Status != domain.JourneyStatusPaused {
			jr.PausedReason, jr.PausedAt = "", time.Time{}
		}
	})
}

type enrollmentCreateBody struct {
	CustomerID string `json:"customer_id"`
}

// handleEnroll enrolls a customer by hand (scope customers:write, as the
// specification's scope table says) and answers 201 with the enrollment.
// The trigger topic is "manual"; the Idempotency-Key, when sent, makes the
// enrollment id deterministic (a retry of the same request cannot enroll
// twice, even after the stored answer expired).
func (j *Journeys) handleEnroll(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body enrollmentCreateBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cmd := commands.EnrollByHand{ShopID: p.ShopID, JourneyID: mux.Vars(r)["id"], CustomerID: body.CustomerID}
	if key, present, err := idempotency.ParseKey(r.Header); err == nil && present {
		cmd.RequestKey = p.TokenID + "\x00" + key
	}
	res, ev, err := j.cmds.EnrollByHand(r.Context(), cmd, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.EnrollmentResource(journeys.EnrollmentFromEvent(ev)))
}

// handlePause pauses an active journey (no body): it enrolls nobody until
// resumed. It answers 200 with the journey; any other status is a 409
// conflict.
func (j *Journeys) handlePause(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	res, ev, err := j.cmds.PauseJourney(r.Context(), commands.PauseJourney{ShopID: p.ShopID, JourneyID: id}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	j.serve(w, r, p.ShopID, id, res, func(jr *journeys.Journey) {
		jr.Status, jr.PausedReason, jr.PausedAt, jr.UpdatedAt = domain.JourneyStatusPaused, ev.Reason, ev.PausedAt, ev.PausedAt
	})
}

// handleResume makes a paused journey active again (no body); a journey
// that is not paused is a 409 conflict.
func (j *Journeys) handleResume(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	res, ev, err := j.cmds.ResumeJourney(r.Context(), commands.ResumeJourney{ShopID: p.ShopID, JourneyID: id}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	j.serve(w, r, p.ShopID, id, res, func(jr *journeys.Journey) {
		jr.Status, jr.PausedReason, jr.PausedAt, jr.UpdatedAt = domain.JourneyStatusActive, "", time.Time{}, ev.ResumedAt
	})
}

// serve answers a journey write with the journey read back once the read
// model reached the command (bounded), else with pending applied.
func (j *Journeys) serve(w http.ResponseWriter, r *http.Request, shop, id string, res commands.Result, pending func(*journeys.Journey)) {
	readapi.ServeWritten(w, r, j.wait, journeys.Name, res.Position, http.StatusOK,
		func(ctx context.Context) (*journeys.Journey, error) { return j.q.Journey(ctx, shop, id) },
		pending, readapi.JourneyResource)
}
