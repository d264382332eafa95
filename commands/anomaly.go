package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// RaiseAnomaly raises an anomaly (reactors and the brute-force guard):
// nothing is recorded while one of its dedupe key is open, or when its
// cause was handled already.
type RaiseAnomaly struct {
	Draft domain.AnomalyDraft
}

// RaiseAnomaly runs the command against the dedupe key's stream with its
// expected revision; the event is nil when nothing was recorded.
func (h *Handler) RaiseAnomaly(ctx context.Context, cmd RaiseAnomaly, meta Meta) (Result, *domain.AnomalyRaised, error) {
	var raised *domain.AnomalyRaised
	res, err := execute(ctx, h, cmd.Draft.ShopID, domain.AnomalyStream(cmd.Draft.ShopID, cmd.Draft.DedupeKey),
		func() *domain.Anomaly { return &domain.Anomaly{} },
		func(a *domain.Anomaly) (decision, error) {
			ev, err := a.Raise(cmd.Draft, h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			raised = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	if raised != nil {
		res.ID = raised.AnomalyID
	}
	return res, raised, err
}

// ResolveAnomaly closes the open anomaly of a dedupe key, if any.
// CausePosition is the log position of the triggering event (0: none).
type ResolveAnomaly struct {
	ShopID, DedupeKey, Cause, Reason string
	CausePosition                    uint64
}

// ResolveAnomaly runs the command against the dedupe key's stream; the
// event is nil when none was open.
func (h *Handler) ResolveAnomaly(ctx context.Context, cmd ResolveAnomaly, meta Meta) (Result, *domain.AnomalyResolved, error) {
	var resolved *domain.AnomalyResolved
	res, err := execute(ctx, h, cmd.ShopID, domain.AnomalyStream(cmd.ShopID, cmd.DedupeKey),
		func() *domain.Anomaly { return &domain.Anomaly{} },
		func(a *domain.Anomaly) (decision, error) {
			ev := a.Resolve(cmd.ShopID, cmd.DedupeKey, cmd.Cause, cmd.Reason, cmd.CausePosition, h.now())
			if ev == nil {
				return decision{}, nil
			}
			resolved = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	if resolved != nil {
		res.ID = resolved.AnomalyID
	}
	return res, resolved, err
}
