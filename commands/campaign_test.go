package commands_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

func TestCampaignCommands(t *testing.T) {
	ctx := context.Background()
	h, log := newHandler(t)
	res, aud, err := h.CreateAudience(ctx, commands.CreateAudience{ShopID: "shop_1", Draft: domain.AudienceDraft{Name: "VIP"}}, meta)
	if err != nil || res.ID != aud.AudienceID || streamLen(t, log, domain.AudienceStream(aud.AudienceID)) != 1 {
		t.Fatalf("audience: %+v %v", res, err)
	}

	// The audience is read from the log: missing, unknown and another
	// shop's audiences all fail on audience_id, and append nothing.
	before, _ := log.HeadPosition(ctx)
	for _, c := range []struct{ shop, audience string }{{"shop_1", ""}, {"shop_1", "aud_unknown"}, {"shop_1", "cus_1"}, {"shop_2", aud.AudienceID}} {
		_, _, err := h.CreateCampaign(ctx, commands.CreateCampaign{ShopID: c.shop, Draft: domain.CampaignDraft{Name: "x", AudienceID: c.audience, TemplateID: "t"}}, meta)
		if campaignField(err) != "audience_id" {
			t.Errorf("%s %q: %v, want an error on audience_id", c.shop, c.audience, err)
		}
	}
	if after, _ := log.HeadPosition(ctx); after != before {
		t.Fatalf("rejected campaigns appended: %d → %d", before, after)
	}

	res, cam, err := h.CreateCampaign(ctx, commands.CreateCampaign{ShopID: "shop_1", Draft: domain.CampaignDraft{Name: "Win-back", AudienceID: aud.AudienceID, TemplateID: "tpl_1"}}, meta)
	if err != nil || res.ID != cam.CampaignID {
		t.Fatalf("campaign: %+v %v", res, err)
	}
	if ch, tpl, err := h.CampaignTemplate(ctx, "shop_1", cam.CampaignID); err != nil || ch != domain.ChannelWhatsApp || tpl != "tpl_1" {
		t.Fatalf("template: %s %s %v", ch, tpl, err)
	}
	if _, _, err := h.CampaignTemplate(ctx, "shop_2", cam.CampaignID); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's template: %v", err)
	}

	// Launches racing each other: one wins, the others conflict.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, _, errs[i] = h.LaunchCampaign(ctx, commands.LaunchCampaign{ShopID: "shop_1", CampaignID: cam.CampaignID}, meta)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch domain.ErrorCode(err) {
		case "":
			won++
		case domain.CodeConflict:
		default:
			t.Errorf("launch: %v", err)
		}
	}
	// The launch and its audience snapshot (one part: nobody to send to).
	if won != 1 || streamLen(t, log, domain.CampaignStream(cam.CampaignID)) != 3 {
		t.Fatalf("%d launches won, stream has %d events", won, streamLen(t, log, domain.CampaignStream(cam.CampaignID)))
	}
	if _, _, err := h.LaunchCampaign(ctx, commands.LaunchCampaign{ShopID: "shop_1", CampaignID: "aud_1"}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("not a campaign id: %v", err)
	}
}

func campaignField(err error) string {
	var de *domain.Error
	if !errors.As(err, &de) {
		return ""
	}
	return de.Field
}
