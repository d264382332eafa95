package commands_test

import (
	"context"
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
