package attribution_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	attr "github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/attribution"
)

// linkT0 is the pixel landing of every visitor of the link tests; their
// orders come exactly 7 days later (one time-decay half-life).
var linkT0 = time.Date(2026, 10, 18, 12, 0, 0, 0, time.UTC)

// linkShop is a shop of its own (the settings command needs a real one).
type linkShop struct {
	t    *testing.T
	core *testenv.Core
	id   string
	last eventlog.Position
}

func newLinkShop(t *testing.T, core *testenv.Core) *linkShop {
	t.Helper()
	ctx := context.Background()
	acc, err := core.Commands.CreateAccount(ctx, commands.CreateAccount{Name: "Links", Plan: "agency"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Commands.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: "links.example.com", Plan: "agency",
		WebhookSecret: "0123456789abcdef"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	return &linkShop{t: t, core: core, id: res.ID, last: res.Position}
}

func (s *linkShop) did(res commands.Result, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
	s.last = max(s.last, res.Position)
}

// pixel records a storefront event of an anonymous visitor.
func (s *linkShop) pixel(ev domain.StorefrontEvent) {
	s.t.Helper()
	s.did(s.core.Commands.RecordStorefrontEvent(context.Background(), commands.RecordStorefrontEvent{ShopID: s.id, Event: ev}, meta))
}

// checkout records a checkout of a customer without landing data (a
// direct touchpoint) with its token and cart token.
func (s *linkShop) checkout(ext, customer, token, cartToken string, at time.Time) {
	s.t.Helper()
	s.did(s.core.Commands.RecordCheckout(context.Background(), commands.RecordCheckout{
		Delivered:          commands.Delivered{ShopID: s.id, Topic: "checkouts/create", EventID: eventlog.DeterministicID(s.id, "co"+ext)},
		CustomerExternalID: customer, Token: token, CartToken: cartToken,
		Snapshot: domain.CheckoutSnapshot{ExternalID: ext, TotalPrice: 90 * domain.AmountScale, Currency: "EUR", CreatedAt: at, UpdatedAt: at},
	}, meta))
}

// order records a 90.00 order of a customer landing from the newsletter,
// 7 days after linkT0.
func (s *linkShop) order(ext, customer string) {
	s.t.Helper()
	at := linkT0.Add(7 * 24 * time.Hour)
	s.did(s.core.Commands.RecordOrder(context.Background(), commands.RecordOrder{
		Delivered:          commands.Delivered{ShopID: s.id, Topic: "orders/create", EventID: eventlog.DeterministicID(s.id, "o"+ext)},
		CustomerExternalID: customer,
		Snapshot: domain.OrderSnapshot{ExternalID: ext, Currency: "EUR", TotalPrice: 90 * domain.AmountScale, CreatedAt: at, UpdatedAt: at,
			Attribution: domain.NewAttribution("/?utm_source=newsletter&utm_medium=email&utm_campaign=oct", "")},
	}, meta))
}

func (s *linkShop) refund(order, ext string, amount domain.Amount) {
	s.t.Helper()
	s.did(s.core.Commands.RecordRefund(context.Background(), commands.RecordRefund{
		Delivered:       commands.Delivered{ShopID: s.id, Topic: "refunds/create", EventID: eventlog.DeterministicID(s.id, "r"+ext)},
		OrderExternalID: order,
		Refund:          domain.RefundRecorded{ExternalID: ext, Amount: amount, Currency: "EUR", CreatedAt: linkT0.Add(8 * 24 * time.Hour)},
	}, meta))
}

// landing is the pixel's landing of a visitor from a paid search ad.
func landing(anon string) domain.StorefrontEvent {
	return domain.StorefrontEvent{Type: "page_view", URL: "https://links.example.com/?utm_source=google&utm_medium=cpc&utm_campaign=spring",
		AnonymousID: anon, OccurredAt: linkT0}
}

// creditRow is one touch's credit under a model.
type creditRow struct {
	channel string
	revenue domain.Amount
	net     domain.Amount
}

// creditsOf returns an order's credits per model.
func creditsOf(t *testing.T, rs *testenv.ReadSide, shop, ext string) map[string][]creditRow {
	t.Helper()
	id := domain.OrderIDFromExternal(shop, ext)
	rows, _, err := attribution.NewQueries(rs.DB()).ListRecords(context.Background(), attribution.RecordListQuery{Shop: shop, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]creditRow{}
	for _, r := range rows {
		if r.OrderID != id {
			continue
		}
		for _, c := range r.Credits {
			out[c.Model] = append(out[c.Model], creditRow{c.Channel, c.Revenue, c.Revenue - c.Refunded})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no credits for order %s", ext)
	}
	return out
}

// eur is an amount in cents.
func eur(cents int64) domain.Amount { return domain.Amount(cents * domain.AmountScale / 100) }

// linkedWant are the hand-worked credits of a 90.00 order whose customer
// is linked to a visitor who landed from a paid search ad 7 days before
// (the customer's direct checkout 11 minutes after the landing joins its
// session) and who ordered landing from the newsletter: two touches,
// paid_search at Δt = 7 days and email at Δt = 0.
//   - first touch: the ad 100%; last touch and last non-direct: the e-mail;
//   - linear and position based (two touches: 50/50): 45.00 each;
//   - time decay: weights 2^-1 and 2^0, i.e. 1/3 and 2/3: 30.00 and 60.00.
var linkedWant = map[string][]creditRow{
	"first_touch":     {{"paid_search", eur(9000), eur(9000)}, {"email", 0, 0}},
	"last_touch":      {{"paid_search", 0, 0}, {"email", eur(9000), eur(9000)}},
	"last_non_direct": {{"paid_search", 0, 0}, {"email", eur(9000), eur(9000)}},
	"linear":          {{"paid_search", eur(4500), eur(4500)}, {"email", eur(4500), eur(4500)}},
	"position_based":  {{"paid_search", eur(4500), eur(4500)}, {"email", eur(4500), eur(4500)}},
	"time_decay":      {{"paid_search", eur(3000), eur(3000)}, {"email", eur(6000), eur(6000)}},
}

// unlinkedWant: the same customer without the link has its direct
// checkout and the e-mail landing: first touch direct, last non-direct the
// e-mail. (Time decay is left out: the checkout is 11 minutes short of a
// half-life.)
var unlinkedWant = map[string][]creditRow{
	"first_touch":     {{"direct", eur(9000), eur(9000)}, {"email", 0, 0}},
	"last_touch":      {{"direct", 0, 0}, {"email", eur(9000), eur(9000)}},
	"last_non_direct": {{"direct", 0, 0}, {"email", eur(9000), eur(9000)}},
	"linear":          {{"direct", eur(4500), eur(4500)}, {"email", eur(4500), eur(4500)}},
	"position_based":  {{"direct", eur(4500), eur(4500)}, {"email", eur(4500), eur(4500)}},
}

// TestPixelVisitorsLinkedToCustomers: an anonymous visitor lands from a
// paid search ad and checks out; the customer's order 7 days later credits
// the pixel's landing (first touch paid search) when the visitor is linked
// to the customer by the checkout token (pixel checkout_started and the
// checkout webhook), by the cart token (webhook first, pixel after, the
// pixel sending the storefront's cart gid with its key) or by a pixel event
// of the logged-in customer; with a checkout token that matches no
// checkout the order is credited as before (first touch direct). Time
// decay's 30.00/60.00 is wrong by a third if the linked session's landing
// time were not the pixel's. The read model rebuilt from position 0 is
// equal, link tables included.
func TestPixelVisitorsLinkedToCustomers(t *testing.T) {
	clock := linkT0.Add(time.Hour)
	core := testenv.New(t, func() time.Time { return clock })
	live := core.ReadSide(t, attribution.Projector(core.Codec))
	s := newLinkShop(t, core)
	at := linkT0.Add(11 * time.Minute)

	// By the checkout token: pixel first, webhook after.
	s.pixel(landing("visitor-token-1"))
	s.pixel(domain.StorefrontEvent{Type: "checkout_started", URL: "https://links.example.com/checkouts/cn/tok-abc",
		AnonymousID: "visitor-token-1", CheckoutToken: "tok-abc", OccurredAt: linkT0.Add(10 * time.Minute)})
	s.checkout("c1", "101", "tok-abc", "", at)
	s.order("o1", "101")

	// By the cart token: webhook first, pixel after.
	s.checkout("c2", "102", "tok-other-2", "c1-cart-2", at)
	s.pixel(landing("visitor-cart-2"))
	s.pixel(domain.StorefrontEvent{Type: "add_to_cart", URL: "https://links.example.com/cart", AnonymousID: "visitor-cart-2",
		CartToken: "gid://shopify/Cart/c1-cart-2?key=secretkey", OccurredAt: linkT0.Add(5 * time.Minute)})
	s.order("o2", "102")

	// By the logged-in customer on the landing itself.
	ev := landing("visitor-login-3")
	ev.CustomerID = "gid://shopify/Customer/103"
	s.pixel(ev)
	s.checkout("c3", "103", "tok-3", "", at)
	s.order("o3", "103")

	// No link: the pixel's checkout token is another checkout's.
	s.pixel(landing("visitor-none-4"))
	s.pixel(domain.StorefrontEvent{Type: "checkout_started", URL: "https://links.example.com/checkouts/cn/x",
		AnonymousID: "visitor-none-4", CheckoutToken: "tok-unknown", OccurredAt: linkT0.Add(10 * time.Minute)})
	s.checkout("c4", "104", "tok-4", "c1-cart-4", at)
	s.order("o4", "104")

	live.WaitFor(t, s.last)
	for ext, want := range map[string]map[string][]creditRow{"o1": linkedWant, "o2": linkedWant, "o3": linkedWant, "o4": unlinkedWant} {
		got := creditsOf(t, live, s.id, ext)
		for m, w := range want {
			if !reflect.DeepEqual(got[m], w) {
				t.Errorf("order %s, %s: %v, want %v", ext, m, got[m], w)
			}
		}
		if len(got) != 6 {
			t.Errorf("order %s: %d models", ext, len(got))
		}
	}
	q := attribution.NewQueries(live.DB())
	for cust, want := range map[string][]string{"101": {"visitor-token-1"}, "102": {"visitor-cart-2"}, "103": {"visitor-login-3"}, "104": nil} {
		got, err := q.LinkedVisitors(context.Background(), s.id, domain.CustomerIDFromExternal(s.id, cust))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("visitors of customer %s: %v %v, want %v", cust, got, err, want)
		}
	}

	got := dumpAll(t, live)
	rebuilt := core.ReadSide(t, attribution.Projector(core.Codec))
	rebuilt.WaitFor(t, s.last)
	if again := dumpAll(t, rebuilt); !reflect.DeepEqual(got, again) {
		a, _ := json.MarshalIndent(got, "", " ")
		b, _ := json.MarshalIndent(again, "", " ")
		t.Fatalf("the rebuilt read model differs:\n%s\n%s", a, b)
	}
}

// TestLateLinkAndRedact: a link folded after the order leaves the order's
// credits as they were (first touch the e-mail landing, 90.00) until its
// next refund recomputes them with the visitor's landing (first touch
// paid search; a 9.00 refund split 1/3 and 2/3 under time decay: nets
// 27.00 and 54.00). customers/redact deletes the customer's links and
// keys; the next refund credits the order without the visitor again.
func TestLateLinkAndRedact(t *testing.T) {
	clock := linkT0.Add(time.Hour)
	core := testenv.New(t, func() time.Time { return clock })
	live := core.ReadSide(t, attribution.Projector(core.Codec))
	s := newLinkShop(t, core)

	s.pixel(landing("visitor-late-5"))
	s.order("o5", "105")
	live.WaitFor(t, s.last)
	before := creditsOf(t, live, s.id, "o5")
	if want := []creditRow{{"email", eur(9000), eur(9000)}}; !reflect.DeepEqual(before["first_touch"], want) {
		t.Fatalf("before the link: %v", before)
	}

	s.pixel(domain.StorefrontEvent{Type: "page_view", URL: "https://links.example.com/account", AnonymousID: "visitor-late-5",
		CustomerID: "105", OccurredAt: linkT0.Add(20 * time.Minute)})
	live.WaitFor(t, s.last)
	if got := creditsOf(t, live, s.id, "o5"); !reflect.DeepEqual(got, before) {
		t.Errorf("the late link re-credited the order: %v", got)
	}

	s.refund("o5", "r5", eur(900))
	live.WaitFor(t, s.last)
	got := creditsOf(t, live, s.id, "o5")
	if want := []creditRow{{"paid_search", eur(9000), eur(8100)}, {"email", 0, 0}}; !reflect.DeepEqual(got["first_touch"], want) {
		t.Errorf("first touch after the refund: %v, want %v", got["first_touch"], want)
	}
	if want := []creditRow{{"paid_search", eur(3000), eur(2700)}, {"email", eur(6000), eur(5400)}}; !reflect.DeepEqual(got["time_decay"], want) {
		t.Errorf("time decay after the refund: %v, want %v", got["time_decay"], want)
	}

	s.did(core.Commands.RecordPrivacyRequest(context.Background(), commands.RecordPrivacyRequest{
		Delivered:          commands.Delivered{ShopID: s.id, Topic: commands.PrivacyCustomerRedact, EventID: eventlog.DeterministicID(s.id, "redact5")},
		CustomerExternalID: "105"}, meta))
	s.refund("o5", "r6", eur(900))
	live.WaitFor(t, s.last)
	got = creditsOf(t, live, s.id, "o5")
	if want := []creditRow{{"email", eur(9000), eur(7200)}}; !reflect.DeepEqual(got["first_touch"], want) {
		t.Errorf("first touch after customers/redact: %v, want %v", got["first_touch"], want)
	}
	if links := testenv.Dump(t, live.DB(), "identity_links", "anonymous_id"); len(links) != 0 {
		t.Errorf("links left after customers/redact: %v", links)
	}
}

// TestShopLookback: a shop's lookback window of 3 days (recorded with the
// command) leaves the 7-day-old landing and checkout of o6 outside: the
// order is credited wholly to its own landing under every model; o7 of
// another shop with the default 30 days keeps both touches; a window
// outside 1 hour..365 days is a validation error naming lookback; setting
// the window in force appends nothing.
func TestShopLookback(t *testing.T) {
	if attr.DefaultLookback != domain.DefaultLookback || attr.MaxLookback != domain.MaxLookback {
		t.Fatal("the domain's and the attribution package's lookback bounds differ")
	}
	clock := linkT0.Add(time.Hour)
	core := testenv.New(t, func() time.Time { return clock })
	live := core.ReadSide(t, attribution.Projector(core.Codec))
	s := newLinkShop(t, core)
	ctx := context.Background()
	s.did(core.Commands.SetAttributionLookback(ctx, commands.SetAttributionLookback{ShopID: s.id, Lookback: 3 * 24 * time.Hour}, meta))
	for _, bad := range []time.Duration{0, 59 * time.Minute, 366 * 24 * time.Hour, time.Hour + time.Millisecond} {
		_, err := core.Commands.SetAttributionLookback(ctx, commands.SetAttributionLookback{ShopID: s.id, Lookback: bad}, meta)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != "lookback" {
			t.Errorf("lookback %v: %v, want a validation error naming lookback", bad, err)
		}
	}
	if res, err := core.Commands.SetAttributionLookback(ctx, commands.SetAttributionLookback{ShopID: s.id, Lookback: 72 * time.Hour}, meta); err != nil || res.Position != 0 {
		t.Errorf("the same window again: %+v %v, want nothing appended", res, err)
	}
	if _, err := core.Commands.SetAttributionLookback(ctx, commands.SetAttributionLookback{ShopID: "shop_missing", Lookback: time.Hour}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("unknown shop: %v", err)
	}
	ev := landing("visitor-window-6")
	ev.CustomerID = "106"
	s.pixel(ev)
	s.checkout("c6", "106", "tok-6", "", linkT0.Add(11*time.Minute))
	s.order("o6", "106")
	live.WaitFor(t, s.last)
	only := []creditRow{{"email", eur(9000), eur(9000)}}
	got := creditsOf(t, live, s.id, "o6")
	for _, m := range []string{"first_touch", "last_touch", "last_non_direct", "linear", "time_decay", "position_based"} {
		if !reflect.DeepEqual(got[m], only) {
			t.Errorf("%s with a 3-day window: %v, want %v", m, got[m], only)
		}
	}
	set, err := attribution.NewQueries(live.DB()).Settings(ctx, s.id)
	if err != nil || !set.Custom || set.Lookback != 72*time.Hour || !set.ChangedAt.Equal(clock) {
		t.Errorf("settings: %+v %v", set, err)
	}
	if def, err := attribution.NewQueries(live.DB()).Settings(ctx, "shop_other"); err != nil || def.Custom || def.Lookback != domain.DefaultLookback {
		t.Errorf("default settings: %+v %v", def, err)
	}

	// Back to 30 days: the next refund recomputes o6 with both touches.
	s.did(core.Commands.SetAttributionLookback(ctx, commands.SetAttributionLookback{ShopID: s.id, Lookback: 30 * 24 * time.Hour}, meta))
	s.refund("o6", "r6", eur(900))
	live.WaitFor(t, s.last)
	if got := creditsOf(t, live, s.id, "o6")["first_touch"]; !reflect.DeepEqual(got, []creditRow{{"paid_search", eur(9000), eur(8100)}, {"email", 0, 0}}) {
		t.Errorf("o6 first touch with 30 days again: %v", got)
	}
}
