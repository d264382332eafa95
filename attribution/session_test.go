package attribution_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/domain"
)

var visitStart = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// visit is a pixel touchpoint at visitStart+at.
func visit(id string, at time.Duration, landing, referrer string) attribution.Touchpoint {
	return attribution.Touchpoint{ID: id, AnonymousID: "anon-1", OccurredAt: visitStart.Add(at), Kind: attribution.KindPageView,
		Landing: attribution.ParseLanding(landing, referrer)}
}

// sessionIDs returns each session's landing id and touchpoint count.
func sessionIDs(ss []attribution.Session) [][2]any {
	out := make([][2]any, len(ss))
	for i, s := range ss {
		out[i] = [2]any{s.Touchpoint.ID, s.Touchpoints}
	}
	return out
}

func TestSessionize(t *testing.T) {
	const ads = "/?utm_source=google&utm_medium=cpc&utm_campaign=brand"
	cases := []struct {
		name    string
		tps     []attribution.Touchpoint
		timeout time.Duration
		want    [][2]any // landing id, touchpoints
	}{
		{"one visit, internal navigation", []attribution.Touchpoint{
			visit("a", 0, ads, "https://www.google.com/"), visit("b", 10*time.Minute, "/products/x", ""), visit("c", 25*time.Minute, "/cart", ""),
		}, 0, [][2]any{{"a", 3}}},
		{"29m59s of inactivity keeps the session", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", 29*time.Minute+59*time.Second, "/", ""),
		}, 0, [][2]any{{"a", 2}}},
		{"30 minutes of inactivity ends it", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", 30*time.Minute, "/", ""),
		}, 0, [][2]any{{"a", 1}, {"b", 1}}},
		{"activity extends the session past 30 minutes from its start", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", 20*time.Minute, "/", ""), visit("c", 40*time.Minute, "/", ""), visit("d", 69*time.Minute, "/", ""),
		}, 0, [][2]any{{"a", 4}}},
		{"a new campaign starts a session", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", 5*time.Minute, "/?utm_source=klaviyo&utm_medium=email&utm_campaign=welcome", ""), visit("c", 6*time.Minute, "/p", ""),
		}, 0, [][2]any{{"a", 1}, {"b", 2}}},
		{"same channel, other campaign", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", time.Minute, "/?utm_source=google&utm_medium=cpc&utm_campaign=generic", ""),
		}, 0, [][2]any{{"a", 1}, {"b", 1}}},
		{"reloading the same campaign does not", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", time.Minute, ads, "https://www.google.com/"),
		}, 0, [][2]any{{"a", 2}}},
		{"a direct return within the timeout does not", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", 10*time.Minute, "/", ""),
		}, 0, [][2]any{{"a", 2}}},
		{"a payment round trip does not", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", 8*time.Minute, "/thank_you?utm_source=paypal.com&utm_medium=referral", "https://www.paypal.com/"),
		}, 0, [][2]any{{"a", 2}}},
		{"a direct start then a campaign", []attribution.Touchpoint{
			visit("a", 0, "/", ""), visit("b", 2*time.Minute, ads, ""),
		}, 0, [][2]any{{"a", 1}, {"b", 1}}},
		{"custom timeout", []attribution.Touchpoint{
			visit("a", 0, ads, ""), visit("b", 10*time.Minute, "/", ""), visit("c", 25*time.Minute, "/", ""),
		}, 10 * time.Minute, [][2]any{{"a", 1}, {"b", 1}, {"c", 1}}},
		{"no touchpoints", nil, 0, [][2]any{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := attribution.Sessionize(c.tps, c.timeout)
			if ids := sessionIDs(got); !reflect.DeepEqual(ids, c.want) {
				t.Fatalf("sessions %v, want %v", ids, c.want)
			}
			// Any input order gives the same sessions.
			rev := slices.Clone(c.tps)
			slices.Reverse(rev)
			if again := attribution.Sessionize(rev, c.timeout); !reflect.DeepEqual(again, got) {
				t.Fatalf("reversed input: %v, want %v", sessionIDs(again), c.want)
			}
		})
	}
}

func TestSessionFields(t *testing.T) {
	ss := attribution.Sessionize([]attribution.Touchpoint{
		visit("c", 12*time.Minute, "/cart", ""), visit("a", 0, "/?utm_source=facebook&utm_medium=paid", "https://l.facebook.com/"), visit("b", 3*time.Minute, "/p", ""),
	}, 0)
	if len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	s := ss[0]
	if s.Touchpoint.ID != "a" || !s.Start.Equal(visitStart) || !s.End.Equal(visitStart.Add(12*time.Minute)) || s.Touchpoints != 3 ||
		s.Class != (attribution.Class{Channel: attribution.PaidSocial, Source: "facebook"}) {
		t.Fatalf("session %+v", s)
	}
	if l := attribution.Landings(ss); len(l) != 1 || l[0].ID != "a" {
		t.Fatalf("landings %+v", l)
	}
}

