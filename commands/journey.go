package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The journey writes: CreateJourney, UpdateJourney and EnrollByHand (admin
// API) and EnrollInJourney (the enrollment reactor).

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

// UpdateJourney edits a journey (PATCH /api/v1/journeys/{id}): decided by
// domain.Journey.Update on the journey's stream with its expected
// revision, so two concurrent edits cannot both take the same version.
type UpdateJourney struct {
	ShopID, JourneyID string
	Patch             domain.JourneyPatch
}

// UpdateJourney runs the command. The event is nil when the edit changed
// nothing (nothing was appended).
func (h *Handler) UpdateJourney(ctx context.Context, cmd UpdateJourney, meta Meta) (Result, *domain.JourneyUpdated, error) {
	if !domain.HasPrefixID(cmd.JourneyID, domain.PrefixJourney) {
		return Result{}, nil, domain.NotFound("journey")
	}
	var updated *domain.JourneyUpdated
	res, err := execute(ctx, h, cmd.ShopID, domain.JourneyStream(cmd.JourneyID), func() *domain.Journey { return &domain.Journey{} },
		func(j *domain.Journey) (decision, error) {
			ev, err := j.Update(cmd.ShopID, cmd.JourneyID, cmd.Patch, h.now())
			if err != nil || ev == nil {
				updated = nil
				return decision{}, err
			}
			updated = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.JourneyID
	return res, updated, err
}

// EnrollByHand enrolls a customer in a journey by hand (POST
// /api/v1/journeys/{id}/enrollments). The journey must be active (409
// otherwise) and the customer one of the shop's (422 on customer_id
// otherwise); the enrollment is decided on the customer's enrollment
// stream like the reactor's (domain.JourneyEnrollments.EnrollByHand), with
// the journey's current steps version. RequestKey (the token and its
// Idempotency-Key, "" when none) makes the trigger event id and so the
// enrollment id deterministic: the same request cannot enroll twice.
type EnrollByHand struct {
	ShopID, JourneyID, CustomerID string
	RequestKey                    string
}

// EnrollByHand runs the command; the result's ID is the enrollment id.
//
// The journey's status is read before the enrollment stream is written:
// an enrollment racing an archive of the same journey may be recorded
// just after it, as an automatic one racing it would be.
func (h *Handler) EnrollByHand(ctx context.Context, cmd EnrollByHand, meta Meta) (Result, *domain.JourneyEnrollmentStarted, error) {
	if !domain.HasPrefixID(cmd.JourneyID, domain.PrefixJourney) {
		return Result{}, nil, domain.NotFound("journey")
	}
	if cmd.CustomerID == "" {
		return Result{}, nil, domain.Invalid("customer_id", "customer_id is required")
	}
	j := &domain.Journey{}
	if _, _, err := h.load(ctx, domain.JourneyStream(cmd.JourneyID), j); err != nil {
		return Result{}, nil, err
	}
	if err := j.CanEnroll(cmd.ShopID); err != nil {
		return Result{}, nil, err
	}
	if !domain.HasPrefixID(cmd.CustomerID, domain.PrefixCustomer) {
		return Result{}, nil, domain.Invalid("customer_id", "no such customer in this shop")
	}
	c := &knownCustomer{}
	if _, _, err := h.load(ctx, domain.CustomerStream(cmd.CustomerID), c); err != nil {
		return Result{}, nil, err
	}
	if !c.exists || c.shopID != cmd.ShopID || c.erased {
		return Result{}, nil, domain.Invalid("customer_id", "no such customer in this shop")
	}
	trigger := newEventID().String()
	if cmd.RequestKey != "" {
		trigger = eventlog.DeterministicID("manual-enrollment", cmd.ShopID, cmd.JourneyID, cmd.RequestKey).String()
	}
	in := domain.Enrollment{ShopID: cmd.ShopID, JourneyID: cmd.JourneyID, CustomerID: cmd.CustomerID, TriggerEventID: trigger,
		TriggerTopic: domain.TriggerManual, AllowReentry: j.AllowReentry, StepsVersion: j.Version}
	var started *domain.JourneyEnrollmentStarted
	res, err := execute(ctx, h, cmd.ShopID, domain.EnrollmentStream(cmd.JourneyID, cmd.CustomerID),
		func() *domain.JourneyEnrollments { return &domain.JourneyEnrollments{} },
		func(a *domain.JourneyEnrollments) (decision, error) {
			ev, err := a.EnrollByHand(in, h.now())
			if err != nil {
				return decision{}, err
			}
			started = ev
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{eventlog.DeterministicID("enroll", in.JourneyID, in.TriggerEventID)}}, nil
		}, meta)
	if err != nil {
		return Result{}, nil, err
	}
	if started == nil {
		return Result{}, nil, domain.Conflict("the customer is already enrolled in this journey")
	}
	res.ID = started.EnrollmentID
	return res, started, nil
}

// knownCustomer folds a customer's stream into what a manual enrollment
// needs: whether the shop has the customer, not erased.
type knownCustomer struct {
	shopID         string
	exists, erased bool
}

func (c *knownCustomer) Apply(e domain.Event) {
	switch ev := e.(type) {
	case *domain.CustomerCreated:
		c.shopID, c.exists = ev.ShopID, true
	case *domain.CustomerUpdated:
		if !ev.Stale {
			c.shopID, c.exists = ev.ShopID, true
		}
	case *domain.CustomerErased:
		c.erased = true
	}
}
