package attribution_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/domain"
)

const day = 24 * time.Hour

// orderAt is the time of every hand-worked order.
var orderAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// touch is a touchpoint before orderAt with a landing and referrer.
func touch(id string, before time.Duration, landing, referrer string) attribution.Touchpoint {
	return attribution.Touchpoint{ID: id, ShopID: "shp_1", CustomerID: "cus_1", OccurredAt: orderAt.Add(-before),
		Kind: attribution.KindPageView, Landing: attribution.ParseLanding(landing, referrer)}
}

// Touchpoints of the hand-worked paths.
var (
	paidSearch = func(id string, before time.Duration) attribution.Touchpoint {
		return touch(id, before, "/?utm_source=google&utm_medium=cpc&utm_campaign=brand", "https://www.google.com/")
	}
	paidSocial = func(id string, before time.Duration) attribution.Touchpoint {
		return touch(id, before, "/?utm_source=facebook&utm_medium=paid&utm_campaign=spring", "")
	}
	organic = func(id string, before time.Duration) attribution.Touchpoint {
		return touch(id, before, "/products/shoe", "https://www.google.de/")
	}
	email = func(id string, before time.Duration) attribution.Touchpoint {
		return touch(id, before, "/?utm_source=klaviyo&utm_medium=email&utm_campaign=welcome", "")
	}
	referral = func(id string, before time.Duration) attribution.Touchpoint {
		return touch(id, before, "/", "https://someblog.example/post")
	}
	direct = func(id string, before time.Duration) attribution.Touchpoint {
		return touch(id, before, "/", "")
	}
)

// credits are a model's expected weights and revenue (ten-thousandths)
// per touch, oldest first, worked out by hand.
type credits struct {
	weights []float64
	revenue []domain.Amount
}

// expect checks every model of r against want, and the touches' ids.
func expect(t *testing.T, r attribution.Result, ids []string, want map[attribution.Model]credits) {
	t.Helper()
	if len(r.Touches) != len(ids) {
		t.Fatalf("%d touches, want %d: %+v", len(r.Touches), len(ids), r.Touches)
	}
	for i, id := range ids {
		if r.Touches[i].Touchpoint.ID != id {
			t.Fatalf("touch %d is %q, want %q", i, r.Touches[i].Touchpoint.ID, id)
		}
	}
	for m, w := range want {
		for i := range r.Touches {
			c := r.Touches[i].Credit(m)
			if math.Abs(c.Weight-w.weights[i]) > 1e-12 {
				t.Errorf("%s: touch %s weight %.15f, want %.15f", m, ids[i], c.Weight, w.weights[i])
			}
			if c.Revenue != w.revenue[i] {
				t.Errorf("%s: touch %s revenue %s, want %s", m, ids[i], c.Revenue, w.revenue[i])
			}
		}
	}
}

func TestAttributeOneTouch(t *testing.T) {
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 1_000_000} // 100.00
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{organic("a", 3*day)})
	all := credits{[]float64{1}, []domain.Amount{1_000_000}}
	expect(t, r, []string{"a"}, map[attribution.Model]credits{
		attribution.FirstTouch: all, attribution.LastTouch: all, attribution.LastNonDirect: all,
		attribution.Linear: all, attribution.TimeDecay: all, attribution.PositionBased: all,
	})
	if got := r.Touches[0].Class; got != (attribution.Class{Channel: attribution.OrganicSearch, Source: "google"}) {
		t.Fatalf("class %+v", got)
	}
}

func TestAttributeTwoTouches(t *testing.T) {
	// Paid search 8 days before, e-mail 1 day before: 7 days (one
	// half-life) apart, so time decay weighs them 1/2 and 1: 1/3 and 2/3.
	// 100.00 × 1/3 = 33.3333⅓ and × 2/3 = 66.6666⅔: the unit left goes to
	// the larger remainder (⅔).
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 1_000_000}
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{email("b", 1*day), paidSearch("a", 8*day)})
	expect(t, r, []string{"a", "b"}, map[attribution.Model]credits{
		attribution.FirstTouch:    {[]float64{1, 0}, []domain.Amount{1_000_000, 0}},
		attribution.LastTouch:     {[]float64{0, 1}, []domain.Amount{0, 1_000_000}},
		attribution.LastNonDirect: {[]float64{0, 1}, []domain.Amount{0, 1_000_000}},
		attribution.Linear:        {[]float64{0.5, 0.5}, []domain.Amount{500_000, 500_000}},
		attribution.TimeDecay:     {[]float64{1.0 / 3, 2.0 / 3}, []domain.Amount{333_333, 666_667}},
		attribution.PositionBased: {[]float64{0.5, 0.5}, []domain.Amount{500_000, 500_000}},
	})
}

