package intelligence

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	intelrm "github.com/cgp-platform/cgp/projections/intelligence"
	"github.com/cgp-platform/cgp/projections/journeys"
)

// Defaults of a decision-intelligence run.
const (
	// DefaultLeadTime is the reorder lead time assumed for every variant
	// (the read models hold no supplier lead times): stock covering fewer
	// days than this at the current velocity is recommended for reorder.
	DefaultLeadTime = 14 * 24 * time.Hour
	// VelocityWindow is the sales window of the velocity: units sold in
	// orders created in the last 30 days (cancelled orders excluded),
	// divided by 30.
	VelocityWindow = 30 * 24 * time.Hour
	// DefaultTopN bounds the items of a recommendation.
	DefaultTopN = 10
	pageSize    = 100
	failTimeout = 10 * time.Second
)

// Runner runs decision-intelligence for a shop: it reads the customers
// and commerce read models and records the run and its recommendations as
// events (DecisionRunStarted, then DecisionRunCompleted or
// DecisionRunFailed).
type Runner struct {
	Commands     *commands.Handler
	Customers    *customers.Queries
	Commerce     *commerce.Queries
	Intelligence *intelrm.Queries
	// Campaigns and Templates, when both set, add the campaigns held up by
	// a paused or rejected template.
	Campaigns *campaigns.Queries
	Templates TemplateStates
	// Journeys, when set, adds the journeys paused by a paused or
	// rejected template.
	Journeys *journeys.Queries
	Now      func() time.Time // time.Now when nil
	LeadTime time.Duration    // DefaultLeadTime when 0
	TopN     int              // DefaultTopN when 0
}

// Outcome is what a run recorded.
type Outcome struct {
	RunID           string
	Status          string
	Position        uint64 // of the run's last event
	Recommendations []domain.Recommendation
}

// Run runs once for shop. trigger says why (cli, schedule). When reading
// the read models fails the run is recorded as failed and the error is
// returned.
func (r *Runner) Run(ctx context.Context, shop, trigger string, meta commands.Meta) (Outcome, error) {
	return r.run(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: trigger}, meta)
}

// RunDay runs the shop's scheduled run of a UTC day (YYYY-MM-DD), trigger
// schedule, under the day's deterministic run id. When the day's run is
// already recorded (another server, an earlier attempt) nothing is
// computed or recorded and the error is a conflict whose cause is
// domain.ErrRunStarted; the outcome then holds the day's run id.
func (r *Runner) RunDay(ctx context.Context, shop, day string, meta commands.Meta) (Outcome, error) {
	return r.run(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: domain.TriggerSchedule, Day: day}, meta)
}

