package attribution_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/attribution"
)

// BenchmarkAttribute computes every model for an order with 10
// touchpoints over 20 days (classification included).
func BenchmarkAttribute(b *testing.B) {
	tps := make([]attribution.Touchpoint, 10)
	for i := range tps {
		l := landings[i%len(landings)]
		tps[i] = touch(string(rune('a'+i)), time.Duration(i)*2*day+time.Hour, l[0], l[1])
	}
	order := attribution.Order{ID: "ord_1", At: orderAt, Revenue: 1_299_900, Refunded: 100_000}
	b.ReportAllocs()
	for b.Loop() {
		r := attribution.Attribute(attribution.Config{}, order, tps)
		if len(r.Touches) != 10 {
			b.Fatal(len(r.Touches))
		}
	}
}

// BenchmarkSessionize groups 100 page views of one visitor.
func BenchmarkSessionize(b *testing.B) {
	tps := make([]attribution.Touchpoint, 100)
	for i := range tps {
		l := landings[i%len(landings)]
		tps[i] = visit(string(rune('a'+i)), time.Duration(i)*7*time.Minute, l[0], l[1])
	}
	b.ReportAllocs()
	for b.Loop() {
		attribution.Sessionize(tps, 0)
	}
}
