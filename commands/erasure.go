package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// ExitEnrollment ends the customer's active enrollment in a journey, if
// any. The event id derives from the enrollment and the cause, so a
// repeated exit appends nothing.
type ExitEnrollment struct {
	ShopID, JourneyID, CustomerID string
	Reason                        string
	Cause                         string // the id of what caused the exit (the redact request event)
}

// ExitEnrollment runs the command. The result's ID is the enrollment
// exited, "" when none was active.
func (h *Handler) ExitEnrollment(ctx context.Context, cmd ExitEnrollment, meta Meta) (Result, error) {
	if !domain.HasPrefixID(cmd.JourneyID, domain.PrefixJourney) || !domain.HasPrefixID(cmd.CustomerID, domain.PrefixCustomer) {
		return Result{}, domain.Invalid("enrollment", "an exit needs a journey and a customer")
	}
	var id string
	res, err := execute(ctx, h, cmd.ShopID, domain.EnrollmentStream(cmd.JourneyID, cmd.CustomerID),
		func() *domain.JourneyEnrollments { return &domain.JourneyEnrollments{} },
		func(a *domain.JourneyEnrollments) (decision, error) {
			ev := a.Exit(cmd.ShopID, cmd.JourneyID, cmd.CustomerID, cmd.Reason, h.now())
			if ev == nil {
				return decision{}, nil
			}
			id = ev.EnrollmentID
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{eventlog.DeterministicID("enrollment-exit", ev.EnrollmentID, cmd.Cause)}}, nil
		}, meta)
	res.ID = id
	return res, err
}

// RecordCustomerErased appends the audit entry of a finished customer
// erasure to the customer's stream. Its id derives from the redact request
// event, so a pipeline run again for the same request records it once.
type RecordCustomerErased struct {
	Erased domain.CustomerErased
}

// RecordCustomerErased runs the command.
func (h *Handler) RecordCustomerErased(ctx context.Context, cmd RecordCustomerErased, meta Meta) (Result, error) {
	ev := cmd.Erased
	if ev.ShopID == "" || !domain.HasPrefixID(ev.CustomerID, domain.PrefixCustomer) || ev.RequestEventID == "" {
		return Result{}, domain.Invalid("customer", "an erasure needs a shop, a customer and the request")
	}
	if ev.ErasedAt.IsZero() {
		ev.ErasedAt = h.now()
	}
	ev.ErasedAt = ev.ErasedAt.UTC()
	id := eventlog.DeterministicID("customer-erased", ev.RequestEventID)
	data, err := h.codec.Encode(ctx, id, ev.ShopID, &ev, h.now(), meta.metadata())
	if err != nil {
		return Result{}, err
	}
	res, err := h.log.Append(ctx, domain.CustomerStream(ev.CustomerID), eventlog.Any(), data)
	if err != nil {
		return Result{}, err
	}
	return Result{ID: ev.CustomerID, Position: res.Position, Revision: res.NextExpectedRevision}, nil
}
