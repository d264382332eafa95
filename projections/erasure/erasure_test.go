package erasure_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/erasure"
)

var meta = commands.Meta{RequestID: "dlv-redact-1", Actor: "webhook:dlv-redact-1", Source: "webhook"}

// The reactor hands the eraser each redact request with its personal data
// still readable, the orders' platform ids and exactly the shop's journeys
// created before it, and records the follow-up in its checkpoint's
// transaction; Settle removes it; a shop erasure drops the shop's rows.
func TestReactorHandsTheRequestAndRecordsTheFollowUp(t *testing.T) {
	ctx := context.Background()
	core := testenv.New(t, func() time.Time { return time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC) })
	journey := func(shop string) string {
		t.Helper()
		_, j, err := core.Commands.CreateJourney(ctx, commands.CreateJourney{ShopID: shop, Draft: domain.JourneyDraft{Name: "J",
			Trigger: "orders/paid", Steps: []domain.JourneyStep{{Type: "send_message", Channel: "email", Template: "t"}}}}, meta)
		if err != nil {
			t.Fatal(err)
		}
		return j.JourneyID
	}
	before := journey("shop_a")
	journey("shop_b") // another shop's
	res, err := core.Commands.RecordPrivacyRequest(ctx, commands.RecordPrivacyRequest{
		Delivered:          commands.Delivered{ShopID: "shop_a", Topic: commands.PrivacyCustomerRedact, EventID: eventlog.DeterministicID("t", "redact")},
		CustomerExternalID: "42", Email: "gone@example.com", Phone: "+31 6 1234 5678", Orders: []string{"9001"}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	journey("shop_a") // created after the request: not the request's concern

	var mu sync.Mutex
	var got []erasure.Request
	erase := func(_ context.Context, r erasure.Request) (domain.CustomerErased, eventlog.Position, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		return domain.CustomerErased{CustomerID: r.Customer.CustomerID, MessagingCustomerID: "cus_phone"}, 4242, nil
	}
	rs := core.ReadSide(t, erasure.Projector(core.Codec, erase))
	head, err := core.Log.HeadPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs.WaitFor(t, head)

	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("eraser called %d times", len(got))
	}
	r := got[0]
	mu.Unlock()
	wantCustomer := domain.CustomerIDFromExternal("shop_a", "42")
	if r.ShopID != "shop_a" || r.Customer.CustomerID != wantCustomer || r.Customer.Phone != "+31 6 1234 5678" ||
		r.Customer.Email != "gone@example.com" || !slices.Equal(r.ExternalOrders, []string{"9001"}) ||
		!slices.Equal(r.Orders, []string{domain.OrderIDFromExternal("shop_a", "9001")}) || r.CorrelationID != "dlv-redact-1" {
		t.Fatalf("request %+v", r)
	}
	if !slices.Equal(r.Journeys, []string{before}) {
		t.Fatalf("journeys %v, want only %s (the shop's, created before the request)", r.Journeys, before)
	}
	if r.EventID != eventlog.DeterministicID("t", "redact").String() || res.Position == 0 {
		t.Fatalf("event id %s", r.EventID)
	}

	q := erasure.NewQueries(rs.DB())
	pending, err := q.Pending(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].CustomerID != wantCustomer || pending[0].MessagingID != "cus_phone" ||
		pending[0].ErasedPosition != 4242 || pending[0].ShopID != "shop_a" || pending[0].RequestedAt == 0 {
		t.Fatalf("pending follow-ups %+v", pending)
	}
	if err := erasure.Settle(ctx, rs.Store, pending[0].RequestEventID); err != nil {
		t.Fatal(err)
	}
	if pending, err = q.Pending(ctx, 10); err != nil || len(pending) != 0 {
		t.Fatalf("after Settle: %+v %v", pending, err)
	}
}
