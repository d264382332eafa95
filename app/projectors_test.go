package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/enrollment"
)

// TestProjectorsIssueNoCommand: the modules' projectors, built with the
// commands at hand (as a replay could be), fold a journey and its trigger
// and append nothing: enrolment is the reactor's, which a replay never
// runs. The reactor alone, over the same log, enrolls the customer (the
// trigger is a real one).
func TestProjectorsIssueNoCommand(t *testing.T) {
	ctx := context.Background()
	core := testenv.New(t, nil)
	meta := commands.Meta{Actor: "test", Source: "cli"}
	if _, _, err := core.Commands.CreateJourney(ctx, commands.CreateJourney{ShopID: "shop_a", Draft: domain.JourneyDraft{Name: "Reviews",
		Trigger: "orders/fulfilled", Steps: []domain.JourneyStep{{Type: "send_message", Channel: "sms", Template: "t"}}}}, meta); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := core.Commands.RecordOrder(ctx, commands.RecordOrder{Delivered: commands.Delivered{ShopID: "shop_a", Topic: "orders/fulfilled",
		EventID: eventlog.DeterministicID("test", "o1")}, CustomerExternalID: "42",
		Snapshot: domain.OrderSnapshot{ExternalID: "o1", CreatedAt: now, UpdatedAt: now}}, meta); err != nil {
		t.Fatal(err)
	}
	head, err := core.Log.HeadPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := app.Deps{Codec: core.Codec, Commands: core.Commands}
	core.ReadSide(t, app.Projectors(d)...).WaitFor(t, head)
	if after, _ := core.Log.HeadPosition(ctx); after != head {
		t.Fatalf("the projectors appended: head %d → %d", head, after)
	}

	core.ReadSide(t, enrollment.Projector(core.Codec, func(ctx context.Context, in domain.Enrollment) error {
		_, err := core.Commands.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: in}, meta)
		return err
	})).WaitFor(t, head)
	if after, _ := core.Log.HeadPosition(ctx); after != head+1 {
		t.Fatalf("the reactor appended %d events, want 1 enrolment", after-head)
	}
}
