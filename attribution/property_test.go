package attribution_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/domain"
)

// landings are real-world landings the generator draws from.
var landings = [][2]string{
	{"/?utm_source=google&utm_medium=cpc&utm_campaign=brand", "https://www.google.com/"},
	{"/?gclid=abc", ""},
	{"/?fbclid=IwAR", "https://l.facebook.com/"},
	{"/?utm_source=klaviyo&utm_medium=email&utm_campaign=welcome", ""},
	{"/p", "https://www.bing.com/"},
	{"/", "https://someblog.example/"},
	{"/", ""},
	{"/?utm_source=whatsapp", ""},
	{"/?utm_campaign=flyer", ""},
}

// randomCase draws an order and up to 40 touchpoints around its window
// (some outside it, some after the order, some at the same instant).
func randomCase(rng *rand.Rand) (attribution.Config, attribution.Order, []attribution.Touchpoint) {
	cfg := attribution.Config{}
	if rng.IntN(3) == 0 {
		cfg.Lookback = time.Duration(1+rng.IntN(90)) * day
		cfg.HalfLife = time.Duration(1+rng.IntN(400)) * time.Hour
	}
	order := attribution.Order{ID: "ord", At: orderAt}
	switch rng.IntN(4) {
	case 0:
		order.Revenue = domain.Amount(rng.IntN(10))
	case 1:
		order.Revenue = domain.Amount(rng.Int64N(1 << 50))
	default:
		order.Revenue = domain.Amount(rng.IntN(100_000_000))
	}
	if rng.IntN(2) == 0 {
		order.Refunded = domain.Amount(rng.Int64N(int64(order.Revenue) + 1))
	}
	n := rng.IntN(41)
	tps := make([]attribution.Touchpoint, n)
	for i := range tps {
		l := landings[rng.IntN(len(landings))]
		before := time.Duration(rng.Int64N(int64(40*day))) - 2*day
		if rng.IntN(5) == 0 {
			before = time.Duration(rng.IntN(3)) * day // ties
		}
		tps[i] = touch(strconv.Itoa(rng.IntN(n+1)), before, l[0], l[1])
	}
	return cfg, order, tps
}

// TestAttributeProperties checks, on many generated orders, that every
// model's weights sum to 1 and its credited revenue and refunds to the
// order's exactly, that each credit is its exact share within one unit,
// and that the result does not depend on the order of the touchpoints.
func TestAttributeProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 2026))
	for iter := range 3000 {
		cfg, order, tps := randomCase(rng)
		r := attribution.Attribute(cfg, order, tps)
		if len(r.Touches) == 0 {
			t.Fatalf("case %d: no touches", iter)
		}
		for _, m := range attribution.Models() {
			var weights float64
			var revenue, refunded domain.Amount
			for _, tc := range r.Touches {
				c := tc.Credit(m)
				weights += c.Weight
				revenue += c.Revenue
				refunded += c.Refunded
				if c.Weight < 0 || c.Revenue < 0 || c.Refunded < 0 || c.Refunded > c.Revenue+1 {
					t.Fatalf("case %d %s: negative or inverted credit %+v", iter, m, c)
				}
				if exact := c.Weight * float64(order.Revenue); math.Abs(float64(c.Revenue)-exact) > 1+exact*1e-9 {
					t.Fatalf("case %d %s: revenue %d for exact share %f", iter, m, c.Revenue, exact)
				}
				if c.Weight == 0 && (c.Revenue != 0 || c.Refunded != 0) {
					t.Fatalf("case %d %s: money without weight %+v", iter, m, c)
				}
			}
			if math.Abs(weights-1) > 1e-9 {
				t.Fatalf("case %d %s: weights sum to %v", iter, m, weights)
			}
			if revenue != order.Revenue || refunded != order.Refunded {
				t.Fatalf("case %d %s: credited %d / %d of %d / %d", iter, m, revenue, refunded, order.Revenue, order.Refunded)
			}
		}
		for _, tc := range r.Touches {
			at := tc.Touchpoint.OccurredAt
			if !tc.Synthetic && (at.After(order.At) || at.Before(order.At.Add(-cfg.WithDefaults().Lookback))) {
				t.Fatalf("case %d: touch outside the window at %v", iter, at)
			}
		}
		shuffled := append([]attribution.Touchpoint(nil), tps...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := attribution.Attribute(cfg, order, shuffled); !reflect.DeepEqual(again, r) {
			t.Fatalf("case %d: result depends on input order", iter)
		}
		// Sessions do not depend on it either.
		if !reflect.DeepEqual(attribution.Sessionize(shuffled, 0), attribution.Sessionize(tps, 0)) {
			t.Fatalf("case %d: sessions depend on input order", iter)
		}
	}
}

// FuzzAttribute checks the exact sums on arbitrary amounts and ages
// (each byte pair of ages is a touchpoint's age in hours).
func FuzzAttribute(f *testing.F) {
	f.Add(int64(1_000_000), int64(300_000), []byte{0, 1, 0, 200, 2, 150})
	f.Add(int64(7), int64(7), []byte{0, 0, 0, 0, 0, 0})
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64/3), []byte{255, 255, 0, 0})
	f.Add(int64(-5), int64(10), []byte{})
	f.Fuzz(func(t *testing.T, revenue, refunded int64, ages []byte) {
		var tps []attribution.Touchpoint
		for i := 0; i+1 < len(ages) && len(tps) < 500; i += 2 {
			l := landings[int(ages[i])%len(landings)]
			tps = append(tps, touch(strconv.Itoa(i), time.Duration(ages[i+1])*time.Hour*3, l[0], l[1]))
		}
		order := attribution.Order{At: orderAt, Revenue: domain.Amount(revenue), Refunded: domain.Amount(refunded)}
		r := attribution.Attribute(attribution.Config{}, order, tps)
		wantRev := max(order.Revenue, 0)
		wantRef := min(max(order.Refunded, 0), wantRev)
		for _, m := range attribution.Models() {
			var rev, ref domain.Amount
			for _, tc := range r.Touches {
				rev += tc.Credit(m).Revenue
				ref += tc.Credit(m).Refunded
			}
			if rev != wantRev || ref != wantRef {
				t.Fatalf("%s: credited %d / %d, want %d / %d", m, rev, ref, wantRev, wantRef)
			}
		}
		if again := attribution.Attribute(attribution.Config{}, order, tps); !reflect.DeepEqual(again, r) {
			t.Fatal("not deterministic")
		}
	})
}
