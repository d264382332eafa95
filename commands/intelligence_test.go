package commands_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

func ranking(keyword, date string, pos float64) domain.KeywordRanking {
	return domain.KeywordRanking{Keyword: keyword, URL: "https://shop.example/p", Position: pos, SearchVolume: 10, Clicks: 1,
		Impressions: 5, Date: date}
}

func TestRecordKeywordRankings(t *testing.T) {
	ctx := context.Background()
	h, log := newHandler(t)
	shop := newShop(t, h, "seo.example.com", "agency")
	rows := []domain.KeywordRanking{ranking("Shoes", "2026-11-01", 5), ranking("shoes", "2026-11-08", 3), ranking("socks", "2026-11-08", 9),
		ranking("shoes", "2026-11-08", 4)} // a second row of a recorded date is ignored
	res, err := h.RecordKeywordRankings(ctx, commands.RecordKeywordRankings{ShopID: shop, Rankings: rows}, meta)
	if err != nil || res.Appended != 3 || res.Unchanged != 1 || res.Keywords != 2 || res.Position == 0 {
		t.Fatalf("record: %+v %v", res, err)
	}
	shoes := domain.KeywordID(shop, "shoes", "https://shop.example/p")
	if n := streamLen(t, log, domain.KeywordStream(shoes)); n != 2 {
		t.Fatalf("shoes stream has %d events", n)
	}
	// The same report again appends nothing; a new date appends one.
	head, _ := log.HeadPosition(ctx)
	again, err := h.RecordKeywordRankings(ctx, commands.RecordKeywordRankings{ShopID: shop, Rankings: rows}, meta)
	if after, _ := log.HeadPosition(ctx); err != nil || again.Appended != 0 || after != head {
		t.Fatalf("again: %+v %v, head %d → %d", again, err, head, after)
	}
	more, err := h.RecordKeywordRankings(ctx, commands.RecordKeywordRankings{ShopID: shop,
		Rankings: append(rows, ranking("shoes", "2026-11-15", 2))}, meta)
	if err != nil || more.Appended != 1 {
		t.Fatalf("more: %+v %v", more, err)
	}
	// One invalid row rejects the report before anything is appended.
	head, _ = log.HeadPosition(ctx)
	_, err = h.RecordKeywordRankings(ctx, commands.RecordKeywordRankings{ShopID: shop,
		Rankings: []domain.KeywordRanking{ranking("hats", "2026-11-01", 1), ranking("caps", "2026-13-01", 1)}}, meta)
	if after, _ := log.HeadPosition(ctx); domain.ErrorCode(err) != domain.CodeInvalid || after != head {
		t.Fatalf("invalid: %v, head %d → %d", err, head, after)
	}
	if _, err := h.RecordKeywordRankings(ctx, commands.RecordKeywordRankings{ShopID: "shop_nope", Rankings: rows}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("bad shop: %v", err)
	}
}

func TestDecisionRunLifecycle(t *testing.T) {
	ctx := context.Background()
	h, log := newHandler(t)
	shop := newShop(t, h, "di.example.com", "agency")
	res, ev, err := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: "cli"}, meta)
	if err != nil || res.ID != ev.RunID || !domain.HasPrefixID(ev.RunID, domain.PrefixDecisionRun) {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, _, err := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: "shop_nope"}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("unknown shop: %v", err)
	}
	if _, err := h.CompleteDecisionRun(ctx, commands.CompleteDecisionRun{ShopID: "shop_2", RunID: res.ID}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop: %v", err)
	}
	if _, err := h.CompleteDecisionRun(ctx, commands.CompleteDecisionRun{ShopID: shop, RunID: res.ID}, meta); err != nil {
		t.Fatal(err)
	}
	if _, err := h.FailDecisionRun(ctx, commands.FailDecisionRun{ShopID: shop, RunID: res.ID, Reason: "x"}, meta); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("finishing twice: %v", err)
	}
	if _, err := h.CompleteDecisionRun(ctx, commands.CompleteDecisionRun{ShopID: shop, RunID: "cus_1"}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("not a run id: %v", err)
	}
	if n := streamLen(t, log, domain.DecisionRunStream(res.ID)); n != 2 {
		t.Fatalf("run stream has %d events", n)
	}
}