func TestAttributeSeveralTouches(t *testing.T) {
	// Four touches 21, 14, 7 and 0 days before an order of 150.00.
	// Time decay: 1/8, 1/4, 1/2, 1 of sum 15/8 → 1/15, 2/15, 4/15, 8/15
	// = 10.00, 20.00, 40.00, 80.00. Position based: 40%, 10%, 10%, 40%.
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 1_500_000}
	tps := []attribution.Touchpoint{referral("d", 0), paidSocial("a", 21*day), email("c", 7*day), organic("b", 14*day)}
	r := attribution.Attribute(attribution.Config{}, order, tps)
	expect(t, r, []string{"a", "b", "c", "d"}, map[attribution.Model]credits{
		attribution.FirstTouch:    {[]float64{1, 0, 0, 0}, []domain.Amount{1_500_000, 0, 0, 0}},
		attribution.LastTouch:     {[]float64{0, 0, 0, 1}, []domain.Amount{0, 0, 0, 1_500_000}},
		attribution.LastNonDirect: {[]float64{0, 0, 0, 1}, []domain.Amount{0, 0, 0, 1_500_000}},
		attribution.Linear:        {[]float64{0.25, 0.25, 0.25, 0.25}, []domain.Amount{375_000, 375_000, 375_000, 375_000}},
		attribution.TimeDecay:     {[]float64{1.0 / 15, 2.0 / 15, 4.0 / 15, 8.0 / 15}, []domain.Amount{100_000, 200_000, 400_000, 800_000}},
		attribution.PositionBased: {[]float64{0.4, 0.1, 0.1, 0.4}, []domain.Amount{600_000, 150_000, 150_000, 600_000}},
	})
	want := []attribution.Channel{attribution.PaidSocial, attribution.OrganicSearch, attribution.Email, attribution.Referral}
	for i, c := range want {
		if r.Touches[i].Class.Channel != c {
			t.Errorf("touch %d channel %s, want %s", i, r.Touches[i].Class.Channel, c)
		}
	}
}

func TestAttributeDirectLast(t *testing.T) {
	// Paid search 2 days before, then a direct visit 1 hour before the
	// order of 59.90: last touch credits direct, last non-direct the paid
	// search. Time decay: ages 48 h and 1 h, 47 h apart: 2^(-47/168) and 1.
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 599_000}
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{direct("b", time.Hour), paidSearch("a", 2*day)})
	wa := math.Exp2(-47.0/168) / (math.Exp2(-47.0/168) + 1) // 0.451672…
	expect(t, r, []string{"a", "b"}, map[attribution.Model]credits{
		attribution.FirstTouch:    {[]float64{1, 0}, []domain.Amount{599_000, 0}},
		attribution.LastTouch:     {[]float64{0, 1}, []domain.Amount{0, 599_000}},
		attribution.LastNonDirect: {[]float64{1, 0}, []domain.Amount{599_000, 0}},
		attribution.Linear:        {[]float64{0.5, 0.5}, []domain.Amount{299_500, 299_500}},
		// 599000 × 0.451672… = 270551.71 and 328448.29: floors 270551
		// and 328448 leave one unit, for the larger remainder (.71).
		attribution.TimeDecay:     {[]float64{wa, 1 - wa}, []domain.Amount{270_552, 328_448}},
		attribution.PositionBased: {[]float64{0.5, 0.5}, []domain.Amount{299_500, 299_500}},
	})
	if r.Touches[1].Class.Channel != attribution.Direct {
		t.Fatalf("last touch is %s", r.Touches[1].Class.Channel)
	}
}

func TestAttributeAllDirect(t *testing.T) {
	// Nothing but direct: last non-direct falls back to the last touch.
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 100}
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{direct("a", 5*day), direct("b", day)})
	expect(t, r, []string{"a", "b"}, map[attribution.Model]credits{
		attribution.LastNonDirect: {[]float64{0, 1}, []domain.Amount{0, 100}},
		attribution.LastTouch:     {[]float64{0, 1}, []domain.Amount{0, 100}},
	})
}

