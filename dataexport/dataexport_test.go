package dataexport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/dataexport"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/messaging"
)

var meta = commands.Meta{Actor: "test", Source: "cli"}

// shopFixture records customers with orders and returns the export source
// once the read models caught up.
func shopFixture(tb testing.TB, customersN, ordersEach int) *dataexport.Source {
	tb.Helper()
	ctx := context.Background()
	start := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	core := testenv.New(tb, func() time.Time { return start })
	rs := core.ReadSide(tb, customers.Projector(core.Codec, nil), commerce.Projector(core.Codec), attribution.Projector(core.Codec),
		journeys.Projector(core.Codec), messaging.Projector(core.Codec))
	for c := 0; c < customersN; c++ {
		email := fmt.Sprintf("c%d@example.com", c)
		ext := fmt.Sprint(1000 + c)
		if _, err := core.Commands.RecordCustomer(ctx, commands.RecordCustomer{ShopID: "shop_a", EventID: uuid.New(),
			Profile: domain.CustomerProfile{ExternalID: ext, Email: &email, AcceptsMarketing: c%2 == 0}}, meta); err != nil {
			tb.Fatal(err)
		}
		for o := 0; o < ordersEach; o++ {
			if _, err := core.Commands.RecordOrder(ctx, commands.RecordOrder{
				Delivered:          commands.Delivered{ShopID: "shop_a", Topic: "orders/create", EventID: uuid.New(), LikelyNew: true},
				CustomerExternalID: ext,
				Snapshot: domain.OrderSnapshot{ExternalID: fmt.Sprintf("%d-%d", c, o), Currency: "EUR", TotalPrice: 1000,
					CreatedAt: start.Add(time.Duration(o) * time.Hour), UpdatedAt: start, Email: email}}, meta); err != nil {
				tb.Fatal(err)
			}
		}
	}
	head, err := core.Log.HeadPosition(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	rs.WaitFor(tb, head)
	return &dataexport.Source{Log: eventlog.Log(core.Log), Codec: core.Codec, DB: rs.DB()}
}

// TestBuildIsScopedAndDeterministic: a customer's export holds its own
// profile, opt-in and orders' events only, decoded; building it twice
// gives the same bytes; an unknown customer gives empty sections.
func TestBuildIsScopedAndDeterministic(t *testing.T) {
	src := shopFixture(t, 3, 2)
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	subject := dataexport.Subject{ShopID: "shop_a", CustomerID: domain.CustomerIDFromExternal("shop_a", "1001"), RequestID: "gdr_1"}
	x, err := src.Build(ctx, subject, now)
	if err != nil {
		t.Fatal(err)
	}
	if !x.CustomerKnown || x.Profile == nil || *x.Profile.Email != "c1@example.com" || len(x.OptIns) != 1 || x.OptIns[0].Consented {
		t.Fatalf("profile %+v opt-ins %+v", x.Profile, x.OptIns)
	}
	types := map[string]int{}
	for _, e := range x.Events {
		types[e.Type]++
		if bytes.Contains(e.Data, []byte("c0@example.com")) || bytes.Contains(e.Data, []byte("c2@example.com")) {
			t.Errorf("another customer's data in %s", e.Type)
		}
	}
	if types["CustomerCreated"] != 1 || types["OrderRecorded"] != 2 || x.Sections.Orders != 2 {
		t.Errorf("events %v, counts %+v", types, x.Sections)
	}
	for i := 1; i < len(x.Events); i++ {
		if x.Events[i-1].Position >= x.Events[i].Position {
			t.Fatalf("events out of log order at %d", i)
		}
	}
	a, _ := x.JSON()
	y, _ := src.Build(ctx, subject, now)
	b, _ := y.JSON()
	if !bytes.Equal(a, b) {
		t.Error("two builds differ")
	}
	var doc map[string]any
	if err := json.Unmarshal(a, &doc); err != nil || doc["format_version"] != 1.0 || doc["request_id"] != "gdr_1" {
		t.Errorf("document: %v %v", doc["format_version"], err)
	}
	none, err := src.Build(ctx, dataexport.Subject{ShopID: "shop_a", CustomerID: domain.CustomerIDFromExternal("shop_a", "nobody"), RequestID: "gdr_2"}, now)
	if err != nil || none.CustomerKnown || none.Profile != nil || len(none.Events) != 0 || len(none.Messages) != 0 ||
		len(none.Attributions.Touchpoints) != 0 || none.OptIns == nil {
		t.Errorf("unknown customer: %+v %v", none, err)
	}
	if j, _ := none.JSON(); !bytes.Contains(j, []byte(`"events": []`)) || !bytes.Contains(j, []byte(`"profile": null`)) {
		t.Errorf("unknown customer's document: %s", j)
	}
}

// BenchmarkBuild: the export (built and encoded) of one customer with 10
// orders, in a shop of 10 and of 500 such customers: the lookups are by
// customer, so the shop's size should not matter.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{10, 500} {
		b.Run(fmt.Sprintf("customers=%d", n), func(b *testing.B) {
			src := shopFixture(b, n, 10)
			ctx := context.Background()
			subject := dataexport.Subject{ShopID: "shop_a", CustomerID: domain.CustomerIDFromExternal("shop_a", "1003"), RequestID: "gdr_1"}
			b.ReportAllocs()
			for b.Loop() {
				x, err := src.Build(ctx, subject, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := x.JSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
