package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// FinishEnrollment records the end of an enrollment the journey runner
// ran: completed, or exited for Reason. Nothing when the enrollment is not
// the customer's active one any more (a repeat after a crash).
type FinishEnrollment struct {
	ShopID, JourneyID, CustomerID, EnrollmentID string
	Completed                                   bool
	Reason                                      string
}

// FinishEnrollment runs the command.
func (h *Handler) FinishEnrollment(ctx context.Context, cmd FinishEnrollment, meta Meta) (Result, error) {
	return execute(ctx, h, cmd.ShopID, domain.EnrollmentStream(cmd.JourneyID, cmd.CustomerID),
		func() *domain.JourneyEnrollments { return &domain.JourneyEnrollments{} },
		func(a *domain.JourneyEnrollments) (decision, error) {
			ev := a.Finish(cmd.ShopID, cmd.JourneyID, cmd.CustomerID, cmd.EnrollmentID, cmd.Completed, cmd.Reason, h.now())
			if ev == nil {
				return decision{}, nil
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
}
