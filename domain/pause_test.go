package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

var pauseNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func tplChange(state, event string) domain.TemplateChange {
	return domain.TemplateChange{TemplateID: "tpl", Name: "order_confirmation", State: state, EventID: event}
}

// campaignGiven folds events into a WhatsApp campaign of shop_1 using
// template tpl (or an e-mail campaign when email).
func campaignGiven(email bool, evs ...domain.Event) *domain.Campaign {
	var c domain.Campaign
	created := &domain.CampaignCreated{CampaignID: "cam_1", ShopID: "shop_1", Channel: domain.ChannelWhatsApp, TemplateID: "tpl"}
	if email {
		created.Channel, created.TemplateID = domain.ChannelEmail, ""
	}
	c.Apply(created)
	for _, e := range evs {
		c.Apply(e)
	}
	return &c
}

func launched(status string) domain.Event { return &domain.CampaignLaunched{Status: status} }

func manualPause(from string) domain.Event {
	return &domain.CampaignPaused{Reason: domain.PauseManual, PreviousStatus: from}
}

func autoPause(from, event string) domain.Event {
	return &domain.CampaignPaused{Reason: domain.PauseTemplatePaused, TemplateID: "tpl", TemplateEventID: event, PreviousStatus: from}
}

func TestCampaignPauseResume(t *testing.T) {
	sending := launched(domain.CampaignStatusSending)
	// Manual pause: given the events, then the previous status kept, or a
	// conflict.
	for _, c := range []struct {
		name  string
		given []domain.Event
		shop  string
		code  domain.Code
	}{
		{"sending", []domain.Event{sending}, "shop_1", ""},
		{"scheduled", []domain.Event{launched(domain.CampaignStatusScheduled)}, "shop_1", ""},
		{"awaiting approval", []domain.Event{launched(domain.CampaignStatusAwaitingApproval)}, "shop_1", ""},
		{"draft", nil, "shop_1", domain.CodeConflict},
		{"already paused", []domain.Event{sending, manualPause(domain.CampaignStatusSending)}, "shop_1", domain.CodeConflict},
		{"auto-paused", []domain.Event{sending, autoPause(domain.CampaignStatusSending, "e1")}, "shop_1", domain.CodeConflict},
		{"completed", []domain.Event{launched(domain.CampaignStatusCompleted)}, "shop_1", domain.CodeConflict},
		{"cancelled", []domain.Event{launched(domain.CampaignStatusCancelled)}, "shop_1", domain.CodeConflict},
		{"another shop", []domain.Event{sending}, "shop_2", domain.CodeNotFound},
	} {
		cam := campaignGiven(false, c.given...)
		from := cam.Status
		ev, err := cam.Pause(c.shop, "cam_1", pauseNow)
		if domain.ErrorCode(err) != c.code || (c.code == "" && (ev.Reason != domain.PauseManual || ev.PreviousStatus != from || ev.TemplateID != "")) {
			t.Errorf("pause %s: %+v %v, want %q", c.name, ev, err, c.code)
		}
	}

	// Manual resume: back to the status paused from, awaiting_approval
	// while the template is not approved; only from paused.
	for _, c := range []struct {
		name     string
		email    bool
		given    []domain.Event
		approved bool
		status   string
		code     domain.Code
	}{
		{"sending, approved", false, []domain.Event{sending, manualPause(domain.CampaignStatusSending)}, true, domain.CampaignStatusSending, ""},
		{"scheduled, approved", false, []domain.Event{manualPause(domain.CampaignStatusScheduled)}, true, domain.CampaignStatusScheduled, ""},
		{"awaiting approval, now approved", false, []domain.Event{manualPause(domain.CampaignStatusAwaitingApproval)}, true, domain.CampaignStatusSending, ""},
		{"template not approved", false, []domain.Event{sending, manualPause(domain.CampaignStatusSending)}, false, domain.CampaignStatusAwaitingApproval, ""},
		{"auto-paused, template still paused", false, []domain.Event{sending, autoPause(domain.CampaignStatusSending, "e1")}, false, domain.CampaignStatusAwaitingApproval, ""},
		{"email ignores templates", true, []domain.Event{sending, manualPause(domain.CampaignStatusSending)}, false, domain.CampaignStatusSending, ""},
		{"not paused", false, []domain.Event{sending}, true, "", domain.CodeConflict},
		{"draft", false, nil, true, "", domain.CodeConflict},
	} {
		cam := campaignGiven(c.email, c.given...)
		ev, err := cam.Resume("shop_1", "cam_1", c.approved, pauseNow)
		if domain.ErrorCode(err) != c.code || (c.code == "" && (ev.Status != c.status || ev.Reason != domain.ResumeManual)) {
			t.Errorf("resume %s: %+v %v, want %q %q", c.name, ev, err, c.status, c.code)
		}
		if c.code == "" {
			cam.Apply(ev)
			if cam.Status != c.status || cam.PausedReason != "" {
				t.Errorf("resume %s: aggregate %+v", c.name, cam)
			}
		}
	}
	if _, err := campaignGiven(false, sending).Resume("shop_2", "cam_1", true, pauseNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("resume of another shop's campaign: %v", err)
	}
}