func TestAttributeWindow(t *testing.T) {
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 1_000_000}
	tps := []attribution.Touchpoint{
		paidSearch("too-old", 30*day+time.Second), // outside the 30-day window
		email("edge", 30*day),                     // exactly 30 days: inside
		organic("in", 2*day),
		referral("after", -time.Minute), // after the order
	}
	r := attribution.Attribute(attribution.Config{}, order, tps)
	expect(t, r, []string{"edge", "in"}, map[attribution.Model]credits{
		attribution.FirstTouch:    {[]float64{1, 0}, []domain.Amount{1_000_000, 0}},
		attribution.LastTouch:     {[]float64{0, 1}, []domain.Amount{0, 1_000_000}},
		attribution.Linear:        {[]float64{0.5, 0.5}, []domain.Amount{500_000, 500_000}},
		attribution.PositionBased: {[]float64{0.5, 0.5}, []domain.Amount{500_000, 500_000}},
	})

	// A 7-day lookback keeps only the organic visit.
	r = attribution.Attribute(attribution.Config{Lookback: 7 * day}, order, tps)
	expect(t, r, []string{"in"}, map[attribution.Model]credits{
		attribution.FirstTouch: {[]float64{1}, []domain.Amount{1_000_000}},
	})
}

func TestAttributeNoTouchpointIsDirect(t *testing.T) {
	// Only touchpoints outside the window: the order goes to a synthetic
	// direct touch at the order's time under every model.
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 250_000, Refunded: 50_000}
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{paidSearch("old", 45*day)})
	if len(r.Touches) != 1 || !r.Touches[0].Synthetic || r.Touches[0].Class != (attribution.Class{Channel: attribution.Direct, Source: "direct"}) ||
		!r.Touches[0].Touchpoint.OccurredAt.Equal(orderAt) {
		t.Fatalf("touches %+v", r.Touches)
	}
	for _, m := range attribution.Models() {
		if c := r.Touches[0].Credit(m); c != (attribution.Credit{Weight: 1, Revenue: 250_000, Refunded: 50_000}) || c.Net() != 200_000 {
			t.Errorf("%s: %+v", m, c)
		}
	}
}

func TestAttributeRefunded(t *testing.T) {
	// 100.00 with 30.00 refunded, the two touches of TestAttributeTwoTouches.
	// Time decay 1/3, 2/3: revenue 33.3333 + 66.6667, refunds 10.00 + 20.00,
	// net 23.3333 + 46.6667 = 70.00.
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 1_000_000, Refunded: 300_000}
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{paidSearch("a", 8*day), email("b", day)})
	type row struct{ revenue, refunded, net domain.Amount }
	want := map[attribution.Model][2]row{
		attribution.TimeDecay:     {{333_333, 100_000, 233_333}, {666_667, 200_000, 466_667}},
		attribution.Linear:        {{500_000, 150_000, 350_000}, {500_000, 150_000, 350_000}},
		attribution.LastNonDirect: {{0, 0, 0}, {1_000_000, 300_000, 700_000}},
		attribution.FirstTouch:    {{1_000_000, 300_000, 700_000}, {0, 0, 0}},
	}
	for m, rows := range want {
		for i, w := range rows {
			c := r.Touches[i].Credit(m)
			if (row{c.Revenue, c.Refunded, c.Net()}) != w {
				t.Errorf("%s touch %d: %+v net %s, want %+v", m, i, c, c.Net(), w)
			}
		}
	}

	// Fully refunded: every net credit is zero. Refunds above the revenue
	// are capped at it.
	for _, refunded := range []domain.Amount{1_000_000, 1_200_000} {
		order.Refunded = refunded
		r = attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{paidSearch("a", 8*day), email("b", day), organic("c", 3*day)})
		for _, tc := range r.Touches {
			for _, m := range attribution.Models() {
				if c := tc.Credit(m); c.Net() != 0 {
					t.Errorf("refunded %s: %s touch %s net %s", refunded, m, tc.Touchpoint.ID, c.Net())
				}
			}
		}
	}
}

