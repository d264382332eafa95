package domain_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestNewAudience(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	amt := func(v domain.Amount) *domain.Amount { return &v }
	at := func(d int) *time.Time { v := now.AddDate(0, 0, d); return &v }
	for _, c := range []struct {
		name  string
		draft domain.AudienceDraft
		field string // "" for success
	}{
		{"everyone", domain.AudienceDraft{Name: "All"}, ""},
		{"full", domain.AudienceDraft{Name: " VIP ", Filters: domain.AudienceFilters{LifecycleStages: []string{"at_risk", "at_risk"},
			Tags: []string{"vip", " vip"}, MinTotalSpent: amt(1), MaxTotalSpent: amt(1), LastOrderAfter: at(-2), LastOrderBefore: at(-1)}}, ""},
		{"no name", domain.AudienceDraft{Name: " "}, "name"},
		{"unknown stage", domain.AudienceDraft{Name: "x", Filters: domain.AudienceFilters{LifecycleStages: []string{"gold"}}}, "filters.lifecycle_stages"},
		{"empty tag", domain.AudienceDraft{Name: "x", Filters: domain.AudienceFilters{Tags: []string{""}}}, "filters.tags"},
		{"negative spend", domain.AudienceDraft{Name: "x", Filters: domain.AudienceFilters{MinTotalSpent: amt(-1)}}, "filters.min_total_spent"},
		{"inverted spend", domain.AudienceDraft{Name: "x", Filters: domain.AudienceFilters{MinTotalSpent: amt(2), MaxTotalSpent: amt(1)}}, "filters.max_total_spent"},
		{"inverted dates", domain.AudienceDraft{Name: "x", Filters: domain.AudienceFilters{LastOrderAfter: at(0), LastOrderBefore: at(-1)}}, "filters.last_order_before"},
	} {
		ev, err := domain.NewAudience("shop_1", c.draft, now)
		if c.field != "" {
			if fieldOf(err) != c.field {
				t.Errorf("%s: %v, want an error on %s", c.name, err, c.field)
			}
			continue
		}
		if err != nil || !domain.HasPrefixID(ev.AudienceID, domain.PrefixAudience) || ev.ShopID != "shop_1" || ev.Filters.Tags == nil {
			t.Errorf("%s: %+v %v", c.name, ev, err)
		}
	}
	ev, _ := domain.NewAudience("shop_1", domain.AudienceDraft{Name: " VIP ", Filters: domain.AudienceFilters{
		LifecycleStages: []string{"at_risk", "at_risk"}, Tags: []string{"vip", " vip"}}}, now)
	if ev.Name != "VIP" || len(ev.Filters.LifecycleStages) != 1 || len(ev.Filters.Tags) != 1 {
		t.Errorf("not normalised: %+v", ev)
	}
}

func fieldOf(err error) string {
	var de *domain.Error
	if !errors.As(err, &de) {
		return ""
	}
	return de.Field
}