func TestCampaignReactsToTemplate(t *testing.T) {
	sending := launched(domain.CampaignStatusSending)
	awaiting := launched(domain.CampaignStatusAwaitingApproval)
	for _, c := range []struct {
		name   string
		email  bool
		given  []domain.Event
		change domain.TemplateChange
		want   string // event type, "" for nothing
		status string // the campaign's status after it
		reason string
	}{
		{"paused template pauses a sending campaign", false, []domain.Event{sending}, tplChange(domain.TemplatePaused, "e1"),
			"CampaignPaused", domain.CampaignStatusPaused, domain.PauseTemplatePaused},
		{"rejected template pauses a waiting campaign", false, []domain.Event{awaiting}, tplChange(domain.TemplateRejected, "e1"),
			"CampaignPaused", domain.CampaignStatusPaused, domain.PauseTemplateRejected},
		{"draft untouched", false, nil, tplChange(domain.TemplatePaused, "e1"), "", domain.CampaignStatusDraft, ""},
		{"already paused by hand", false, []domain.Event{sending, manualPause(domain.CampaignStatusSending)}, tplChange(domain.TemplatePaused, "e1"),
			"", domain.CampaignStatusPaused, domain.PauseManual},
		{"another template", false, []domain.Event{sending}, domain.TemplateChange{TemplateID: "other", State: domain.TemplatePaused, EventID: "e1"},
			"", domain.CampaignStatusSending, ""},
		{"email campaign", true, []domain.Event{sending}, tplChange(domain.TemplatePaused, "e1"), "", domain.CampaignStatusSending, ""},
		{"approval resumes what the template paused", false, []domain.Event{sending, autoPause(domain.CampaignStatusSending, "e1")},
			tplChange(domain.TemplateApproved, "e2"), "CampaignResumed", domain.CampaignStatusSending, ""},
		{"approval resumes a campaign paused while waiting to sending", false, []domain.Event{awaiting, autoPause(domain.CampaignStatusAwaitingApproval, "e1")},
			tplChange(domain.TemplateApproved, "e2"), "CampaignResumed", domain.CampaignStatusSending, ""},
		{"approval never resumes a manual pause", false, []domain.Event{sending, manualPause(domain.CampaignStatusSending)},
			tplChange(domain.TemplateApproved, "e2"), "", domain.CampaignStatusPaused, domain.PauseManual},
		{"approval unblocks a waiting campaign", false, []domain.Event{awaiting}, tplChange(domain.TemplateApproved, "e2"),
			"CampaignApprovalGranted", domain.CampaignStatusSending, ""},
		{"approval of a sending campaign", false, []domain.Event{sending}, tplChange(domain.TemplateApproved, "e2"), "", domain.CampaignStatusSending, ""},
		{"a handled event again", false, []domain.Event{sending, autoPause(domain.CampaignStatusSending, "e1"), &domain.CampaignResumed{Reason: domain.ResumeManual, Status: domain.CampaignStatusSending}},
			tplChange(domain.TemplatePaused, "e1"), "", domain.CampaignStatusSending, ""},
		{"another state", false, []domain.Event{sending}, tplChange("pending_deletion", "e3"), "", domain.CampaignStatusSending, ""},
	} {
		cam := campaignGiven(c.email, c.given...)
		ev, err := cam.ReactToTemplate("shop_1", "cam_1", c.change, pauseNow)
		got := ""
		if ev != nil {
			got = ev.EventType()
			cam.Apply(ev)
		}
		if err != nil || got != c.want || cam.Status != c.status || cam.PausedReason != c.reason {
			t.Errorf("%s: %s %+v %v, want %q status %s reason %q", c.name, got, cam, err, c.want, c.status, c.reason)
		}
		if ev != nil {
			// Applied, the same template event does nothing more.
			if again, err := cam.ReactToTemplate("shop_1", "cam_1", c.change, pauseNow); again != nil || err != nil {
				t.Errorf("%s: the same template event again: %+v %v", c.name, again, err)
			}
		}
	}
	if _, err := campaignGiven(false).ReactToTemplate("shop_2", "cam_1", tplChange(domain.TemplatePaused, "e1"), pauseNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("another shop's campaign: %v", err)
	}
}

var journeySteps = []domain.JourneyStep{
	{Type: domain.StepWait, Hours: 1}, {Type: domain.StepSendMessage, Channel: domain.ChannelWhatsApp, Template: "order_confirmation"},
	{Type: domain.StepSendMessage, Channel: domain.ChannelEmail, Template: "tpl_email"}}

