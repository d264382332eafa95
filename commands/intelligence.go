package commands

import (
	"context"
	"sort"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// The intelligence writes: RecordKeywordRankings (cgp seo import) and
// StartDecisionRun, CompleteDecisionRun, FailDecisionRun (cgp di run).

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
}

// StartDecisionRun runs the command.
func (h *Handler) StartDecisionRun(ctx context.Context, cmd StartDecisionRun, meta Meta) (Result, *domain.DecisionRunStarted, error) {
	if err := h.requireShop(ctx, cmd.ShopID); err != nil {
		return Result{}, nil, err
	}
	ev := &domain.DecisionRunStarted{RunID: domain.NewID(domain.PrefixDecisionRun), ShopID: cmd.ShopID, Trigger: cmd.Trigger,
		StartedAt: h.now().UTC()}
	res, err := h.appendNew(ctx, cmd.ShopID, domain.DecisionRunStream(ev.RunID), ev, meta)
	res.ID = ev.RunID
	return res, ev, err
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
