package journeys_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/journeys"
)

// TestTriggersAreCommerceTopics: every journey trigger is one of the
// platform's topics.
func TestTriggersAreCommerceTopics(t *testing.T) {
	for _, tr := range domain.JourneyTriggers() {
		if !slices.Contains(shopify.Topics(), tr) {
			t.Errorf("trigger %q is not a commerce topic", tr)
		}
	}
}

// TestTheReadModelFoldsOnlyJourneyEvents: the journeys projector is a
// read model; the triggers are the enrollment reactor's.
func TestTheReadModelFoldsOnlyJourneyEvents(t *testing.T) {
	for _, typ := range journeys.Projector(nil).Types {
		switch typ {
		case "ShopErased", "JourneyCreated", "JourneyEnrollmentStarted", "JourneyEnrollmentExited", "JourneyEnrollmentCompleted", "JourneyPaused", "JourneyResumed",
			"JourneyUpdated", "FlowConfigured":
		default:
			t.Errorf("the journeys read model folds %s", typ)
		}
	}
}

// TestFlowSettings: a shop's flows read as their defaults until
// configured, then as the last FlowConfigured left them (another shop's
// untouched); ShopErased deletes the shop's settings.
func TestFlowSettings(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return at })
	meta := commands.Meta{Actor: "test", Source: "cli"}
	acc, err := core.Commands.CreateAccount(ctx, commands.CreateAccount{Name: "Acme", Plan: "agency"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Commands.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: "flows.example.com", Plan: "agency",
		WebhookSecret: "flows-secret-0123456789"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	shop := res.ID
	off, days := false, 3*24*60
	configure := func(p domain.FlowPatch) {
		t.Helper()
		if _, _, err := core.Commands.ConfigureFlow(ctx, commands.ConfigureFlow{ShopID: shop, Flow: domain.FlowReviewRequest, Patch: p}, meta); err != nil {
			t.Fatal(err)
		}
	}
	configure(domain.FlowPatch{Enabled: &off})
	configure(domain.FlowPatch{DelayMinutes: &days})
	read := core.ReadSide(t, journeys.Projector(core.Codec))
	head, err := core.Log.HeadPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read.WaitFor(t, head)
	q := journeys.NewQueries(read.DB())

	flows, err := q.Flows(ctx, shop)
	if err != nil {
		t.Fatal(err)
	}
	want := domain.DefaultFlowSettings(domain.FlowReviewRequest)
	want.Enabled, want.DelayMinutes = false, days
	if len(flows) != 2 || flows[0].Name != domain.FlowReviewRequest || !flows[0].ConfiguredAt.Equal(at) ||
		!reflect.DeepEqual(flows[0].Settings, want) || flows[1].Name != domain.FlowCartAbandonment || !flows[1].ConfiguredAt.IsZero() ||
		!reflect.DeepEqual(flows[1].Settings, domain.DefaultFlowSettings(domain.FlowCartAbandonment)) {
		t.Fatalf("flows: %+v", flows)
	}
	if v, err := q.Flow(ctx, shop, domain.FlowCartAbandonment); err != nil || !v.ConfiguredAt.IsZero() || !v.Settings.Enabled {
		t.Fatalf("cart abandonment: %+v %v", v, err)
	}
	if v, err := q.Flow(ctx, "shop_other", domain.FlowReviewRequest); err != nil || !v.ConfiguredAt.IsZero() || !v.Settings.Enabled {
		t.Fatalf("another shop's review request: %+v %v", v, err)
	}
	if _, err := q.Flow(ctx, shop, "welcome"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("unknown flow: %v", err)
	}

	erased, err := core.Commands.EraseShop(ctx, commands.EraseShop{ShopID: shop, Reason: domain.ShopErasedRedact}, meta)
	if err != nil {
		t.Fatal(err)
	}
	read.WaitFor(t, erased.Position)
	if rows := testenv.Dump(t, read.DB(), "flow_settings", "shop_id, flow"); len(rows) != 0 {
		t.Fatalf("flow settings left after the shop's erasure: %v", rows)
	}
}