func TestFromStorefrontEvent(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ev, err := domain.RecordStorefrontEvent("shp_1", domain.StorefrontEvent{Type: "page_view", AnonymousID: "anon-12345",
		URL:      "https://www.shop.example/products/shoe?utm_source=Klaviyo&utm_medium=email&utm_campaign=restock&email=a%40b.c",
		Referrer: "https://mail.google.com/mail/u/0/", OccurredAt: now.Add(-time.Minute)}, now)
	if err != nil {
		t.Fatal(err)
	}
	tp := attribution.FromStorefrontEvent("evt_1", ev)
	want := attribution.Touchpoint{ID: "evt_1", ShopID: "shp_1", AnonymousID: "anon-12345", OccurredAt: now.Add(-time.Minute), Kind: attribution.KindPageView,
		Landing: attribution.Landing{Path: "/products/shoe", UTM: attribution.UTM{Source: "Klaviyo", Medium: "email", Campaign: "restock"}, ReferrerHost: "mail.google.com"}}
	if !reflect.DeepEqual(tp, want) {
		t.Fatalf("touchpoint\n%+v, want\n%+v", tp, want)
	}

	// Internal navigation: the referrer is the shop itself (with or
	// without www.) and is dropped; add_to_cart is a cart touchpoint.
	ev, err = domain.RecordStorefrontEvent("shp_1", domain.StorefrontEvent{Type: "add_to_cart", AnonymousID: "anon-12345",
		URL: "https://shop.example/cart", Referrer: "https://www.shop.example/products/shoe"}, now)
	if err != nil {
		t.Fatal(err)
	}
	tp = attribution.FromStorefrontEvent("evt_2", ev)
	if tp.Kind != attribution.KindCart || tp.ReferrerHost != "" || attribution.Classify(tp.Landing).Channel != attribution.Direct {
		t.Fatalf("internal touchpoint %+v", tp)
	}
}

func TestFromCheckoutAndOrder(t *testing.T) {
	created := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	a := domain.NewAttribution("/collections/sale?utm_source=google&utm_medium=cpc&gclid=xyz&token=secret", "https://www.google.com/search?q=sale")
	co := &domain.CheckoutRecorded{CheckoutID: "chk_1", ShopID: "shp_1", CustomerID: "cus_1",
		CheckoutSnapshot: domain.CheckoutSnapshot{CreatedAt: created, UpdatedAt: created.Add(time.Hour), Attribution: a}}
	tp, ok := attribution.FromCheckout(co)
	want := attribution.Touchpoint{ID: "chk_1", ShopID: "shp_1", CustomerID: "cus_1", OccurredAt: created, Kind: attribution.KindCheckout,
		Landing: attribution.Landing{Path: "/collections/sale", UTM: attribution.UTM{Source: "google", Medium: "cpc"}, ClickIDs: attribution.ClickIDs{GCLID: "xyz"}, ReferrerHost: "google.com"}}
	if !ok || !reflect.DeepEqual(tp, want) {
		t.Fatalf("checkout touchpoint %v\n%+v, want\n%+v", ok, tp, want)
	}
	co.Stale = true
	if _, ok := attribution.FromCheckout(co); ok {
		t.Fatal("stale checkout gave a touchpoint")
	}

	// An order's landing site; the UTM and click-id maps fill in what a
	// landing site recorded without its query lacks.
	ord := &domain.OrderRecorded{OrderID: "ord_1", ShopID: "shp_1", CustomerID: "cus_1", OrderSnapshot: domain.OrderSnapshot{
		TotalPrice: 1_299_000, CreatedAt: created,
		Attribution: domain.Attribution{LandingSite: "/products/x", ReferringSite: "https://l.instagram.com/",
			UTM: map[string]string{"source": "instagram", "medium": "paid"}, ClickIDs: map[string]string{"fbclid": "PAZ"}}}}
	tp, ok = attribution.FromOrder(ord)
	want = attribution.Touchpoint{ID: "ord_1", ShopID: "shp_1", CustomerID: "cus_1", OccurredAt: created, Kind: attribution.KindOrderLanding,
		Landing: attribution.Landing{Path: "/products/x", UTM: attribution.UTM{Source: "instagram", Medium: "paid"}, ClickIDs: attribution.ClickIDs{FBCLID: "PAZ"}, ReferrerHost: "l.instagram.com"}}
	if !ok || !reflect.DeepEqual(tp, want) {
		t.Fatalf("order touchpoint %v\n%+v, want\n%+v", ok, tp, want)
	}
	if o := attribution.NewOrder(ord); o != (attribution.Order{ID: "ord_1", At: created, Revenue: 1_299_000}) {
		t.Fatalf("order %+v", o)
	}
	// A point-of-sale order has no landing: no touchpoint.
	if _, ok := attribution.FromOrder(&domain.OrderRecorded{OrderID: "ord_2", OrderSnapshot: domain.OrderSnapshot{CreatedAt: created}}); ok {
		t.Fatal("order without landing gave a touchpoint")
	}
}
