package commands_test

import (
	"context"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

func TestJourneyCommands(t *testing.T) {
	ctx := context.Background()
	h, log := newHandler(t)
	steps := []domain.JourneyStep{{Type: "wait", Hours: 24}, {Type: "send_message", Channel: "whatsapp", Template: "review_request"}}
	res, ev, err := h.CreateJourney(ctx, commands.CreateJourney{ShopID: "shop_1", Draft: domain.JourneyDraft{Name: "Reviews",
		Trigger: "orders/fulfilled", Steps: steps}}, meta)
	if err != nil || res.ID != ev.JourneyID || ev.Status != "active" || streamLen(t, log, domain.JourneyStream(ev.JourneyID)) != 1 {
		t.Fatalf("create: %+v %+v %v", res, ev, err)
	}
	if _, _, err := h.CreateJourney(ctx, commands.CreateJourney{ShopID: "shop_1", Draft: domain.JourneyDraft{Name: "x",
		Trigger: "products/create", Steps: steps}}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("bad trigger: %v", err)
	}

	// Concurrent triggers for one customer: exactly one enrollment.
	cus := domain.CustomerIDFromExternal("shop_1", "7")
	stream := domain.EnrollmentStream(ev.JourneyID, cus)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: domain.Enrollment{ShopID: "shop_1", JourneyID: ev.JourneyID,
				CustomerID: cus, TriggerEventID: "trigger-" + string(rune('a'+i)), TriggerTopic: "orders/fulfilled"}}, meta)
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := streamLen(t, log, stream); n != 1 {
		t.Fatalf("%d enrollments of one customer, want 1", n)
	}

	// With re-entry each new trigger enrolls; a redelivered one does not.
	enroll := func(trigger string) string {
		t.Helper()
		res, err := h.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: domain.Enrollment{ShopID: "shop_1", JourneyID: ev.JourneyID,
			CustomerID: cus, TriggerEventID: trigger, TriggerTopic: "orders/fulfilled", AllowReentry: true}}, meta)
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	if id := enroll("trigger-z"); !domain.HasPrefixID(id, domain.PrefixEnrollment) {
		t.Fatalf("re-entry enrollment id %q", id)
	}
	if id := enroll("trigger-z"); id != "" {
		t.Fatalf("redelivered trigger enrolled again: %q", id)
	}
	if n := streamLen(t, log, stream); n != 2 {
		t.Fatalf("%d enrollments, want 2", n)
	}
	if _, err := h.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: domain.Enrollment{ShopID: "shop_1", JourneyID: "x", CustomerID: cus,
		TriggerEventID: "t"}}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("bad journey id: %v", err)
	}
}

// TestJourneyEditsAndManualEnrollmentsRace: concurrent edits each take
// their own version; concurrent manual enrollments of one customer enroll
// once, the others are conflicts; a customer the shop does not have is a
// validation error on customer_id.
func TestJourneyEditsAndManualEnrollmentsRace(t *testing.T) {
	ctx := context.Background()
	h, log := newHandler(t)
	steps := []domain.JourneyStep{{Type: "send_message", Channel: "sms", Text: "hi {{first_name}}"}}
	_, j, err := h.CreateJourney(ctx, commands.CreateJourney{ShopID: "shop_1", Draft: domain.JourneyDraft{Name: "J", Trigger: "orders/paid", Steps: steps}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	versions := map[int]bool{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "J" + string(rune('a'+i))
			_, ev, err := h.UpdateJourney(ctx, commands.UpdateJourney{ShopID: "shop_1", JourneyID: j.JourneyID, Patch: domain.JourneyPatch{Name: &name}}, meta)
			if err != nil || ev == nil {
				t.Error(ev, err)
				return
			}
			mu.Lock()
			versions[ev.Version] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(versions) != 8 || !versions[2] || !versions[9] {
		t.Fatalf("versions %v, want 2 to 9 once each", versions)
	}

	if _, err := h.RecordCustomer(ctx, commands.RecordCustomer{ShopID: "shop_1", Profile: domain.CustomerProfile{ExternalID: "9"}}, meta); err != nil {
		t.Fatal(err)
	}
	cus := domain.CustomerIDFromExternal("shop_1", "9")
	var ok, conflicts int
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, ev, err := h.EnrollByHand(ctx, commands.EnrollByHand{ShopID: "shop_1", JourneyID: j.JourneyID, CustomerID: cus, RequestKey: "k" + string(rune('a'+i))}, meta)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && ev.StepsVersion == 9 && ev.TriggerTopic == domain.TriggerManual && res.ID == ev.EnrollmentID:
				ok++
			case domain.ErrorCode(err) == domain.CodeConflict:
				conflicts++
			default:
				t.Error(ev, err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || conflicts != 7 || streamLen(t, log, domain.EnrollmentStream(j.JourneyID, cus)) != 1 {
		t.Fatalf("%d enrolled, %d conflicts", ok, conflicts)
	}
	for _, c := range []struct{ shop, customer string }{{"shop_1", domain.CustomerIDFromExternal("shop_1", "404")}, {"shop_1", "x"}, {"shop_1", ""}} {
		if _, _, err := h.EnrollByHand(ctx, commands.EnrollByHand{ShopID: c.shop, JourneyID: j.JourneyID, CustomerID: c.customer}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("customer %q: %v", c.customer, err)
		} else if e := err.(*domain.Error); e.Field != "customer_id" {
			t.Errorf("customer %q: field %s", c.customer, e.Field)
		}
	}
	if _, _, err := h.EnrollByHand(ctx, commands.EnrollByHand{ShopID: "shop_2", JourneyID: j.JourneyID, CustomerID: cus}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop: %v", err)
	}
}