func TestCampaignLifecycle(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	aud := &domain.Audience{}
	aud.Apply(&domain.AudienceCreated{AudienceID: "aud_1", ShopID: "shop_1"})
	wa := domain.CampaignDraft{Name: "Win-back", AudienceID: "aud_1", TemplateID: "tpl"}

	// Creation: audience_id is required and must be the shop's.
	for _, c := range []struct {
		name  string
		shop  string
		draft domain.CampaignDraft
		aud   *domain.Audience
		field string
	}{
		{"no audience_id", "shop_1", domain.CampaignDraft{Name: "x", TemplateID: "t"}, nil, "audience_id"},
		{"unknown audience", "shop_1", domain.CampaignDraft{Name: "x", AudienceID: "aud_2", TemplateID: "t"}, &domain.Audience{}, "audience_id"},
		{"other shop's audience", "shop_2", wa, aud, "audience_id"},
		{"no name", "shop_1", domain.CampaignDraft{AudienceID: "aud_1", TemplateID: "t"}, aud, "name"},
		{"bad channel", "shop_1", domain.CampaignDraft{Name: "x", AudienceID: "aud_1", Channel: "sms"}, aud, "channel"},
		{"whatsapp without template", "shop_1", domain.CampaignDraft{Name: "x", AudienceID: "aud_1"}, aud, "template_id"},
		{"email with template", "shop_1", domain.CampaignDraft{Name: "x", AudienceID: "aud_1", Channel: "email", TemplateID: "t"}, aud, "template_id"},
	} {
		if _, err := domain.NewCampaign(c.shop, c.draft, c.aud, now); fieldOf(err) != c.field {
			t.Errorf("%s: %v, want an error on %s", c.name, err, c.field)
		}
	}

	created, err := domain.NewCampaign("shop_1", wa, aud, now)
	if err != nil || created.Channel != domain.ChannelWhatsApp || !domain.HasPrefixID(created.CampaignID, domain.PrefixCampaign) {
		t.Fatalf("create: %+v %v", created, err)
	}
	email, err := domain.NewCampaign("shop_1", domain.CampaignDraft{Name: "News", AudienceID: "aud_1", Channel: "email",
		Content: &domain.MessageContent{Subject: "Hello {{first_name}}", Text: "New arrivals"}}, aud, now)
	if err != nil {
		t.Fatal(err)
	}
	bare, err := domain.NewCampaign("shop_1", domain.CampaignDraft{Name: "News", AudienceID: "aud_1", Channel: "email"}, aud, now)
	if err != nil {
		t.Fatal(err)
	}

	// Launch: given the events so far, when launched, then a status or a
	// conflict.
	for _, c := range []struct {
		name     string
		given    []domain.Event
		shop     string
		approved bool
		status   string
		code     domain.Code
	}{
		{"approved template", []domain.Event{created}, "shop_1", true, domain.CampaignStatusSending, ""},
		{"template not approved", []domain.Event{created}, "shop_1", false, domain.CampaignStatusAwaitingApproval, ""},
		{"email ignores templates", []domain.Event{email}, "shop_1", false, domain.CampaignStatusSending, ""},
		{"email without content", []domain.Event{bare}, "shop_1", false, "", domain.CodeInvalid},
		{"twice", []domain.Event{created, &domain.CampaignLaunched{Status: domain.CampaignStatusSending}}, "shop_1", true, "", domain.CodeConflict},
		{"waiting for approval", []domain.Event{created, &domain.CampaignLaunched{Status: domain.CampaignStatusAwaitingApproval}}, "shop_1", true, "", domain.CodeConflict},
		{"paused", []domain.Event{created, &domain.CampaignLaunched{Status: domain.CampaignStatusPaused}}, "shop_1", true, "", domain.CodeConflict},
		{"cancelled", []domain.Event{created, &domain.CampaignLaunched{Status: domain.CampaignStatusCancelled}}, "shop_1", true, "", domain.CodeConflict},
		{"another shop", []domain.Event{created}, "shop_2", true, "", domain.CodeNotFound},
		{"no campaign", nil, "shop_1", true, "", domain.CodeNotFound},
	} {
		var cam domain.Campaign
		for _, e := range c.given {
			cam.Apply(e)
		}
		ev, err := cam.Launch(c.shop, "cam_1", c.approved, now)
		if domain.ErrorCode(err) != c.code || (c.code == "" && (ev.Status != c.status || ev.CampaignID != "cam_1")) {
			t.Errorf("%s: %+v %v, want %q %q", c.name, ev, err, c.status, c.code)
		}
	}
}

func TestCampaignEventsAreCatalogued(t *testing.T) {
	cat := domain.Events()
	for _, name := range []string{"AudienceCreated", "CampaignCreated", "CampaignLaunched"} {
		if spec, ok := cat.Spec(name); !ok || spec.Version != 1 || spec.New().EventType() != name {
			t.Errorf("%s v1 is not in the catalogue", name)
		}
	}
}
