package domain_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

var reviewSteps = []domain.JourneyStep{{Type: "wait", Hours: 24}, {Type: "send_message", Channel: "whatsapp", Template: " review_request "}}

func TestNewJourney(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev, err := domain.NewJourney("shop_1", domain.JourneyDraft{Name: " Reviews ", Trigger: "orders/fulfilled", Steps: reviewSteps}, now)
	if err != nil || ev.Name != "Reviews" || ev.Status != domain.JourneyStatusActive || ev.Steps[1].Template != "review_request" ||
		!domain.HasPrefixID(ev.JourneyID, domain.PrefixJourney) || !ev.CreatedAt.Equal(now) {
		t.Fatalf("%+v %v", ev, err)
	}
	for _, c := range []struct {
		name  string
		d     domain.JourneyDraft
		field string
	}{
		{"no name", domain.JourneyDraft{Trigger: "orders/fulfilled", Steps: reviewSteps}, "name"},
		{"unknown topic", domain.JourneyDraft{Name: "n", Trigger: "orders/nope", Steps: reviewSteps}, "trigger"},
		{"topic without customer", domain.JourneyDraft{Name: "n", Trigger: "products/create", Steps: reviewSteps}, "trigger"},
		{"paused", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Status: "paused", Steps: reviewSteps}, "status"},
		{"no steps", domain.JourneyDraft{Name: "n", Trigger: "orders/paid"}, "steps"},
		{"only waits", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Steps: reviewSteps[:1]}, "steps"},
		{"zero wait", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Steps: []domain.JourneyStep{{Type: "wait"}}}, "steps[0].hours"},
		{"bad type", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Steps: []domain.JourneyStep{{Type: "jump"}}}, "steps[0].type"},
		{"bad channel", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Steps: []domain.JourneyStep{{Type: "send_message", Channel: "fax", Template: "t"}}}, "steps[0].channel"},
		{"no template", domain.JourneyDraft{Name: "n", Trigger: "orders/paid", Steps: []domain.JourneyStep{{Type: "send_message", Channel: "sms"}}}, "steps[0].template"},
	} {
		_, err := domain.NewJourney("shop_1", c.d, now)
		if e, ok := err.(*domain.Error); !ok || e.Field != c.field {
			t.Errorf("%s: %v, want field %s", c.name, err, c.field)
		}
	}
	if ev, err := domain.NewJourney("shop_1", domain.JourneyDraft{Name: "n", Trigger: "checkouts/create", Status: "draft", Steps: reviewSteps}, now); err != nil || ev.Status != "draft" {
		t.Fatalf("draft: %+v %v", ev, err)
	}
}

func TestJourneyEnrollOncePerCustomer(t *testing.T) {
	var a domain.JourneyEnrollments
	in := domain.Enrollment{ShopID: "shop_1", JourneyID: "jrn_1", CustomerID: "cus_1", TriggerEventID: "e1"}
	ev, err := a.Enroll(in, time.Now())
	if err != nil || ev == nil || !domain.HasPrefixID(ev.EnrollmentID, domain.PrefixEnrollment) {
		t.Fatalf("%+v %v", ev, err)
	}
	a.Apply(ev)
	in.TriggerEventID = "e2"
	if ev, err := a.Enroll(in, time.Now()); ev != nil || err != nil {
		t.Fatalf("second trigger without re-entry: %+v %v", ev, err)
	}
	in.AllowReentry = true
	if ev, _ := a.Enroll(in, time.Now()); ev == nil {
		t.Fatal("re-entry did not enroll")
	}
	in.TriggerEventID = "e1"
	if ev, _ := a.Enroll(in, time.Now()); ev != nil {
		t.Fatal("a handled trigger enrolled again")
	}
}

// FuzzNewJourney: any steps decoded from JSON either fail validation with
// a field or give a journey whose steps are all valid.
func FuzzNewJourney(f *testing.F) {
	f.Add("orders/fulfilled", `[{"type":"wait","hours":24},{"type":"send_message","channel":"whatsapp","template":"r"}]`)
	f.Add("checkouts/create", `[{"type":"send_message","channel":"fax"}]`)
	f.Add("x", `[]`)
	f.Fuzz(func(t *testing.T, trigger, steps string) {
		var s []domain.JourneyStep
		if json.Unmarshal([]byte(steps), &s) != nil {
			return
		}
		ev, err := domain.NewJourney("shop_1", domain.JourneyDraft{Name: "n", Trigger: trigger, Steps: s}, time.Now())
		if err != nil {
			if e, ok := err.(*domain.Error); !ok || e.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if len(ev.Steps) == 0 || len(ev.Steps) > domain.MaxJourneySteps {
			t.Fatalf("%d steps", len(ev.Steps))
		}
	})
}
