package attribution_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/attribution"
)

const shop = "shop_attr"

var meta = commands.Meta{Actor: "test", Source: "webhook"}

// tables are the read model's tables and a stable order of each.
var tables = map[string]string{
	"touchpoints": "touchpoint_id", "attribution_orders": "order_id", "attribution_refunds": "refund_id",
	"attribution_credits": "order_id, model, position",
	"identity_keys":       "shop_id, link_key, side, holder_id", "identity_links": "shop_id, customer_id, anonymous_id",
	"attribution_settings": "shop_id",
}

func dumpAll(t *testing.T, rs *testenv.ReadSide) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for table, order := range tables {
		out[table] = testenv.Dump(t, rs.DB(), table, order)
	}
	return out
}

func must(t *testing.T) func(commands.Result, error) eventlog.Position {
	return func(res commands.Result, err error) eventlog.Position {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res.Position
	}
}

var (
	orderAt    = time.Date(2026, 10, 25, 12, 0, 0, 0, time.UTC)
	checkoutAt = time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)
)

// record delivers a checkout from a paid search ad and, five days later,
// an order of the same customer landing from an e-mail, both through the
// real commands; a pixel page view with UTM parameters of an anonymous
// visitor; and an order of another customer placed 40 days after the
// checkout (outside its window).
func record(t *testing.T, core *testenv.Core) eventlog.Position {
	t.Helper()
	ctx := context.Background()
	var last eventlog.Position
	last = max(last, must(t)(core.Commands.RecordCheckout(ctx, commands.RecordCheckout{
		Delivered:          commands.Delivered{ShopID: shop, Topic: "checkouts/create", EventID: eventlog.DeterministicID("t", "co1")},
		CustomerExternalID: "7",
		Snapshot: domain.CheckoutSnapshot{ExternalID: "co1", TotalPrice: 100 * domain.AmountScale, Currency: "EUR",
			CreatedAt: checkoutAt, UpdatedAt: checkoutAt,
			Attribution: domain.NewAttribution("https://shop.example/p/x?utm_source=google&utm_medium=cpc&utm_campaign=spring&gclid=abc", "")},
	}, meta)))
	last = max(last, must(t)(core.Commands.RecordStorefrontEvent(ctx, commands.RecordStorefrontEvent{ShopID: shop,
		Event: domain.StorefrontEvent{Type: "page_view", URL: "https://shop.example/?utm_source=tiktok&utm_medium=paid_social",
			AnonymousID: "anon-visitor-1", OccurredAt: time.Date(2026, 11, 1, 11, 0, 0, 0, time.UTC)}}, meta)))
	last = max(last, must(t)(core.Commands.RecordOrder(ctx, commands.RecordOrder{
		Delivered:          commands.Delivered{ShopID: shop, Topic: "orders/create", EventID: eventlog.DeterministicID("t", "o1")},
		CustomerExternalID: "7",
		Snapshot: domain.OrderSnapshot{ExternalID: "o1", Currency: "EUR", TotalPrice: 100 * domain.AmountScale, CreatedAt: orderAt,
			UpdatedAt: orderAt, Attribution: domain.NewAttribution("/?utm_source=newsletter&utm_medium=email&utm_campaign=oct", "")},
	}, meta)))
	late := checkoutAt.Add(40 * 24 * time.Hour)
	last = max(last, must(t)(core.Commands.RecordOrder(ctx, commands.RecordOrder{
		Delivered:          commands.Delivered{ShopID: shop, Topic: "orders/create", EventID: eventlog.DeterministicID("t", "o2")},
		CustomerExternalID: "7",
		Snapshot:           domain.OrderSnapshot{ExternalID: "o2", Currency: "EUR", TotalPrice: 10 * domain.AmountScale, CreatedAt: late, UpdatedAt: late},
	}, meta)))
	return last
}

func refund(t *testing.T, core *testenv.Core, amount domain.Amount) eventlog.Position {
	t.Helper()
	return must(t)(core.Commands.RecordRefund(context.Background(), commands.RecordRefund{
		Delivered:       commands.Delivered{ShopID: shop, Topic: "refunds/create", EventID: eventlog.DeterministicID("t", "r1")},
		OrderExternalID: "o1",
		Refund:          domain.RefundRecorded{ExternalID: "r1", Amount: amount, Currency: "EUR", CreatedAt: orderAt.Add(24 * time.Hour)},
	}, meta))
}

func records(t *testing.T, rs *testenv.ReadSide) map[string]attribution.Record {
	t.Helper()
	rows, next, err := attribution.NewQueries(rs.DB()).ListRecords(context.Background(), attribution.RecordListQuery{Shop: shop, Limit: 10})
	if err != nil || next != nil {
		t.Fatal(err, next)
	}
	out := map[string]attribution.Record{}
	for _, r := range rows {
		out[r.OrderID] = r
	}
	return out
}

