package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The intelligence writes: RecordKeywordRankings (cgp seo import) and
// StartDecisionRun, CompleteDecisionRun, FailDecisionRun (cgp di run and
// the daily schedule of cgp serve).

// RecordKeywordRankings appends the rankings of a report of a shop. Every
// ranking is validated before anything is appended (all or nothing for
// invalid input); a ranking whose keyword, URL and date are already
// recorded is skipped, so importing the same report again appends nothing.
type RecordKeywordRankings struct {
	ShopID   string
	Rankings []domain.KeywordRanking
}

// RankingsRecorded is what RecordKeywordRankings did.
type RankingsRecorded struct {
	Position  eventlog.Position // of the last append; 0 when nothing was appended
	Keywords  int               // distinct keyword and URL pairs in the report
	Appended  int               // rankings appended
	Unchanged int               // rankings already recorded
}

// RecordKeywordRankings runs the command: one append per keyword stream.
func (h *Handler) RecordKeywordRankings(ctx context.Context, cmd RecordKeywordRankings, meta Meta) (RankingsRecorded, error) {
	if err := h.requireShop(ctx, cmd.ShopID); err != nil {
		return RankingsRecorded{}, err
	}
	byKeyword := map[string][]domain.KeywordRanking{}
	for i := range cmd.Rankings {
		r := cmd.Rankings[i]
		if err := r.Validate(); err != nil {
			return RankingsRecorded{}, err
		}
		id := domain.KeywordID(cmd.ShopID, r.Keyword, r.URL)
		byKeyword[id] = append(byKeyword[id], r)
	}
	ids := make([]string, 0, len(byKeyword))
	for id := range byKeyword {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := RankingsRecorded{Keywords: len(ids)}
	for _, id := range ids {
		appended, res, err := h.recordKeyword(ctx, cmd.ShopID, id, byKeyword[id], meta)
		if err != nil {
			return out, err
		}
		out.Appended += appended
		out.Unchanged += len(byKeyword[id]) - appended
		if appended > 0 {
			out.Position = res.Position
		}
	}
	return out, nil
}

// recordKeyword appends the rankings of one keyword whose dates are not
// recorded yet (the first row of a date in the report wins).
func (h *Handler) recordKeyword(ctx context.Context, shop, id string, rows []domain.KeywordRanking, meta Meta) (int, Result, error) {
	var n int
	res, err := execute(ctx, h, shop, domain.KeywordStream(id), func() *domain.SEOKeyword { return &domain.SEOKeyword{} },
		func(k *domain.SEOKeyword) (decision, error) {
			var d decision
			seen := map[string]bool{}
			for _, r := range rows {
				if k.Dates[r.Date] || seen[r.Date] {
					continue
				}
				seen[r.Date] = true
				d.events = append(d.events, &domain.KeywordRankingRecorded{KeywordID: id, ShopID: shop, KeywordRanking: r})
				d.ids = append(d.ids, eventlog.DeterministicID("seo", shop, r.Keyword, r.URL, r.Date))
			}
			n = len(d.events)
			return d, nil
		}, meta)
	return n, res, err
}

// StartDecisionRun records the start of a decision-intelligence run of a
// shop; the result's ID is the new run's id.
type StartDecisionRun struct {
	ShopID  string
	Trigger string // cli, schedule
	// Day, when set (YYYY-MM-DD, UTC), makes the run the shop's scheduled
	// run of that day: its run id (domain.ScheduledRunID) and the id of its
	// start event derive from shop and day, so the log records one start
	// per shop and day however many servers or attempts try. Empty: a new
	// run with a random id (on demand, as many as asked for).
	Day string
}

// StartDecisionRun runs the command. With Day, a start that finds the
// day's run already recorded, or loses the race to record it, records
// nothing and returns a conflict whose cause is domain.ErrRunStarted (the
// result's ID is then the day's run id).
func (h *Handler) StartDecisionRun(ctx context.Context, cmd StartDecisionRun, meta Meta) (Result, *domain.DecisionRunStarted, error) {
	if err := h.requireShop(ctx, cmd.ShopID); err != nil {
		return Result{}, nil, err
	}
	if cmd.Day != "" {
		return h.startScheduledRun(ctx, cmd, meta)
	}
	ev := &domain.DecisionRunStarted{RunID: domain.NewID(domain.PrefixDecisionRun), ShopID: cmd.ShopID, Trigger: cmd.Trigger,
		StartedAt: h.now().UTC()}
	res, err := h.appendNew(ctx, cmd.ShopID, domain.DecisionRunStream(ev.RunID), ev, meta)
	res.ID = ev.RunID
	return res, ev, err
}

// startScheduledRun appends the day's start event with its deterministic
// id to a stream that must not exist yet. Two servers racing both see an
// empty stream; the log keeps one append: the loser gets a wrong revision,
// or, when the log takes its append for a repeat of the winner's (same
// event id), a success that wrote nothing. The event read back tells them
// apart: its sealed payload (random nonce) is byte-equal to this attempt's
// only when this attempt wrote it.
func (h *Handler) startScheduledRun(ctx context.Context, cmd StartDecisionRun, meta Meta) (Result, *domain.DecisionRunStarted, error) {
	if d, err := time.Parse(domain.RunDayLayout, cmd.Day); err != nil || d.Format(domain.RunDayLayout) != cmd.Day {
		return Result{}, nil, domain.Invalid("day", "day must be a calendar date YYYY-MM-DD")
	}
	runID := domain.ScheduledRunID(cmd.ShopID, cmd.Day)
	stream := domain.DecisionRunStream(runID)
	started := func(rev uint64) (Result, *domain.DecisionRunStarted, error) {
		return Result{ID: runID, Revision: rev}, nil, &domain.Error{Code: domain.CodeConflict,
			Message: "decision run " + runID + " of " + cmd.Day + " is already started", Err: domain.ErrRunStarted}
	}
	var run domain.DecisionRun
	rev, exists, err := h.load(ctx, stream, &run)
	if err != nil {
		return Result{}, nil, err
	}
	if exists {
		return started(rev)
	}
	ev := &domain.DecisionRunStarted{RunID: runID, ShopID: cmd.ShopID, Trigger: cmd.Trigger, StartedAt: h.now().UTC()}
	data, err := h.codec.Encode(ctx, eventlog.DeterministicID("decision_run", "schedule", cmd.ShopID, cmd.Day), cmd.ShopID, ev, h.now(),
		meta.metadata())
	if err != nil {
		return Result{}, nil, err
	}
	res, err := h.log.Append(ctx, stream, eventlog.NoStream(), data)
	if errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		return started(0)
	}
	if err != nil {
		return Result{}, nil, fmt.Errorf("append to %s: %w", stream, err)
	}
	first, err := h.log.ReadStream(ctx, stream, 0, 1)
	if err != nil {
		return Result{}, nil, fmt.Errorf("read %s: %w", stream, err)
	}
	if len(first) == 0 || !bytes.Equal(first[0].Data, data.Data) {
		return started(res.NextExpectedRevision)
	}
	return Result{ID: runID, Position: res.Position, Revision: res.NextExpectedRevision}, ev, nil
}