func (r *Runner) run(ctx context.Context, start commands.StartDecisionRun, meta commands.Meta) (Outcome, error) {
	shop := start.ShopID
	res, _, err := r.Commands.StartDecisionRun(ctx, start, meta)
	if err != nil {
		return Outcome{RunID: res.ID}, err
	}
	out := Outcome{RunID: res.ID}
	recs, err := r.recommend(ctx, shop)
	if err != nil {
		// The failure is recorded even when ctx ended (a run's time bound, a
		// shutdown), so the run does not stay running.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failTimeout)
		defer cancel()
		reason := "the read models could not be read"
		if ctx.Err() != nil {
			reason = "the run was stopped: time bound reached or server shutting down"
		}
		fres, ferr := r.Commands.FailDecisionRun(fctx, commands.FailDecisionRun{ShopID: shop, RunID: out.RunID, Reason: reason}, meta)
		out.Status, out.Position = domain.RunFailed, uint64(fres.Position)
		if ferr != nil {
			return out, fmt.Errorf("run %s: %w (and recording the failure: %v)", out.RunID, err, ferr)
		}
		return out, fmt.Errorf("run %s: %w", out.RunID, err)
	}
	cres, err := r.Commands.CompleteDecisionRun(ctx, commands.CompleteDecisionRun{ShopID: shop, RunID: out.RunID, Recommendations: recs}, meta)
	if err != nil {
		return out, err
	}
	out.Status, out.Position, out.Recommendations = domain.RunCompleted, uint64(cres.Position), recs
	return out, nil
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

func (r *Runner) topN() int {
	if r.TopN > 0 {
		return r.TopN
	}
	return DefaultTopN
}

func (r *Runner) leadTime() time.Duration {
	if r.LeadTime > 0 {
		return r.LeadTime
	}
	return DefaultLeadTime
}

// recommend computes every recommendation that has something to act on.
func (r *Runner) recommend(ctx context.Context, shop string) ([]domain.Recommendation, error) {
	now := r.now()
	recs := []domain.Recommendation{}
	win, err := r.winBack(ctx, shop, now)
	if err != nil {
		return nil, fmt.Errorf("at-risk customers: %w", err)
	}
	if win != nil {
		recs = append(recs, *win)
	}
	reorder, err := r.reorder(ctx, shop, now)
	if err != nil {
		return nil, fmt.Errorf("stock cover: %w", err)
	}
	if reorder != nil {
		recs = append(recs, *reorder)
	}
	blocked, err := r.templateBlocked(ctx, shop)
	if err != nil {
		return nil, fmt.Errorf("campaign templates: %w", err)
	}
	if blocked != nil {
		recs = append(recs, *blocked)
	}
	return recs, nil
}

// winBack: every customer in lifecycle stage at_risk (last order 90 to 180
// days ago), their count and total spent, and the top N by total spent.
func (r *Runner) winBack(ctx context.Context, shop string, now time.Time) (*domain.Recommendation, error) {
	var count int
	var spent domain.Amount
	var items []domain.RecommendedItem
	var after *customers.Key
	for {
		rows, next, err := r.Customers.List(ctx, customers.ListQuery{Shop: shop, Stage: domain.StageAtRisk, Sort: customers.SortTotalSpent,
			Desc: true, After: after, Limit: pageSize, Now: now})
		if err != nil {
			return nil, err
		}
		for _, c := range rows {
			count++
			spent += c.TotalSpent
			if len(items) < r.topN() {
				items = append(items, domain.RecommendedItem{Type: "customer", ID: c.ID,
					Figures: map[string]float64{"total_spent": c.TotalSpent.Float(), "orders_count": float64(c.OrdersCount)}})
			}
		}
		if next == nil {
			break
		}
		after = next
	}
	if count == 0 {
		return nil, nil
	}
	return &domain.Recommendation{Kind: domain.RecommendWinBack,
		Summary: fmt.Sprintf("%d customers are at risk (last order 90 to 180 days ago): worth a win-back campaign", count),
		Figures: map[string]float64{"customers": float64(count), "total_spent": spent.Float()}, Items: items}, nil
}

// reorder: variants whose stock covers fewer days than the lead time at
// the velocity of the last 30 days; the least covered first.
func (r *Runner) reorder(ctx context.Context, shop string, now time.Time) (*domain.Recommendation, error) {
	sold, err := r.unitsSold(ctx, shop, now.Add(-VelocityWindow))
	if err != nil {
		return nil, err
	}
	stocks, err := r.Intelligence.VariantStocks(ctx, shop)
	if err != nil {
		return nil, err
	}
	windowDays := VelocityWindow.Hours() / 24
	leadDays := r.leadTime().Hours() / 24
	var items []domain.RecommendedItem
	for _, s := range stocks {
		units := sold[s.VariantID]
		if units <= 0 {
			continue
		}
		velocity := float64(units) / windowDays
		cover := math.Max(float64(s.Available), 0) / velocity
		if cover >= leadDays {
			continue
		}
		items = append(items, domain.RecommendedItem{Type: "variant", ID: s.VariantID, Figures: map[string]float64{
			"available": float64(s.Available), "units_sold": float64(units), "daily_velocity": round2(velocity), "days_of_cover": round2(cover)}})
	}
	if len(items) == 0 {
		return nil, nil
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].Figures["days_of_cover"] < items[j].Figures["days_of_cover"] })
	n := len(items)
	if n > r.topN() {
		items = items[:r.topN()]
	}
	return &domain.Recommendation{Kind: domain.RecommendReorder,
		Summary: fmt.Sprintf("%d variants have stock for fewer than %g days at the sales velocity of the last %g days: reorder", n, leadDays, windowDays),
		Figures: map[string]float64{"variants": float64(n), "lead_time_days": leadDays, "window_days": windowDays}, Items: items}, nil
}

// unitsSold sums the quantities per platform variant id of the shop's
// orders created since, cancelled orders excluded.
func (r *Runner) unitsSold(ctx context.Context, shop string, since time.Time) (map[string]int64, error) {
	sold := map[string]int64{}
	var after *commerce.OrderKey
	for {
		rows, next, err := r.Commerce.ListOrders(ctx, commerce.OrderListQuery{Shop: shop, CreatedFrom: since,
			Sort: commerce.OrderSortCreatedAt, After: after, Limit: pageSize})
		if err != nil {
			return nil, err
		}
		for _, o := range rows {
			if !o.CancelledAt.IsZero() {
				continue
			}
			for _, l := range o.Lines {
				if l.VariantID != "" && l.Quantity > 0 {
					sold[l.VariantID] += int64(l.Quantity)
				}
			}
		}
		if next == nil {
			return sold, nil
		}
		after = next
	}
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