// credits returns an order's credits under a model, by kind of channel.
func credits(rec attribution.Record, model string) []attribution.Credit {
	var out []attribution.Credit
	for _, c := range rec.Credits {
		if c.Model == model {
			out = append(out, c)
		}
	}
	return out
}

// TestCreditsRefundsAndReplay: an order with a checkout touchpoint and its
// own landing is credited under every model (last touch wholly to the
// landing, first touch to the checkout, linear half each); a refund lowers
// the credited net by the same weights; an order without touchpoints in
// its window goes to a synthetic direct touch; the pixel visit is kept but
// not credited; a rebuild from position 0 gives the same rows.
func TestCreditsRefundsAndReplay(t *testing.T) {
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	live := core.ReadSide(t, attribution.Projector(core.Codec))
	pos := record(t, core)
	live.WaitFor(t, pos)

	o1 := domain.OrderIDFromExternal(shop, "o1")
	rec := records(t, live)[o1]
	if len(rec.Credits) != 12 {
		t.Fatalf("credits of o1: %+v", rec.Credits)
	}
	hundred := 100 * domain.AmountScale
	want := map[string][]struct {
		channel string
		weight  float64
		revenue domain.Amount
	}{
		"last_touch":  {{"paid_search", 0, 0}, {"email", 1, domain.Amount(hundred)}},
		"first_touch": {{"paid_search", 1, domain.Amount(hundred)}, {"email", 0, 0}},
		"linear":      {{"paid_search", 0.5, domain.Amount(hundred / 2)}, {"email", 0.5, domain.Amount(hundred / 2)}},
	}
	for model, ws := range want {
		cs := credits(rec, model)
		if len(cs) != len(ws) {
			t.Fatalf("%s: %+v", model, cs)
		}
		for i, w := range ws {
			if cs[i].Channel != w.channel || cs[i].Weight != w.weight || cs[i].Revenue != w.revenue || cs[i].Refunded != 0 {
				t.Errorf("%s touch %d: %+v, want %+v", model, i, cs[i], w)
			}
		}
	}
	if c := credits(rec, "linear"); c[0].TouchpointID != domain.CheckoutIDFromExternal(shop, "co1") || c[1].TouchpointID != o1 ||
		c[0].Campaign != "spring" {
		t.Errorf("linear touchpoints: %+v", c)
	}
	o2 := records(t, live)[domain.OrderIDFromExternal(shop, "o2")]
	if cs := credits(o2, "linear"); len(cs) != 1 || cs[0].TouchpointID != "" || cs[0].Channel != "direct" || cs[0].Revenue != 10*domain.AmountScale {
		t.Errorf("o2 (no touchpoint in its window): %+v", cs)
	}
	tps, err := attribution.NewQueries(live.DB()).OrderTouchpoints(context.Background(), shop, []string{o1})
	if err != nil || len(tps[o1]) != 2 || tps[o1][0].UTM.Campaign != "spring" || tps[o1][0].ClickIDKind != "gclid" {
		t.Fatalf("touchpoints of o1: %+v %v", tps, err)
	}
	if n := len(testenv.Dump(t, live.DB(), "touchpoints", "touchpoint_id")); n != 3 {
		t.Errorf("%d touchpoints stored, want the checkout, the landing and the pixel visit", n)
	}

	pos = max(pos, refund(t, core, 30*domain.AmountScale))
	live.WaitFor(t, pos)
	rec = records(t, live)[o1]
	if rec.Refunded != 30*domain.AmountScale {
		t.Errorf("refunded %v", rec.Refunded)
	}
	lin, last := credits(rec, "linear"), credits(rec, "last_touch")
	if lin[0].Refunded != 15*domain.AmountScale || lin[1].Refunded != 15*domain.AmountScale || last[1].Refunded != 30*domain.AmountScale ||
		last[1].Revenue-last[1].Refunded != 70*domain.AmountScale {
		t.Errorf("after the refund: linear %+v, last touch %+v", lin, last)
	}

	got := dumpAll(t, live)
	rebuilt := core.ReadSide(t, attribution.Projector(core.Codec))
	rebuilt.WaitFor(t, pos)
	if again := dumpAll(t, rebuilt); !reflect.DeepEqual(got, again) {
		a, _ := json.MarshalIndent(got, "", " ")
		b, _ := json.MarshalIndent(again, "", " ")
		t.Fatalf("the rebuilt read model differs:\n%s\n%s", a, b)
	}
}