// TestScheduledDecisionRunStartsOncePerDay: the scheduled run of a shop
// and day has a run id and start event id derived from both, so starts
// racing from many servers record one run: one wins, the others get a
// conflict caused by domain.ErrRunStarted and append nothing; another day
// or another shop is another run; on-demand runs stay unlimited.
func TestScheduledDecisionRunStartsOncePerDay(t *testing.T) {
	ctx := context.Background()
	h, log := newHandler(t)
	shop := newShop(t, h, "di-day.example.com", "agency")
	other := newShop(t, h, "di-day-b.example.com", "agency")
	const n = 8
	var wg sync.WaitGroup
	results := make(chan error, n)
	ids := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _, err := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: domain.TriggerSchedule, Day: "2026-11-21"}, meta)
			results <- err
			ids <- res.ID
		}()
	}
	wg.Wait()
	close(results)
	close(ids)
	var won, lost int
	for err := range results {
		switch {
		case err == nil:
			won++
		case errors.Is(err, domain.ErrRunStarted) && domain.ErrorCode(err) == domain.CodeConflict:
			lost++
		default:
			t.Fatalf("racing start: %v", err)
		}
	}
	want := domain.ScheduledRunID(shop, "2026-11-21")
	for id := range ids {
		if id != want {
			t.Fatalf("run id %q, want %q", id, want)
		}
	}
	if won != 1 || lost != n-1 {
		t.Fatalf("%d starts won and %d lost, want 1 and %d", won, lost, n-1)
	}
	if got := streamLen(t, log, domain.DecisionRunStream(want)); got != 1 {
		t.Fatalf("the day's run stream has %d events", got)
	}
	run, err := h.DecisionRun(ctx, shop, want)
	if err != nil || run.Status != domain.RunRunning || run.Trigger != domain.TriggerSchedule || run.StartedAt.IsZero() {
		t.Fatalf("run state: %+v %v", run, err)
	}
	if run, err := h.DecisionRun(ctx, other, want); err != nil || run.Status != "" {
		t.Fatalf("the run seen as another shop's: %+v %v", run, err)
	}
	// After it finished, the day's start still records nothing.
	if _, err := h.CompleteDecisionRun(ctx, commands.CompleteDecisionRun{ShopID: shop, RunID: want}, meta); err != nil {
		t.Fatal(err)
	}
	head, _ := log.HeadPosition(ctx)
	if _, _, err := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: domain.TriggerSchedule, Day: "2026-11-21"}, meta); !errors.Is(err, domain.ErrRunStarted) {
		t.Fatalf("start after completion: %v", err)
	}
	if after, _ := log.HeadPosition(ctx); after != head {
		t.Fatalf("a repeated start appended: head %d → %d", head, after)
	}
	next, _, err := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: domain.TriggerSchedule, Day: "2026-11-22"}, meta)
	if err != nil || next.ID == want || next.ID != domain.ScheduledRunID(shop, "2026-11-22") {
		t.Fatalf("next day: %+v %v", next, err)
	}
	if res, _, err := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: other, Trigger: domain.TriggerSchedule, Day: "2026-11-21"}, meta); err != nil || res.ID == want {
		t.Fatalf("another shop's day: %+v %v", res, err)
	}
	for _, day := range []string{"2026-13-01", "21/11/2026", "2026-11-21T00:00:00Z"} {
		if _, _, err := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: domain.TriggerSchedule, Day: day}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("day %q: %v", day, err)
		}
	}
	a, _, err1 := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: domain.TriggerCLI}, meta)
	b, _, err2 := h.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: domain.TriggerCLI}, meta)
	if err1 != nil || err2 != nil || a.ID == b.ID {
		t.Fatalf("on-demand runs: %s %v, %s %v", a.ID, err1, b.ID, err2)
	}
}
