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
