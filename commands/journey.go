package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The journey writes: CreateJourney (admin API) and EnrollInJourney (the
// enrollment reactor).

// CreateJourney creates a journey (POST /api/v1/journeys).
type CreateJourney struct {
	ShopID string
	Draft  domain.JourneyDraft
}

// CreateJourney runs the command; the result's ID is the new journey's id.
func (h *Handler) CreateJourney(ctx context.Context, cmd CreateJourney, meta Meta) (Result, *domain.JourneyCreated, error) {
	ev, err := domain.NewJourney(cmd.ShopID, cmd.Draft, h.now())
	if err != nil {
		return Result{}, nil, err
	}
	res, err := h.appendNew(ctx, cmd.ShopID, domain.JourneyStream(ev.JourneyID), ev, meta)
	res.ID = ev.JourneyID
	return res, ev, err
}

// EnrollInJourney enrolls a customer in a journey because of a trigger
// event. The once-per-customer rule is decided on the stream of the
// customer in the journey with its expected revision, so two concurrent
// triggers cannot both enroll; the event id derives from the journey and
// the trigger event, so a redelivered trigger appends nothing.
type EnrollInJourney struct {
	Enrollment domain.Enrollment
}

// EnrollInJourney runs the command. The result's ID is the enrollment id,
// "" when nothing was appended (already enrolled, or trigger handled).
func (h *Handler) EnrollInJourney(ctx context.Context, cmd EnrollInJourney, meta Meta) (Result, error) {
	in := cmd.Enrollment
	if !domain.HasPrefixID(in.JourneyID, domain.PrefixJourney) || !domain.HasPrefixID(in.CustomerID, domain.PrefixCustomer) {
		return Result{}, domain.Invalid("enrollment", "an enrollment needs a journey and a customer")
	}
	var id string
	res, err := execute(ctx, h, in.ShopID, domain.EnrollmentStream(in.JourneyID, in.CustomerID),
		func() *domain.JourneyEnrollments { return &domain.JourneyEnrollments{} },
		func(a *domain.JourneyEnrollments) (decision, error) {
			ev, err := a.Enroll(in, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			id = ev.EnrollmentID
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{eventlog.DeterministicID("enroll", in.JourneyID, in.TriggerEventID)}}, nil
		}, meta)
	res.ID = id
	return res, err
}