// journeyGiven folds events into an active journey of shop_1 whose
// WhatsApp step sends order_confirmation (a second JourneyCreated given
// replaces its status).
func journeyGiven(evs ...domain.Event) *domain.Journey {
	var j domain.Journey
	j.Apply(&domain.JourneyCreated{JourneyID: "jrn_1", ShopID: "shop_1", Status: domain.JourneyStatusActive, Steps: journeySteps})
	for _, e := range evs {
		j.Apply(e)
	}
	return &j
}

func TestJourneyPauseResume(t *testing.T) {
	manual := &domain.JourneyPaused{Reason: domain.PauseManual}
	auto := &domain.JourneyPaused{Reason: domain.PauseTemplatePaused, TemplateID: "tpl", TemplateEventID: "e1"}
	archived := &domain.JourneyCreated{JourneyID: "jrn_1", ShopID: "shop_1", Status: domain.JourneyStatusArchived, Steps: journeySteps}
	draft := &domain.JourneyCreated{JourneyID: "jrn_1", ShopID: "shop_1", Status: domain.JourneyStatusDraft, Steps: journeySteps}
	for _, c := range []struct {
		name       string
		given      []domain.Event
		pause      domain.Code
		resumeCode domain.Code
	}{
		{"active", nil, "", domain.CodeConflict},
		{"paused by hand", []domain.Event{manual}, domain.CodeConflict, ""},
		{"paused by a template", []domain.Event{auto}, domain.CodeConflict, ""},
		{"draft", []domain.Event{draft}, domain.CodeConflict, domain.CodeConflict},
		{"archived", []domain.Event{archived}, domain.CodeConflict, domain.CodeConflict},
	} {
		j := journeyGiven(c.given...)
		p, err := j.Pause("shop_1", "jrn_1", pauseNow)
		if domain.ErrorCode(err) != c.pause || (err == nil && p.Reason != domain.PauseManual) {
			t.Errorf("pause %s: %+v %v, want %q", c.name, p, err, c.pause)
		}
		r, err := j.Resume("shop_1", "jrn_1", pauseNow)
		if domain.ErrorCode(err) != c.resumeCode || (err == nil && r.Reason != domain.ResumeManual) {
			t.Errorf("resume %s: %+v %v, want %q", c.name, r, err, c.resumeCode)
		}
	}
	if _, err := journeyGiven().Pause("shop_2", "jrn_1", pauseNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("another shop's journey: %v", err)
	}

	// Template reactions: a step names the template by name (or id).
	for _, c := range []struct {
		name   string
		given  []domain.Event
		change domain.TemplateChange
		want   string
		status string
	}{
		{"paused template by name", nil, tplChange(domain.TemplatePaused, "e1"), "JourneyPaused", domain.JourneyStatusPaused},
		{"rejected template by id", nil, domain.TemplateChange{TemplateID: "order_confirmation", State: domain.TemplateRejected, EventID: "e1"},
			"JourneyPaused", domain.JourneyStatusPaused},
		{"an e-mail step's template", nil, domain.TemplateChange{TemplateID: "tpl_email", State: domain.TemplatePaused, EventID: "e1"}, "", domain.JourneyStatusActive},
		{"another template", nil, domain.TemplateChange{TemplateID: "x", Name: "y", State: domain.TemplatePaused, EventID: "e1"}, "", domain.JourneyStatusActive},
		{"approval resumes", []domain.Event{auto}, tplChange(domain.TemplateApproved, "e2"), "JourneyResumed", domain.JourneyStatusActive},
		{"approval never resumes a manual pause", []domain.Event{manual}, tplChange(domain.TemplateApproved, "e2"), "", domain.JourneyStatusPaused},
		{"a handled event again", []domain.Event{auto, &domain.JourneyResumed{Reason: domain.ResumeManual}}, tplChange(domain.TemplatePaused, "e1"), "", domain.JourneyStatusActive},
		{"draft untouched", []domain.Event{draft}, tplChange(domain.TemplatePaused, "e1"), "", domain.JourneyStatusDraft},
	} {
		j := journeyGiven(c.given...)
		ev, err := j.ReactToTemplate("shop_1", "jrn_1", c.change, pauseNow)
		got := ""
		if ev != nil {
			got = ev.EventType()
			j.Apply(ev)
		}
		if err != nil || got != c.want || j.Status != c.status {
			t.Errorf("%s: %s %+v %v, want %q %s", c.name, got, j, err, c.want, c.status)
		}
	}
}

func TestPauseEventsAreCatalogued(t *testing.T) {
	cat := domain.Events()
	for _, name := range []string{"CampaignPaused", "CampaignResumed", "CampaignApprovalGranted", "JourneyPaused", "JourneyResumed"} {
		if spec, ok := cat.Spec(name); !ok || spec.Version != 1 || spec.New().EventType() != name {
			t.Errorf("%s v1 is not in the catalogue", name)
		}
	}
}
