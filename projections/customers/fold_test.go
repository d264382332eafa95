package customers

import (
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
)

// The fold without a database: rows and events in, changed rows out.

var foldNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func ev(pos int, e domain.Event) projections.DecodedEvent {
	return projections.DecodedEvent{
		Event: eventlog.Event{Position: eventlog.Position(pos),
			EventData: eventlog.EventData{Type: e.EventType(), OccurredAt: foldNow.Add(time.Duration(pos) * time.Second)}},
		Decoded: envelope.Decoded{Event: e},
	}
}

func micros(pos int) int64 { return foldNow.Add(time.Duration(pos) * time.Second).UnixMicro() }

func str(s string) *string { return &s }

func TestFoldComputesFiguresOncePerBatch(t *testing.T) {
	atRisk, churned := bounds(foldNow)
	day := func(d int) time.Time { return foldNow.AddDate(0, 0, -d) }
	r := newRows()
	// cus_b has one order already, o0, which the batch moves to cus_a.
	r.customers["cus_b"] = &customer{ID: "cus_b", Shop: "s1", Tags: "[]", PlatformTags: "[]", OrdersCount: 1, TotalSpent: 500,
		LastOrderAt: day(10).UnixMicro(), Stage: domain.StageNew, Version: 3, Email: sql.NullString{String: "b@x", Valid: true}}
	r.orders["o0"] = &order{ID: "o0", Shop: "s1", Customer: "cus_b", Total: 500, OrderedAt: day(10).UnixMicro(), Version: 4}
	r.refunds["rf_old"] = true
	r.refunded["o2"] = 100 // a refund folded before its order
	events := []projections.DecodedEvent{
		ev(10, &domain.CustomerCreated{CustomerID: "cus_a", ShopID: "s1", CustomerProfile: domain.CustomerProfile{
			ExternalID: "1", Email: str("a@x"), OrdersCount: 7, TotalSpent: 9999, PlatformTags: []string{"vip"}}}),
		ev(11, &domain.OrderRecorded{OrderID: "o1", ShopID: "s1", CustomerID: "cus_a", OrderSnapshot: domain.OrderSnapshot{TotalPrice: 1000, CreatedAt: day(100)}}),
		ev(12, &domain.OrderRecorded{OrderID: "o2", ShopID: "s1", CustomerID: "cus_a", OrderSnapshot: domain.OrderSnapshot{TotalPrice: 300, CreatedAt: day(5)}}),
		ev(13, &domain.OrderRecorded{OrderID: "o0", ShopID: "s1", CustomerID: "cus_a", OrderSnapshot: domain.OrderSnapshot{TotalPrice: 500, CreatedAt: day(10)}}),
		ev(14, &domain.RefundRecorded{RefundID: "rf1", OrderID: "o1", ShopID: "s1", Amount: 250}),
		ev(15, &domain.RefundRecorded{RefundID: "rf_old", OrderID: "o1", ShopID: "s1", Amount: 999}), // kept already
		ev(16, &domain.OrderRecorded{OrderID: "o3", ShopID: "s1", CustomerID: "cus_a", OrderSnapshot: domain.OrderSnapshot{TotalPrice: 50, CreatedAt: day(1), CancelledAt: day(1)}}),
		ev(17, &domain.CustomerTagsSet{CustomerID: "cus_a", ShopID: "s1", Tags: []string{"x"}}),
		ev(18, &domain.CustomerUpdated{CustomerID: "cus_b", ShopID: "s1", Stale: true}),
		ev(19, &domain.OrderRecorded{OrderID: "o9", ShopID: "s1", OrderSnapshot: domain.OrderSnapshot{TotalPrice: 5}}), // a guest's
		ev(20, &domain.CustomerTagsSet{CustomerID: "cus_z", ShopID: "s1", Tags: []string{"ghost"}}),                    // no such customer
	}
	ch := fold(r, events, atRisk, churned)
	want := changes{
		customers: []customer{
			{ID: "cus_a", Shop: "s1", ExternalID: "1", Email: sql.NullString{String: "a@x", Valid: true},
				OrdersCount: 3, TotalSpent: 1000 - 250 + 300 - 100 + 500, LastOrderAt: day(5).UnixMicro(),
				Tags: `["x"]`, PlatformTags: `["vip"]`, CreatedAt: micros(10), UpdatedAt: micros(17), Version: 17,
				ProfileOrdersCount: 7, ProfileSpent: 9999, Stage: domain.StageActive},
			// cus_b lost its only order: its profile figures stand again.
			{ID: "cus_b", Shop: "s1", Email: sql.NullString{String: "b@x", Valid: true}, Tags: "[]", PlatformTags: "[]",
				Version: 3, Stage: domain.StageProspect},
		},
		orders: []order{
			{ID: "o0", Shop: "s1", Customer: "cus_a", Total: 500, OrderedAt: day(10).UnixMicro(), Version: 13},
			{ID: "o1", Shop: "s1", Customer: "cus_a", Total: 1000, Refunded: 250, OrderedAt: day(100).UnixMicro(), Version: 11},
			{ID: "o2", Shop: "s1", Customer: "cus_a", Total: 300, Refunded: 100, OrderedAt: day(5).UnixMicro(), Version: 12},
			{ID: "o3", Shop: "s1", Customer: "cus_a", Total: 50, Cancelled: true, OrderedAt: day(1).UnixMicro(), Version: 16},
		},
		refunds: []refund{{ID: "rf1", Order: "o1", Amount: 250}},
	}
	if !reflect.DeepEqual(ch, want) {
		t.Fatalf("changes\n got %+v\nwant %+v", ch, want)
	}
}

func TestFoldKeepsNewerRowsAndErases(t *testing.T) {
	atRisk, churned := bounds(foldNow)
	r := newRows()
	r.customers["cus_a"] = &customer{ID: "cus_a", Shop: "s1", Tags: "[]", PlatformTags: "[]", Version: 50, Stage: domain.StageProspect,
		Email: sql.NullString{String: "a@x", Valid: true}, Phone: sql.NullString{String: "+1", Valid: true}}
	r.customers["cus_m"] = &customer{ID: "cus_m", Shop: "s2", Tags: "[]", PlatformTags: "[]", Version: 5,
		Email: sql.NullString{String: "m@x", Valid: true}}
	events := []projections.DecodedEvent{
		// Older than the row: the profile stays, the figures are refreshed.
		ev(20, &domain.CustomerUpdated{CustomerID: "cus_a", ShopID: "s1", CustomerProfile: domain.CustomerProfile{Email: str("old@x")}}),
		ev(21, &domain.CustomerTagsSet{CustomerID: "cus_a", ShopID: "s1", Tags: []string{"old"}}),
		// cus_m is another shop's: not erased by s1's erasure.
		ev(60, &domain.CustomerErased{ShopID: "s1", CustomerID: "cus_a", MessagingCustomerID: "cus_m"}),
	}
	ch := fold(r, events, atRisk, churned)
	want := changes{customers: []customer{{ID: "cus_a", Shop: "s1", Tags: "[]", PlatformTags: "[]", Version: 60,
		Redacted: true, Stage: domain.StageProspect}}, erasedConsents: map[string]string{"cus_a": "s1", "cus_m": "s1"}}
	if !reflect.DeepEqual(ch, want) {
		t.Fatalf("changes\n got %+v\nwant %+v", ch, want)
	}
}
