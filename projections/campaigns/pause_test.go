package campaigns_test

import (
	"context"
	"database/sql"
	"reflect"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/campaigns"
)

// TestPauseResumeInReadModel: a pause sets the status, paused_reason and
// paused_at; a resume clears them; each applied twice changes nothing.
func TestPauseResumeInReadModel(t *testing.T) {
	s := record(t)
	ctx := context.Background()
	id := s.campaigns[1] // awaiting_approval
	res, paused, err := s.Commands.PauseCampaign(ctx, commands.PauseCampaign{ShopID: s.shop, CampaignID: id}, meta)
	if err != nil {
		t.Fatal(err)
	}
	s.last = res.Position
	rs := s.project(t)
	q := campaigns.NewQueries(rs.DB())
	c, err := q.Campaign(ctx, s.shop, id)
	if err != nil || c.Status != domain.CampaignStatusPaused || c.PausedReason != domain.PauseManual || !c.PausedAt.Equal(paused.PausedAt) ||
		!c.UpdatedAt.Equal(paused.PausedAt) {
		t.Fatalf("paused: %+v %v", c, err)
	}
	if rows, _, err := q.Campaigns(ctx, s.shop, domain.CampaignStatusPaused, campaigns.Page{Limit: 10}); err != nil || len(rows) != 1 || rows[0].ID != id {
		t.Fatalf("status paused: %+v %v", rows, err)
	}

	res, resumed, err := s.Commands.ResumeCampaign(ctx, commands.ResumeCampaign{ShopID: s.shop, CampaignID: id, TemplateApproved: true}, meta)
	if err != nil {
		t.Fatal(err)
	}
	rs.WaitFor(t, res.Position)
	c, err = q.Campaign(ctx, s.shop, id)
	if err != nil || c.Status != domain.CampaignStatusSending || resumed.Status != c.Status || c.PausedReason != "" || !c.PausedAt.IsZero() {
		t.Fatalf("resumed: %+v %v", c, err)
	}

	first := dumpAll(t, rs.DB())
	p := campaigns.Projector(s.Codec)
	evs, err := s.Log.ReadAll(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if _, err := rs.Store.Apply(ctx, "campaigns-again", e.Position, func(tx *sql.Tx) error { return p.Handle(ctx, tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	if again := dumpAll(t, rs.DB()); !reflect.DeepEqual(first, again) {
		t.Fatalf("applying every event twice changed the read model:\n%v\n%v", first, again)
	}
}
