package campaigns_test

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/campaigns"
)

var meta = commands.Meta{Actor: "test", Source: "api"}

// scenario records two shops' audiences and campaigns, one launched; each
// command one second after the last.
type scenario struct {
	*testenv.Core
	shop, other string
	audience    string
	campaigns   []string // in creation order
	last        eventlog.Position
}

func record(t *testing.T) *scenario {
	t.Helper()
	ctx := context.Background()
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s := &scenario{Core: testenv.New(t, func() time.Time { clock = clock.Add(time.Second); return clock })}
	shop := func(name string) string {
		acc, err := s.Commands.CreateAccount(ctx, commands.CreateAccount{Name: name, Plan: "growth"}, meta)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := s.Commands.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: name, Plan: "growth", WebhookSecret: "0123456789abcdef"}, meta)
		if err != nil {
			t.Fatal(err)
		}
		return sh.ID
	}
	s.shop, s.other = shop("a.example.com"), shop("b.example.com")
	min := domain.Amount(100 * domain.AmountScale)
	_, aud, err := s.Commands.CreateAudience(ctx, commands.CreateAudience{ShopID: s.shop, Draft: domain.AudienceDraft{Name: "VIP",
		Filters: domain.AudienceFilters{LifecycleStages: []string{domain.StageAtRisk}, Tags: []string{"vip"}, MinTotalSpent: &min}}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	s.audience = aud.AudienceID
	_, otherAud, err := s.Commands.CreateAudience(ctx, commands.CreateAudience{ShopID: s.other, Draft: domain.AudienceDraft{Name: "All"}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"One", "Two", "Three"} {
		_, cam, err := s.Commands.CreateCampaign(ctx, commands.CreateCampaign{ShopID: s.shop, Draft: domain.CampaignDraft{Name: name,
			AudienceID: s.audience, TemplateID: "tpl_1"}}, meta)
		if err != nil {
			t.Fatal(err)
		}
		s.campaigns = append(s.campaigns, cam.CampaignID)
	}
	if _, _, err := s.Commands.CreateCampaign(ctx, commands.CreateCampaign{ShopID: s.other, Draft: domain.CampaignDraft{Name: "Other",
		AudienceID: otherAud.AudienceID, Channel: domain.ChannelEmail}}, meta); err != nil {
		t.Fatal(err)
	}
	res, _, err := s.Commands.LaunchCampaign(ctx, commands.LaunchCampaign{ShopID: s.shop, CampaignID: s.campaigns[1]}, meta)
	if err != nil {
		t.Fatal(err)
	}
	s.last = res.Position
	return s
}

func (s *scenario) project(t *testing.T) *testenv.ReadSide {
	t.Helper()
	rs := s.ReadSide(t, campaigns.Projector(s.Codec))
	rs.WaitFor(t, s.last)
	return rs
}

func TestQueries(t *testing.T) {
	s := record(t)
	q := campaigns.NewQueries(s.project(t).DB())
	ctx := context.Background()

	a, err := q.Audience(ctx, s.shop, s.audience)
	if err != nil || a.Name != "VIP" || a.Filters.MinTotalSpent == nil || *a.Filters.MinTotalSpent != 100*domain.AmountScale ||
		!reflect.DeepEqual(a.Filters.Tags, []string{"vip"}) || a.CreatedAt.IsZero() {
		t.Fatalf("audience: %+v %v", a, err)
	}
	if _, err := q.Audience(ctx, s.other, s.audience); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's audience: %v", err)
	}

	c, err := q.Campaign(ctx, s.shop, s.campaigns[1])
	if err != nil || c.Status != domain.CampaignStatusAwaitingApproval || c.LaunchedAt.IsZero() || c.TemplateID != "tpl_1" || c.AudienceID != s.audience {
		t.Fatalf("launched campaign: %+v %v", c, err)
	}

	// Pages of one, oldest first, then newest first: no row skipped or
	// repeated.
	for _, desc := range []bool{false, true} {
		var got []string
		var after *campaigns.Key
		for range 5 {
			rows, next, err := q.Campaigns(ctx, s.shop, "", campaigns.Page{Desc: desc, After: after, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				got = append(got, r.ID)
			}
			if after = next; next == nil {
				break
			}
		}
		want := append([]string(nil), s.campaigns...)
		if desc {
			want = []string{want[2], want[1], want[0]}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("desc=%v: %v, want %v", desc, got, want)
		}
	}
	drafts, next, err := q.Campaigns(ctx, s.shop, domain.CampaignStatusDraft, campaigns.Page{Limit: 10})
	if err != nil || next != nil || len(drafts) != 2 || drafts[0].ID != s.campaigns[0] || drafts[1].ID != s.campaigns[2] {
		t.Fatalf("drafts: %+v %v %v", drafts, next, err)
	}
	if auds, _, err := q.Audiences(ctx, s.other, campaigns.Page{Limit: 10}); err != nil || len(auds) != 1 || auds[0].Name != "All" {
		t.Fatalf("other shop's audiences: %+v %v", auds, err)
	}
}

// Replaying the log gives the same read model, and applying every event a
// second time changes nothing.
func TestReplayAndRepeatGiveTheSameReadModel(t *testing.T) {
	s := record(t)
	first := dumpAll(t, s.project(t).DB())
	second := s.project(t)
	if again := dumpAll(t, second.DB()); !reflect.DeepEqual(first, again) {
		t.Fatalf("replay differs:\n%v\n%v", first, again)
	}
	ctx := context.Background()
	p := campaigns.Projector(s.Codec)
	evs, err := s.Log.ReadAll(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if _, err := second.Store.Apply(ctx, "campaigns-again", e.Position, func(tx *sql.Tx) error { return p.Handle(ctx, tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	if again := dumpAll(t, second.DB()); !reflect.DeepEqual(first, again) {
		t.Fatalf("applying every event twice changed the read model:\n%v\n%v", first, again)
	}
}

func dumpAll(t *testing.T, db *sql.DB) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for table, order := range map[string]string{"audiences": "audience_id", "campaigns": "campaign_id"} {
		if out[table] = testenv.Dump(t, db, table, order); len(out[table]) == 0 {
			t.Fatalf("%s is empty", table)
		}
	}
	return out
}
