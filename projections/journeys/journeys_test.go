package journeys_test

import (
	"context"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/journeys"
)

var meta = commands.Meta{Actor: "test", Source: "cli"}

// TestReactorEnrollsOnceAndRebuildAppendsNothing: the reactor enrolls the
// customer of a later order of the trigger topic, not a guest, not a stale
// snapshot, not an order from before the journey; a rebuild from position
// 0 appends nothing and gives the same rows.
func TestReactorEnrollsOnceAndRebuildAppendsNothing(t *testing.T) {
	ctx := context.Background()
	// The reactor runs commands on the projection goroutine: the clock is
	// shared.
	start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var ticks atomic.Int64
	core := testenv.New(t, func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) })
	clock := start
	enroll := func(ctx context.Context, in domain.Enrollment) error {
		_, err := core.Commands.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: in}, meta)
		return err
	}
	live := core.ReadSide(t, journeys.Projector(core.Codec, enroll))
	order := func(id, customer string, updated time.Time) {
		t.Helper()
		if _, err := core.Commands.RecordOrder(ctx, commands.RecordOrder{Delivered: commands.Delivered{ShopID: "shop_a", Topic: "orders/fulfilled",
			EventID: eventlog.DeterministicID("test", id, updated.String())}, CustomerExternalID: customer,
			Snapshot: domain.OrderSnapshot{ExternalID: id, CreatedAt: clock, UpdatedAt: updated}}, meta); err != nil {
			t.Fatal(err)
		}
	}
	order("1", "42", clock) // before the journey
	_, j, err := core.Commands.CreateJourney(ctx, commands.CreateJourney{ShopID: "shop_a", Draft: domain.JourneyDraft{Name: "Reviews",
		Trigger: "orders/fulfilled", Steps: []domain.JourneyStep{{Type: "send_message", Channel: "sms", Template: "t"}}}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	later := clock.Add(time.Hour)
	order("1", "42", later)                   // a newer snapshot of the same order
	order("1", "42", later.Add(-time.Minute)) // stale
	order("2", "", clock)                     // a guest
	order("3", "42", clock)                   // same customer, no re-entry
	settle := func(rs interface {
		WaitFor(testing.TB, eventlog.Position)
	}) eventlog.Position {
		for {
			head, err := core.Log.HeadPosition(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rs.WaitFor(t, head)
			if again, _ := core.Log.HeadPosition(ctx); again == head {
				return head
			}
		}
	}
	head := settle(live)
	q := journeys.NewQueries(live.DB())
	rows, next, err := q.Enrollments(ctx, j.JourneyID, journeys.ListQuery{Shop: "shop_a", Limit: 10})
	if err != nil || next != nil || len(rows) != 1 || rows[0].CustomerID != domain.CustomerIDFromExternal("shop_a", "42") || rows[0].Status != "active" {
		t.Fatalf("enrollments: %+v %v %v", rows, next, err)
	}
	got, err := q.Journey(ctx, "shop_a", j.JourneyID)
	if err != nil || got.Enrollments != 1 || got.Status != "active" {
		t.Fatalf("journey: %+v %v", got, err)
	}
	if _, err := q.Journey(ctx, "shop_b", j.JourneyID); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's journey: %v", err)
	}

	rebuilt := core.ReadSide(t, journeys.Projector(core.Codec, enroll))
	if after := settle(rebuilt); after != head {
		t.Fatalf("rebuild appended: head %d → %d", head, after)
	}
	for table, order := range map[string]string{"journeys": "journey_id", "journey_enrollments": "enrollment_id"} {
		if a, b := testenv.Dump(t, live.DB(), table, order), testenv.Dump(t, rebuilt.DB(), table, order); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s differs after rebuild:\n%v\n%v", table, a, b)
		}
	}
}

// TestTriggersAreCommerceTopics: every journey trigger is one of the
// platform's topics.
func TestTriggersAreCommerceTopics(t *testing.T) {
	for _, tr := range domain.JourneyTriggers() {
		if !slices.Contains(shopify.Topics(), tr) {
			t.Errorf("trigger %q is not a commerce topic", tr)
		}
	}
}