// DecisionRun returns the state of a run of shop as the log has it (a
// zero Status when the shop has no such run): the scheduler asks it
// whether the day's run is recorded and whether it finished.
func (h *Handler) DecisionRun(ctx context.Context, shop, runID string) (domain.DecisionRun, error) {
	var run domain.DecisionRun
	if !domain.HasPrefixID(runID, domain.PrefixDecisionRun) {
		return run, nil
	}
	if _, _, err := h.load(ctx, domain.DecisionRunStream(runID), &run); err != nil {
		return domain.DecisionRun{}, err
	}
	if run.ShopID != shop {
		return domain.DecisionRun{}, nil
	}
	return run, nil
}

// CompleteDecisionRun records a run's recommendations and its end.
type CompleteDecisionRun struct {
	ShopID          string
	RunID           string
	Recommendations []domain.Recommendation
}

// CompleteDecisionRun runs the command; a run that already finished is a
// conflict.
func (h *Handler) CompleteDecisionRun(ctx context.Context, cmd CompleteDecisionRun, meta Meta) (Result, error) {
	return h.finishRun(ctx, cmd.ShopID, cmd.RunID, meta, func() domain.Event {
		recs := cmd.Recommendations
		if recs == nil {
			recs = []domain.Recommendation{}
		}
		return &domain.DecisionRunCompleted{RunID: cmd.RunID, ShopID: cmd.ShopID, Recommendations: recs, FinishedAt: h.now().UTC()}
	})
}

// FailDecisionRun records that a run could not finish.
type FailDecisionRun struct {
	ShopID string
	RunID  string
	Reason string // safe to show: no personal data or secrets
}

// FailDecisionRun runs the command.
func (h *Handler) FailDecisionRun(ctx context.Context, cmd FailDecisionRun, meta Meta) (Result, error) {
	return h.finishRun(ctx, cmd.ShopID, cmd.RunID, meta, func() domain.Event {
		return &domain.DecisionRunFailed{RunID: cmd.RunID, ShopID: cmd.ShopID, Reason: cmd.Reason, FinishedAt: h.now().UTC()}
	})
}

func (h *Handler) finishRun(ctx context.Context, shop, runID string, meta Meta, event func() domain.Event) (Result, error) {
	if !domain.HasPrefixID(runID, domain.PrefixDecisionRun) {
		return Result{}, domain.NotFound("decision run")
	}
	res, err := execute(ctx, h, shop, domain.DecisionRunStream(runID), func() *domain.DecisionRun { return &domain.DecisionRun{} },
		func(r *domain.DecisionRun) (decision, error) {
			if err := r.Finish(shop); err != nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{event()}}, nil
		}, meta)
	res.ID = runID
	return res, err
}

// requireShop is nil when the shop exists; a not_found error otherwise.
func (h *Handler) requireShop(ctx context.Context, id string) error {
	if !domain.HasPrefixID(id, "shop_") {
		return domain.NotFound("shop")
	}
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(id), &shop); err != nil {
		return err
	}
	if !shop.Exists {
		return domain.NotFound("shop")
	}
	return nil
}
