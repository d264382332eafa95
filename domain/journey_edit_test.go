package domain_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func send(s domain.JourneyStep) domain.JourneyStep { s.Type = domain.StepSendMessage; return s }

// TestJourneyStepValidation: each step type takes its members, content
// carries known merge fields only, and every refusal names the member.
func TestJourneyStepValidation(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msg := send(domain.JourneyStep{Channel: "sms", Text: "hi"})
	for _, c := range []struct {
		name  string
		steps []domain.JourneyStep
		field string // "" when valid
	}{
		{"email content", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email", Subject: "Hi {{first_name}}", Text: "{{ last_name }} at {{shop_name}}", HTML: "<p>{{first_name}}</p>"})}, ""},
		{"email template", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email", Template: "welcome"})}, ""},
		{"email no subject", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email", Text: "x"})}, "steps[0].subject"},
		{"email no text", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email", Subject: "x"})}, "steps[0].text"},
		{"email nothing", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email"})}, "steps[0].template"},
		{"email subject two lines", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email", Subject: "a\r\nBcc: x", Text: "x"})}, "steps[0].subject"},
		{"unknown merge field", []domain.JourneyStep{msg, msg, send(domain.JourneyStep{Channel: "email", Subject: "Hi {{email}}", Text: "x"})}, "steps[2].subject"},
		{"unclosed merge field", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email", Subject: "s", Text: "x", HTML: "{{first_name"})}, "steps[0].html"},
		{"email parameters", []domain.JourneyStep{send(domain.JourneyStep{Channel: "email", Subject: "s", Text: "x", Parameters: []string{"a"}})}, "steps[0].parameters"},
		{"whatsapp", []domain.JourneyStep{send(domain.JourneyStep{Channel: "whatsapp", Template: "order_update", Language: "de", Parameters: []string{"{{first_name}}", "x"}})}, ""},
		{"whatsapp no template", []domain.JourneyStep{send(domain.JourneyStep{Channel: "whatsapp", Parameters: []string{"x"}})}, "steps[0].template"},
		{"whatsapp bad language", []domain.JourneyStep{send(domain.JourneyStep{Channel: "whatsapp", Template: "t", Language: "english"})}, "steps[0].language"},
		{"whatsapp bad parameter", []domain.JourneyStep{send(domain.JourneyStep{Channel: "whatsapp", Template: "t", Parameters: []string{"ok", "{{phone}}"}})}, "steps[0].parameters[1]"},
		{"whatsapp empty parameter", []domain.JourneyStep{send(domain.JourneyStep{Channel: "whatsapp", Template: "t", Parameters: []string{" "}})}, "steps[0].parameters[0]"},
		{"whatsapp subject", []domain.JourneyStep{send(domain.JourneyStep{Channel: "whatsapp", Template: "t", Subject: "s"})}, "steps[0].subject"},
		{"sms text", []domain.JourneyStep{msg}, ""},
		{"sms unknown field", []domain.JourneyStep{send(domain.JourneyStep{Channel: "sms", Text: "{{coupon}}"})}, "steps[0].text"},
		{"sms html", []domain.JourneyStep{send(domain.JourneyStep{Channel: "sms", Text: "x", HTML: "<b>"})}, "steps[0].html"},
		{"condition ordered", []domain.JourneyStep{{Type: "condition", Condition: "ordered_since_enrollment"}, msg}, ""},
		{"condition tag", []domain.JourneyStep{{Type: "condition", Condition: "has_tag", Tag: "vip", Otherwise: "skip_next"}, msg}, ""},
		{"condition tag missing", []domain.JourneyStep{{Type: "condition", Condition: "has_tag"}, msg}, "steps[0].tag"},
		{"condition consent", []domain.JourneyStep{{Type: "condition", Condition: "accepts_marketing", Channel: "email"}, msg}, ""},
		{"condition consent no channel", []domain.JourneyStep{{Type: "condition", Condition: "accepts_marketing"}, msg}, "steps[0].channel"},
		{"condition unknown", []domain.JourneyStep{{Type: "condition", Condition: "is_rich"}, msg}, "steps[0].condition"},
		{"condition tag on ordered", []domain.JourneyStep{{Type: "condition", Condition: "ordered_since_enrollment", Tag: "x"}, msg}, "steps[0].tag"},
		{"condition bad otherwise", []domain.JourneyStep{{Type: "condition", Condition: "has_tag", Tag: "x", Otherwise: "jump"}, msg}, "steps[0].otherwise"},
		{"skip_next last", []domain.JourneyStep{msg, {Type: "condition", Condition: "has_tag", Tag: "x", Otherwise: "skip_next"}}, "steps[1].otherwise"},
		{"exit", []domain.JourneyStep{{Type: "condition", Condition: "has_tag", Tag: "x", Otherwise: "skip_next"}, {Type: "exit"}, msg}, ""},
		{"exit with hours", []domain.JourneyStep{msg, {Type: "exit", Hours: 1}}, "steps[1].hours"},
		{"wait with channel", []domain.JourneyStep{{Type: "wait", Hours: 1, Channel: "sms"}, msg}, "steps[0].channel"},
	} {
		ev, err := domain.NewJourney("shop_1", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Steps: c.steps}, now)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if e, ok := err.(*domain.Error); !ok || e.Field != c.field || ev != nil {
			t.Errorf("%s: %v, want field %s", c.name, err, c.field)
		}
	}
	ev, err := domain.NewJourney("shop_1", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Steps: []domain.JourneyStep{
		send(domain.JourneyStep{Channel: "whatsapp", Template: " t "}), {Type: "condition", Condition: "has_tag", Tag: " vip "}}}, now)
	if err != nil || ev.Steps[0].Language != domain.DefaultLanguage || ev.Steps[0].Template != "t" || ev.Steps[1].Otherwise != "exit" || ev.Steps[1].Tag != "vip" {
		t.Fatalf("normalised: %+v %v", ev, err)
	}
}

// TestOldJourneyEventsDecode: events recorded before steps had content
// and enrollments a version decode with the new fields empty (version 1).
func TestOldJourneyEventsDecode(t *testing.T) {
	var c domain.JourneyCreated
	if err := json.Unmarshal([]byte(`{"journey_id":"jrn_1","shop_id":"s","name":"n","trigger":"orders/paid",
		"steps":[{"type":"wait","hours":2},{"type":"send_message","channel":"whatsapp","template":"t"}],"allow_reentry":false,"status":"active"}`), &c); err != nil ||
		c.Steps[1].Template != "t" || c.Steps[1].Language != "" {
		t.Fatalf("%+v %v", c, err)
	}
	var e domain.JourneyEnrollmentStarted
	if err := json.Unmarshal([]byte(`{"enrollment_id":"enr_1","journey_id":"jrn_1","customer_id":"cus_1","trigger_event_id":"x"}`), &e); err != nil || e.Version() != 1 {
		t.Fatalf("%+v %v", e, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestJourneyUpdate: given a journey's events, an edit records the next
// version with the whole new state, or refuses it naming why.
func TestJourneyUpdate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	created := func(status string) *domain.JourneyCreated {
		return &domain.JourneyCreated{JourneyID: "jrn_1", ShopID: "shop_1", Name: "n", Trigger: "orders/paid", Status: status,
			Steps: []domain.JourneyStep{{Type: "send_message", Channel: "sms", Template: "t"}}}
	}
	steps := []domain.JourneyStep{{Type: "wait", Hours: 3}, send(domain.JourneyStep{Channel: "sms", Text: "hi {{first_name}}"})}
	for _, c := range []struct {
		name    string
		given   []domain.Event
		patch   domain.JourneyPatch
		code    domain.Code // "" for success
		field   string
		version int // 0: nothing recorded
		status  string
	}{
		{"steps", []domain.Event{created("active")}, domain.JourneyPatch{Steps: &steps}, "", "", 2, "active"},
		{"second edit", []domain.Event{created("active"), &domain.JourneyUpdated{Version: 2, Name: "n", Status: "active", Steps: steps}},
			domain.JourneyPatch{Name: ptr("m")}, "", "", 3, "active"},
		{"draft to active", []domain.Event{created("draft")}, domain.JourneyPatch{Status: ptr("active")}, "", "", 2, "active"},
		{"archive", []domain.Event{created("active")}, domain.JourneyPatch{Status: ptr("archived")}, "", "", 2, "archived"},
		{"archive paused", []domain.Event{created("active"), &domain.JourneyPaused{Reason: "manual"}}, domain.JourneyPatch{Status: ptr("archived")}, "", "", 2, "archived"},
		{"edit paused", []domain.Event{created("active"), &domain.JourneyPaused{Reason: "manual"}}, domain.JourneyPatch{AllowReentry: ptr(true)}, "", "", 2, "paused"},
		{"nothing changes", []domain.Event{created("active")}, domain.JourneyPatch{Name: ptr(" n "), Status: ptr("active")}, "", "", 0, ""},
		{"archived", []domain.Event{created("active"), &domain.JourneyUpdated{Version: 2, Status: "archived"}}, domain.JourneyPatch{Name: ptr("m")}, domain.CodeConflict, "", 0, ""},
		{"active to draft", []domain.Event{created("active")}, domain.JourneyPatch{Status: ptr("draft")}, domain.CodeConflict, "", 0, ""},
		{"paused to active", []domain.Event{created("active"), &domain.JourneyPaused{Reason: "manual"}}, domain.JourneyPatch{Status: ptr("active")}, domain.CodeConflict, "", 0, ""},
		{"to paused", []domain.Event{created("active")}, domain.JourneyPatch{Status: ptr("paused")}, domain.CodeInvalid, "status", 0, ""},
		{"bad status", []domain.Event{created("active")}, domain.JourneyPatch{Status: ptr("gone")}, domain.CodeInvalid, "status", 0, ""},
		{"empty name", []domain.Event{created("active")}, domain.JourneyPatch{Name: ptr(" ")}, domain.CodeInvalid, "name", 0, ""},
		{"bad step", []domain.Event{created("active")}, domain.JourneyPatch{Steps: &[]domain.JourneyStep{send(domain.JourneyStep{Channel: "sms", Text: "{{x}}"})}}, domain.CodeInvalid, "steps[0].text", 0, ""},
		{"no steps", []domain.Event{created("active")}, domain.JourneyPatch{Steps: &[]domain.JourneyStep{}}, domain.CodeInvalid, "steps", 0, ""},
		{"unknown", nil, domain.JourneyPatch{Name: ptr("m")}, domain.CodeNotFound, "", 0, ""},
	} {
		var j domain.Journey
		for _, e := range c.given {
			j.Apply(e)
		}
		ev, err := j.Update("shop_1", "jrn_1", c.patch, now)
		if c.code != "" {
			if domain.ErrorCode(err) != c.code || ev != nil {
				t.Errorf("%s: %+v %v, want %s", c.name, ev, err, c.code)
			} else if e, _ := err.(*domain.Error); c.field != "" && e.Field != c.field {
				t.Errorf("%s: field %s, want %s", c.name, e.Field, c.field)
			}
			continue
		}
		if err != nil || (c.version == 0) != (ev == nil) || (ev != nil && (ev.Version != c.version || ev.Status != c.status || !ev.UpdatedAt.Equal(now))) {
			t.Errorf("%s: %+v %v", c.name, ev, err)
			continue
		}
		if ev != nil {
			j.Apply(ev)
			if j.Version != c.version || j.Status != c.status {
				t.Errorf("%s: after apply %+v", c.name, j)
			}
		}
	}
	var other domain.Journey
	other.Apply(created("active"))
	if _, err := other.Update("shop_2", "jrn_1", domain.JourneyPatch{Name: ptr("m")}, now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's journey: %v", err)
	}
}

// TestEnrollByHand: a manual enrollment runs the given steps version with
// topic manual; an active enrollment, an earlier one without re-entry or
// the same request again are conflicts; only an active journey enrolls.
func TestEnrollByHand(t *testing.T) {
	now := time.Now()
	in := domain.Enrollment{ShopID: "shop_1", JourneyID: "jrn_1", CustomerID: "cus_1", TriggerEventID: "k1", StepsVersion: 3}
	var a domain.JourneyEnrollments
	ev, err := a.EnrollByHand(in, now)
	if err != nil || ev.TriggerTopic != domain.TriggerManual || ev.StepsVersion != 3 || ev.Version() != 3 {
		t.Fatalf("%+v %v", ev, err)
	}
	a.Apply(ev)
	// In this order: the last case ends the active enrollment first.
	for _, c := range []struct {
		name string
		in   domain.Enrollment
	}{
		{"same request", in},
		{"active", domain.Enrollment{ShopID: "shop_1", JourneyID: "jrn_1", CustomerID: "cus_1", TriggerEventID: "k2", AllowReentry: true}},
		{"no re-entry", domain.Enrollment{ShopID: "shop_1", JourneyID: "jrn_1", CustomerID: "cus_1", TriggerEventID: "k3"}},
	} {
		name, in := c.name, c.in
		if name == "no re-entry" {
			a.Apply(&domain.JourneyEnrollmentExited{EnrollmentID: ev.EnrollmentID})
		}
		if ev, err := a.EnrollByHand(in, now); domain.ErrorCode(err) != domain.CodeConflict || ev != nil {
			t.Errorf("%s: %+v %v", name, ev, err)
		}
	}
	in.TriggerEventID, in.AllowReentry = "k4", true
	if ev, err := a.EnrollByHand(in, now); err != nil || ev == nil {
		t.Fatalf("re-entry after exit: %+v %v", ev, err)
	}
	for status, code := range map[string]domain.Code{"active": "", "draft": domain.CodeConflict, "paused": domain.CodeConflict, "archived": domain.CodeConflict} {
		j := domain.Journey{}
		j.Apply(&domain.JourneyCreated{ShopID: "shop_1", Status: status})
		if err := j.CanEnroll("shop_1"); domain.ErrorCode(err) != code && !(code == "" && err == nil) {
			t.Errorf("%s: %v", status, err)
		}
		if err := j.CanEnroll("shop_2"); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Errorf("%s in another shop: %v", status, err)
		}
	}
	if !slices.Contains(domain.MergeFields(), "shop_name") {
		t.Fatal("merge fields")
	}
	if got := domain.RenderMergeFields("<b>{{first_name}}</b> {{ shop_name }}{{last_name}}", map[string]string{"first_name": "<Ann>", "shop_name": "S"},
		func(s string) string { return "[" + s + "]" }); got != "<b>[<Ann>]</b> [S][]" {
		t.Fatalf("render: %q", got)
	}
}

// FuzzMergeFields: content the merge-field check accepts renders with no
// "{{" left from a merge field, and rendering never panics on anything.
func FuzzMergeFields(f *testing.F) {
	for _, s := range []string{"Hi {{first_name}}", "{{ shop_name }}{{last_name}}", "{{", "}}{{", "{{email}}", "{{{first_name}}}", "a{{first_name"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := domain.RenderMergeFields(s, map[string]string{"first_name": "A", "last_name": "B", "shop_name": "C"}, nil)
		err := domain.CheckMergeFields("text", s)
		if err != nil {
			if e, ok := err.(*domain.Error); !ok || e.Field != "text" {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if !strings.Contains(s, "{{") && out != s {
			t.Fatalf("%q without merge fields rendered as %q", s, out)
		}
	})
}
