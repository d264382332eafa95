package attribution_test

import (
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/attribution"
)

// A visitor's page views become sessions; their landings are attributed.
func Example() {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pageView := func(id string, before time.Duration, landing, referrer string) attribution.Touchpoint {
		return attribution.Touchpoint{ID: id, AnonymousID: "anon-1", OccurredAt: at.Add(-before), Kind: attribution.KindPageView,
			Landing: attribution.ParseLanding(landing, referrer)}
	}
	views := []attribution.Touchpoint{
		pageView("1", 14*24*time.Hour, "/?utm_source=google&utm_medium=cpc&utm_campaign=brand", "https://www.google.com/"),
		pageView("2", 14*24*time.Hour-5*time.Minute, "/products/shoe", ""), // same visit
		pageView("3", 7*24*time.Hour, "/?utm_source=klaviyo&utm_medium=email&utm_campaign=welcome", ""),
		pageView("4", 0, "/", ""), // a direct return
	}
	sessions := attribution.Sessionize(views, 0)
	order := attribution.Order{ID: "ord_1", At: at, Revenue: 700_000} // 70.00
	r := attribution.Attribute(attribution.Config{}, order, attribution.Landings(sessions))
	for _, t := range r.Touches {
		c := t.Credit(attribution.TimeDecay)
		fmt.Printf("%-14s %-8s %.4f %s\n", t.Class.Channel, t.Class.Source, c.Weight, c.Revenue)
	}
	fmt.Println("last non-direct:", r.Touches[1].Credit(attribution.LastNonDirect).Revenue)
	// Output:
	// paid_search    google   0.1429 10.00
	// email          klaviyo  0.2857 20.00
	// direct         direct   0.5714 40.00
	// last non-direct: 70.00
}
