package intelligence_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/intelligence"
)

var meta = commands.Meta{Actor: "test", Source: "cli"}

// shop is the shop record creates.
var shop string

func rank(keyword, url, date string, pos float64, volume int64) domain.KeywordRanking {
	return domain.KeywordRanking{Keyword: keyword, URL: url, Position: pos, SearchVolume: volume, Clicks: 1, Impressions: 10, Date: date}
}

// record appends rankings in two imports, the later dates first, and a
// completed and a running decision run.
func record(t *testing.T, c *testenv.Core) (eventlog.Position, string) {
	t.Helper()
	ctx := context.Background()
	acc, err := c.Commands.CreateAccount(ctx, commands.CreateAccount{Name: "a", Plan: "agency"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := c.Commands.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: "a.example.com", Plan: "agency",
		WebhookSecret: "0123456789abcdef"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	shop = sh.ID
	var last eventlog.Position
	for _, rows := range [][]domain.KeywordRanking{
		{rank("shoes", "https://a.example/s", "2026-11-15", 2, 900), rank("socks", "https://a.example/k", "2026-11-01", 20, 50)},
		{rank("shoes", "https://a.example/s", "2026-11-01", 9, 800), rank("shoes", "https://a.example/s", "2026-11-08", 6, 850),
			rank("hats", "https://a.example/h", "2026-11-01", 4, 300), rank("hats", "https://a.example/h", "2026-11-08", 7, 310)},
	} {
		res, err := c.Commands.RecordKeywordRankings(ctx, commands.RecordKeywordRankings{ShopID: shop, Rankings: rows}, meta)
		if err != nil {
			t.Fatal(err)
		}
		last = res.Position
	}
	done, _, err := c.Commands.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: "cli"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	recs := []domain.Recommendation{{Kind: domain.RecommendWinBack, Summary: "s", Figures: map[string]float64{"customers": 2}}}
	if _, err := c.Commands.CompleteDecisionRun(ctx, commands.CompleteDecisionRun{ShopID: shop, RunID: done.ID, Recommendations: recs}, meta); err != nil {
		t.Fatal(err)
	}
	res, _, err := c.Commands.StartDecisionRun(ctx, commands.StartDecisionRun{ShopID: shop, Trigger: "schedule"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	if res.Position > last {
		last = res.Position
	}
	return last, done.ID
}

func TestKeywordsAndRuns(t *testing.T) {
	ctx := context.Background()
	c := testenv.New(t, nil)
	rs := c.ReadSide(t, intelligence.Projector(c.Codec)) // live: folds the events as they are appended
	last, runID := record(t, c)
	rs.WaitFor(t, last)
	q := intelligence.NewQueries(rs.DB())

	shoes, err := q.Keyword(ctx, shop, domain.KeywordID(shop, "shoes", "https://a.example/s"))
	if err != nil {
		t.Fatal(err)
	}
	// The latest date wins whatever the order the rankings arrived in.
	if shoes.Position != 2 || shoes.PositionDate != "2026-11-15" || *shoes.PreviousPosition != 6 || *shoes.PreviousDate != "2026-11-08" ||
		shoes.Change != 4 || shoes.SearchVolume != 900 || shoes.Rankings != 3 {
		t.Fatalf("shoes: %+v", shoes)
	}
	if _, err := q.Keyword(ctx, "shop_2", shoes.ID); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop: %v", err)
	}
	order := func(sort string, desc bool) []string {
		var out []string
		var after *intelligence.Key
		for {
			rows, next, err := q.Keywords(ctx, intelligence.KeywordListQuery{Shop: shop, Sort: sort, Desc: desc, After: after, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				out = append(out, r.Keyword)
			}
			if next == nil {
				return out
			}
			after = next
		}
	}
	for _, c := range []struct {
		sort string
		desc bool
		want []string
	}{
		{"position", false, []string{"shoes", "hats", "socks"}},
		{"change", true, []string{"shoes", "socks", "hats"}},
		{"search_volume", true, []string{"shoes", "hats", "socks"}},
		{"keyword", false, []string{"hats", "shoes", "socks"}},
	} {
		if got := order(c.sort, c.desc); !reflect.DeepEqual(got, c.want) {
			t.Errorf("sort %s desc=%v: %v, want %v", c.sort, c.desc, got, c.want)
		}
	}

	run, err := q.Run(ctx, shop, runID)
	if err != nil || run.Status != domain.RunCompleted || run.FinishedAt.IsZero() || len(run.Recommendations) != 1 {
		t.Fatalf("run: %+v %v", run, err)
	}
	running, _, err := q.Runs(ctx, intelligence.RunListQuery{Shop: shop, Status: domain.RunRunning, Limit: 10})
	if err != nil || len(running) != 1 || running[0].Trigger != "schedule" || !running[0].FinishedAt.IsZero() {
		t.Fatalf("running: %+v %v", running, err)
	}

	// A rebuild from position 0 equals the live read model row for row.
	again := c.ReadSide(t, intelligence.Projector(c.Codec))
	again.WaitFor(t, last)
	for _, table := range []string{"seo_keywords", "seo_rankings", "decision_runs"} {
		if a, b := testenv.Dump(t, rs.DB(), table, "1, 2"), testenv.Dump(t, again.DB(), table, "1, 2"); !reflect.DeepEqual(a, b) {
			t.Errorf("%s differs after rebuild:\n%v\n%v", table, a, b)
		}
	}
}

// RankingsBetween gives each keyword of the shop its rankings of the range
// (inclusive), by keyword id and date; keywords without one are left out,
// as are another shop's.
func TestRankingsBetween(t *testing.T) {
	ctx := context.Background()
	c := testenv.New(t, nil)
	rs := c.ReadSide(t, intelligence.Projector(c.Codec))
	last, _ := record(t, c)
	rs.WaitFor(t, last)
	q := intelligence.NewQueries(rs.DB())
	got, err := q.RankingsBetween(ctx, shop, "2026-11-01", "2026-11-08")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]domain.RankingPoint{
		"shoes": {{Date: "2026-11-01", Position: 9}, {Date: "2026-11-08", Position: 6}},
		"socks": {{Date: "2026-11-01", Position: 20}},
		"hats":  {{Date: "2026-11-01", Position: 4}, {Date: "2026-11-08", Position: 7}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d keywords, want %d: %+v", len(got), len(want), got)
	}
	for i, k := range got {
		if i > 0 && got[i-1].ID >= k.ID {
			t.Errorf("keywords not by id: %s after %s", k.ID, got[i-1].ID)
		}
		if k.ID != domain.KeywordID(shop, k.Keyword, k.URL) || !reflect.DeepEqual(k.Rankings, want[k.Keyword]) {
			t.Errorf("%s: %+v, want %+v", k.Keyword, k, want[k.Keyword])
		}
	}
	if got, err := q.RankingsBetween(ctx, shop, "2026-11-09", "2026-11-14"); err != nil || len(got) != 0 {
		t.Errorf("a range without rankings: %+v %v", got, err)
	}
	if got, err := q.RankingsBetween(ctx, "shop_other", "2026-11-01", "2026-11-30"); err != nil || len(got) != 0 {
		t.Errorf("another shop: %+v %v", got, err)
	}
}
