package attribution_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/attribution"
)

// FuzzParseLanding feeds arbitrary landing pages and referrers: parsing
// and classifying never panic, are deterministic, keep only bounded valid
// text, and yield a known channel; a parsed referrer host is a fixed point.
func FuzzParseLanding(f *testing.F) {
	f.Add("/products/shoe?utm_source=google&utm_medium=cpc&gclid=abc", "https://www.google.com/search?q=x")
	f.Add("https://shop.example/a?UTM_SOURCE=Klaviyo&utm_medium=e-mail#frag", "android-app://com.google.android.gm/")
	f.Add("?fbclid=IwAR&utm_medium=social", "l.facebook.com")
	f.Add("/?utm_source=%zz&utm_campaign=a;b", "http://[::1]:80/")
	f.Add("", "https://user:pw@WWW.Example.COM.:8443/")
	f.Add("/thank_you?utm_source=paypal.com&utm_medium=referral", "https://www.paypal.com/")
	f.Add("\x00\xff/?utm_source=\xc3", "https://\xe2\x28\xa1.com/")
	channels := attribution.Channels()
	f.Fuzz(func(t *testing.T, landing, referrer string) {
		l := attribution.ParseLanding(landing, referrer)
		if again := attribution.ParseLanding(landing, referrer); again != l {
			t.Fatalf("not deterministic: %+v then %+v", l, again)
		}
		for _, v := range []string{l.Path, l.ReferrerHost, l.UTM.Source, l.UTM.Medium, l.UTM.Campaign, l.UTM.Term, l.UTM.Content,
			l.ClickIDs.GCLID, l.ClickIDs.GBRAID, l.ClickIDs.WBRAID, l.ClickIDs.FBCLID, l.ClickIDs.TTCLID, l.ClickIDs.MSCLKID, l.ClickIDs.LiFatID} {
			if !utf8.ValidString(v) {
				t.Fatalf("invalid UTF-8 kept: %q", v)
			}
		}
		if len(l.UTM.Campaign) > 512 || len(l.UTM.Source) > 512 || len(l.ClickIDs.GCLID) > 512 {
			t.Fatalf("over-long value kept: %+v", l)
		}
		if l.Path != "" && !strings.HasPrefix(l.Path, "/") || strings.ContainsAny(l.Path, "?#") {
			t.Fatalf("path %q", l.Path)
		}
		if h := l.ReferrerHost; h != "" {
			if strings.HasPrefix(h, "www.") || h != strings.ToLower(h) || strings.ContainsAny(h, "/?#@ ") {
				t.Fatalf("host %q not normalised", h)
			}
			if !strings.Contains(h, ":") { // an IPv6 literal would need brackets again
				if again := attribution.ParseLanding("", h).ReferrerHost; again != h {
					t.Fatalf("host %q reparsed as %q", h, again)
				}
			}
		}
		c := attribution.Classify(l)
		if again := attribution.Classify(l); again != c {
			t.Fatalf("Classify not deterministic: %+v then %+v", c, again)
		}
		if !slices.Contains(channels, c.Channel) {
			t.Fatalf("unknown channel %q", c.Channel)
		}
		if c.Channel == attribution.Direct && c.Source != "direct" {
			t.Fatalf("direct with source %q", c.Source)
		}
	})
}
