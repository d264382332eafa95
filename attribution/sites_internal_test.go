package attribution

import "testing"

// TestSiteTables checks the tables Classify reads: a site name has one
// kind wherever it appears (google aside: search, its ad redirects and its
// display network), so siteNames does not depend on map order, and every
// known host is already normalised.
func TestSiteTables(t *testing.T) {
	kinds := map[string]siteKind{}
	for host, s := range knownHosts {
		if normalizeHost(host) != host {
			t.Errorf("host %q is not normalised", host)
		}
		if s.name == "google" {
			continue
		}
		if k, ok := kinds[s.name]; ok && k != s.kind {
			t.Errorf("site %q has kinds %d and %d", s.name, k, s.kind)
		}
		kinds[s.name] = s.kind
	}
	for src, s := range knownSources {
		if k, ok := kinds[s.name]; ok && k != s.kind && s.name != "google" {
			t.Errorf("source %q: site %q has kinds %d and %d", src, s.name, k, s.kind)
		}
	}
	if siteNames["google"].kind != siteSearch {
		t.Errorf("google is %d", siteNames["google"].kind)
	}
}