func TestAttributeTimeDecayExact(t *testing.T) {
	// The example: 14, 7 and 0 days before the order weigh 1/4,
	// 1/2 and 1, normalised 1/7, 2/7, 4/7; of 70.00: 10.00, 20.00, 40.00.
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 700_000}
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{organic("a", 14*day), email("b", 7*day), paidSearch("c", 0)})
	expect(t, r, []string{"a", "b", "c"}, map[attribution.Model]credits{
		attribution.TimeDecay: {[]float64{1.0 / 7, 2.0 / 7, 4.0 / 7}, []domain.Amount{100_000, 200_000, 400_000}},
	})
	// A 14-day half-life halves the gaps: 1/2, 1/√2, 1.
	r = attribution.Attribute(attribution.Config{HalfLife: 14 * day}, order, []attribution.Touchpoint{organic("a", 14*day), email("b", 7*day), paidSearch("c", 0)})
	sum := 0.5 + math.Sqrt2/2 + 1
	expect(t, r, []string{"a", "b", "c"}, map[attribution.Model]credits{
		// 700000 × (0.5, 0.7071…, 1)/2.2071… = 158578.6…, 224264.0…, 317157.2…
		attribution.TimeDecay: {[]float64{0.5 / sum, math.Sqrt2 / 2 / sum, 1 / sum}, []domain.Amount{158_579, 224_264, 317_157}},
	})
}

func TestAttributePositionBased(t *testing.T) {
	// Three touches of 100.00: 40/20/40.
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 1_000_000}
	r := attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{paidSocial("a", 9*day), organic("b", 5*day), email("c", day)})
	expect(t, r, []string{"a", "b", "c"}, map[attribution.Model]credits{
		attribution.PositionBased: {[]float64{0.4, 0.2, 0.4}, []domain.Amount{400_000, 200_000, 400_000}},
	})
	// Five touches: 40%, 20%/3 each in the middle, 40%. 100.00 × 1/15 =
	// 6.6666⅔ three times: floors 66666 ×3 leave 2 units for the equal
	// remainders, given to the earlier touches.
	r = attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{
		paidSocial("a", 9*day), organic("b", 7*day), referral("c", 5*day), direct("d", 3*day), email("e", day)})
	expect(t, r, []string{"a", "b", "c", "d", "e"}, map[attribution.Model]credits{
		attribution.PositionBased: {[]float64{0.4, 1.0 / 15, 1.0 / 15, 1.0 / 15, 0.4}, []domain.Amount{400_000, 66_667, 66_667, 66_666, 400_000}},
		attribution.Linear:        {[]float64{0.2, 0.2, 0.2, 0.2, 0.2}, []domain.Amount{200_000, 200_000, 200_000, 200_000, 200_000}},
		attribution.LastNonDirect: {[]float64{0, 0, 0, 0, 1}, []domain.Amount{0, 0, 0, 0, 1_000_000}},
	})
	// Seven units over 40/20/40: quotas 2.8, 1.4, 2.8; floors 2, 1, 2
	// leave 2 for the remainders .8 and .8.
	order.Revenue = 7
	r = attribution.Attribute(attribution.Config{}, order, []attribution.Touchpoint{paidSocial("a", 9*day), organic("b", 5*day), email("c", day)})
	expect(t, r, []string{"a", "b", "c"}, map[attribution.Model]credits{
		attribution.PositionBased: {[]float64{0.4, 0.2, 0.4}, []domain.Amount{3, 1, 3}},
		// 7/3 = 2⅓ each: the one unit left goes to the first.
		attribution.Linear: {[]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, []domain.Amount{3, 2, 2}},
	})
}

func TestConfig(t *testing.T) {
	if err := (attribution.Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	d := attribution.Config{}.WithDefaults()
	if d.Lookback != 30*day || d.HalfLife != 7*day || d.SessionTimeout != 30*time.Minute {
		t.Fatalf("defaults %+v", d)
	}
	if err := (attribution.Config{Lookback: 90 * day, HalfLife: 3 * day, SessionTimeout: time.Hour}).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	err := attribution.Config{Lookback: 400 * day, HalfLife: time.Minute, SessionTimeout: 48 * time.Hour}.Validate()
	fields := map[string]bool{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var de *domain.Error
		if !errors.As(e, &de) || de.Code != domain.CodeInvalid {
			t.Fatalf("not a validation error: %v", e)
		}
		fields[de.Field] = true
	}
	if !fields["lookback"] || !fields["half_life"] || !fields["session_timeout"] {
		t.Fatalf("fields %v of %v", fields, err)
	}
}

func TestModelNames(t *testing.T) {
	for _, m := range attribution.Models() {
		got, ok := attribution.ParseModel(m.String())
		if !ok || got != m {
			t.Fatalf("ParseModel(%q) = %v, %v", m.String(), got, ok)
		}
	}
	if _, ok := attribution.ParseModel("data_driven"); ok {
		t.Fatal("unknown model parsed")
	}
	if len(attribution.Models()) != attribution.NumModels {
		t.Fatal("Models and NumModels disagree")
	}
}
