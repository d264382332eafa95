package audit

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/eventlog"
)

// Report says whether a shop's history is intact.
type Report struct {
	ShopID string `json:"shop_id"`
	Intact bool   `json:"intact"`
	Events int    `json:"events_checked"`
	// Through is the log position of the last event found intact: the
	// history is verified up to it (0 when none was).
	Through  uint64 `json:"verified_through_position"`
	Streams  int    `json:"streams"`
	Problem  string `json:"problem,omitempty"`
	BadEvent string `json:"first_bad_event,omitempty"`
	Position uint64 `json:"first_bad_position,omitempty"`
}

// verifyPage is how many events Verify reads at once.
const verifyPage = 1000

// Verify recomputes the hash chains of every stream holding the shop's
// events and stops at the first broken link.
//
// With an index (q not nil, checkpoint its projector's checkpoint) and a
// log that reads by position, it costs O(the shop's events): the events the
// index lists up to checkpoint are fetched by position (an event the index
// lists but the log no longer holds is reported missing), then the log is
// read after checkpoint for the events not indexed yet. Without, it reads
// the whole log.
func Verify(ctx context.Context, log eventlog.Log, q *Queries, checkpoint eventlog.Position, shop string) (Report, error) {
	v := &verifier{rep: Report{ShopID: shop, Intact: true}, chain: eventlog.NewChainVerifier(), streams: map[string]bool{}}
	pr, ok := log.(eventlog.PositionReader)
	if q == nil || !ok {
		checkpoint = 0
	} else if err := v.indexed(ctx, pr, q, checkpoint, shop); err != nil || !v.rep.Intact {
		v.rep.Streams = len(v.streams)
		return v.rep, err
	}
	after := checkpoint
	for v.rep.Intact {
		evs, err := log.ReadAll(ctx, after, verifyPage)
		if err != nil {
			return v.rep, fmt.Errorf("read log: %w", err)
		}
		for i := range evs {
			after = evs[i].Position
			if evs[i].ShopID == shop && !v.check(&evs[i]) {
				break
			}
		}
		if len(evs) < verifyPage {
			break
		}
	}
	v.rep.Streams = len(v.streams)
	return v.rep, nil
}

type verifier struct {
	rep     Report
	chain   *eventlog.ChainVerifier
	streams map[string]bool
}

// check verifies the next event of the shop; false once the history is
// found broken.
func (v *verifier) check(e *eventlog.Event) bool {
	err := v.chain.Check(e)
	if err == nil && !v.streams[e.StreamID] && e.Revision != 0 {
		err = fmt.Errorf("event %s (%s@%d): stream does not start at revision 0", e.ID, e.StreamID, e.Revision)
	}
	v.streams[e.StreamID] = true
	v.rep.Events++
	if err != nil {
		v.fail(err.Error(), e.ID.String(), e.Position)
		return false
	}
	v.rep.Through = e.Position
	return true
}

func (v *verifier) fail(problem, id string, pos eventlog.Position) {
	v.rep.Intact, v.rep.Problem, v.rep.BadEvent, v.rep.Position = false, problem, id, pos
}

// indexed checks the events the index lists up to checkpoint.
func (v *verifier) indexed(ctx context.Context, pr eventlog.PositionReader, q *Queries, checkpoint eventlog.Position, shop string) error {
	var after eventlog.Position
	for {
		entries, more, err := q.List(ctx, Query{Shop: shop, After: after, Limit: verifyPage})
		if err != nil {
			return err
		}
		positions := make([]eventlog.Position, 0, len(entries))
		for _, en := range entries {
			if en.Position > checkpoint {
				break
			}
			positions = append(positions, en.Position)
		}
		evs, err := pr.ReadPositions(ctx, positions)
		if err != nil {
			return fmt.Errorf("read log: %w", err)
		}
		j := 0
		for _, en := range entries[:len(positions)] {
			after = en.Position
			if j >= len(evs) || evs[j].Position != en.Position {
				v.rep.Events++
				v.fail(fmt.Sprintf("event %s@%d at position %d is missing from the log: revision gap", en.Stream, en.Revision, en.Position),
					"", en.Position)
				return nil
			}
			e := &evs[j]
			j++
			if e.ShopID != shop || e.StreamID != en.Stream || e.Revision != en.Revision {
				v.rep.Events++
				v.fail(fmt.Sprintf("event %s at position %d: recorded as %s@%d of this shop, now %s@%d", e.ID, e.Position,
					en.Stream, en.Revision, e.StreamID, e.Revision), e.ID.String(), e.Position)
				return nil
			}
			if !v.check(e) {
				return nil
			}
		}
		if !more || len(positions) < len(entries) {
			return nil
		}
	}
}
