package templateholds_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/templateholds"
)

var meta = commands.Meta{Actor: "test", Source: "cli"}

// TestReactorPausesUsersBeforeItAndRebuildAppendsNothing: a paused
// template pauses the sending campaign and the active journey created
// before its event (the journey names the template by name), not a
// campaign created after it; a rebuild of the reactor from position 0,
// after the merchant resumed the campaign, appends nothing.
func TestReactorPausesUsersBeforeItAndRebuildAppendsNothing(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	var ticks atomic.Int64
	core := testenv.New(t, func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) })
	apply := func(ctx context.Context, kind, shop, id string, change domain.TemplateChange) error {
		var err error
		switch kind {
		case templateholds.KindCampaign:
			_, _, err = core.Commands.ApplyTemplateToCampaign(ctx, commands.ApplyTemplateToCampaign{ShopID: shop, CampaignID: id, Change: change}, meta)
		case templateholds.KindJourney:
			_, _, err = core.Commands.ApplyTemplateToJourney(ctx, commands.ApplyTemplateToJourney{ShopID: shop, JourneyID: id, Change: change}, meta)
		default:
			t.Errorf("kind %q", kind)
		}
		return err
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, aud, err := core.Commands.CreateAudience(ctx, commands.CreateAudience{ShopID: "shop_a", Draft: domain.AudienceDraft{Name: "All"}}, meta)
	must(err)
	campaign := func(template string, approved bool) string {
		t.Helper()
		_, c, err := core.Commands.CreateCampaign(ctx, commands.CreateCampaign{ShopID: "shop_a", Draft: domain.CampaignDraft{Name: "C",
			AudienceID: aud.AudienceID, TemplateID: template}}, meta)
		must(err)
		_, _, err = core.Commands.LaunchCampaign(ctx, commands.LaunchCampaign{ShopID: "shop_a", CampaignID: c.CampaignID, TemplateApproved: approved}, meta)
		must(err)
		return c.CampaignID
	}
	before := campaign("111", true)
	other := campaign("222", true)
	_, j, err := core.Commands.CreateJourney(ctx, commands.CreateJourney{ShopID: "shop_a", Draft: domain.JourneyDraft{Name: "J",
		Trigger: "orders/paid", Steps: []domain.JourneyStep{{Type: "send_message", Channel: "whatsapp", Template: "promo"}}}}, meta)
	must(err)
	_, err = core.Commands.RecordTemplateStatus(ctx, commands.RecordTemplateStatus{ShopID: "shop_a", Status: domain.TemplateStatus{
		TemplateID: "111", Name: "promo", Event: "PAUSED", At: start}}, meta)
	must(err)
	after := campaign("111", false)

	live := core.ReadSide(t, templateholds.Projector(core.Codec, apply))
	settle := func(rs interface {
		WaitFor(testing.TB, eventlog.Position)
	}) eventlog.Position {
		for {
			head, err := core.Log.HeadPosition(ctx)
			must(err)
			rs.WaitFor(t, head)
			if again, _ := core.Log.HeadPosition(ctx); again == head {
				return head
			}
		}
	}
	settle(live)
	types := func(stream string) string {
		t.Helper()
		evs, err := core.Log.ReadStream(ctx, stream, 0, 100)
		must(err)
		var out []string
		for _, e := range evs {
			out = append(out, e.Type)
		}
		return fmt.Sprint(out)
	}
	for stream, want := range map[string]string{
		domain.CampaignStream(before):     "[CampaignCreated CampaignLaunched CampaignAudienceSnapshotted CampaignPaused]",
		domain.CampaignStream(other):      "[CampaignCreated CampaignLaunched CampaignAudienceSnapshotted]",
		domain.CampaignStream(after):      "[CampaignCreated CampaignLaunched CampaignAudienceSnapshotted]",
		domain.JourneyStream(j.JourneyID): "[JourneyCreated JourneyPaused]",
	} {
		if got := types(stream); got != want {
			t.Errorf("%s: %s, want %s", stream, got, want)
		}
	}

	// The merchant resumes the campaign (its template still paused: it
	// waits for approval); a rebuilt reactor does not pause it again.
	_, resumed, err := core.Commands.ResumeCampaign(ctx, commands.ResumeCampaign{ShopID: "shop_a", CampaignID: before}, meta)
	must(err)
	if resumed.Status != domain.CampaignStatusAwaitingApproval {
		t.Fatalf("resumed to %s", resumed.Status)
	}
	head := settle(live)
	rebuilt := core.ReadSide(t, templateholds.Projector(core.Codec, apply))
	if got := settle(rebuilt); got != head {
		t.Fatalf("rebuild appended: head %d → %d", head, got)
	}

	// Approved: the campaign waiting for it is unblocked, the journey it
	// paused resumes; the campaign launched after the pause too.
	_, err = core.Commands.RecordTemplateStatus(ctx, commands.RecordTemplateStatus{ShopID: "shop_a", Status: domain.TemplateStatus{
		TemplateID: "111", Name: "promo", Event: "APPROVED", At: start.Add(time.Hour)}}, meta)
	must(err)
	settle(live)
	for stream, want := range map[string]string{
		domain.CampaignStream(before):     "[CampaignCreated CampaignLaunched CampaignAudienceSnapshotted CampaignPaused CampaignResumed CampaignApprovalGranted]",
		domain.CampaignStream(after):      "[CampaignCreated CampaignLaunched CampaignAudienceSnapshotted CampaignApprovalGranted]",
		domain.JourneyStream(j.JourneyID): "[JourneyCreated JourneyPaused JourneyResumed]",
	} {
		if got := types(stream); got != want {
			t.Errorf("%s: %s, want %s", stream, got, want)
		}
	}
}
