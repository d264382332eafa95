package writeapi

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/readapi"
)

// Journeys serves the journey writes.
type Journeys struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
}

// NewJourneys returns the journey write handlers. idem wraps every write
// in Idempotency-Key handling.
func NewJourneys(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler) *Journeys {
	return &Journeys{cmds: cmds, auth: a, idem: idem}
}

// Routes registers the journey writes.
func (j *Journeys) Routes(r *mux.Router) {
	r.Handle("/api/v1/journeys", httpapi.Stable(j.auth.Require("journeys:write", j.idem(http.HandlerFunc(j.handleCreate))))).Methods(http.MethodPost)
}

type journeyStepBody struct {
	Type     string `json:"type"`
	Hours    int    `json:"hours"`
	Channel  string `json:"channel"`
	Template string `json:"template"`
}

type journeyCreateBody struct {
	Name         string            `json:"name"`
	Trigger      string            `json:"trigger"`
	Status       string            `json:"status"`
	AllowReentry bool              `json:"allow_reentry"`
	Steps        []journeyStepBody `json:"steps"`
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
	d := domain.JourneyDraft{Name: body.Name, Trigger: body.Trigger, Status: body.Status, AllowReentry: body.AllowReentry}
	for _, s := range body.Steps {
		d.Steps = append(d.Steps, domain.JourneyStep(s))
	}
	res, ev, err := j.cmds.CreateJourney(r.Context(), commands.CreateJourney{ShopID: p.ShopID, Draft: d}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.JourneyResource(journeys.JourneyFromEvent(ev)))
}
