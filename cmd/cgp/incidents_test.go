package main

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// themePublish is the themes/publish fixture for another theme, published
// at updatedAt.
func themePublish(t *testing.T, id, name, updatedAt string) []byte {
	t.Helper()
	b := withField(t, fixture(t, shopify.TopicThemesPublish), "id", "141234567890", id)
	b = withField(t, b, "name", `"Dawn - spring 2026"`, strconv.Quote(name))
	return withField(t, b, "updated_at", `"2026-03-10T07:30:00-05:00"`, strconv.Quote(updatedAt))
}

// TestThemeIncidents (issue 21, point 4): the theme regression incident
// view over HTTP. Without read_themes (grant unknown, then known without
// it) the list says so explicitly, with the re-authorisation link; once
// app/scopes_update grants it, a theme publish followed by imported
// rankings that drop is one incident naming the theme and the dropped
// keywords, a publish without a drop is none, the list walks newest first
// with cursors and date filters, and another shop's token sees nothing.
func TestThemeIncidents(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.PublicURL = "https://cgp.example.com" })
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "incidents-a.example.com", "agency", "analytics:read")
	other := newTenant(t, dir, "incidents-b.example.com", "agency", "analytics:read")
	noScope := newTenant(t, dir, "incidents-c.example.com", "agency", "orders:read")
	for _, x := range []tenant{tn, other, noScope} {
		waitForToken(t, s, x)
	}
	const path = "/api/v1/seo-intelligence/incidents"
	var wait uint64
	list := func(token, query string) map[string]any {
		t.Helper()
		r := s.get(t, path+"?"+query, token, "X-Wait-For-Position", strconv.FormatUint(wait, 10))
		if r.status != http.StatusOK {
			t.Fatalf("GET %s?%s: %d %s", path, query, r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if st := r.header.Get("X-Service-Stability"); st != "beta" {
			t.Errorf("X-Service-Stability = %q", st)
		}
		return r.json(t)
	}
	meta := func(doc map[string]any) map[string]any { return doc["meta"].(map[string]any) }
	scopesUpdate := func(id, current string) {
		t.Helper()
		body := []byte(`{"id":660136150,"previous":[],"current":` + current + `,"updated_at":"2026-11-01T10:00:00Z"}`)
		r := s.webhook(t, tn, "app/scopes_update", id, body)
		if r.status != http.StatusOK {
			t.Fatalf("scopes update: %d %s", r.status, r.body)
		}
		wait = max(wait, mustPosition(t, r))
	}
	reauthorize := "https://cgp.example.com/auth/install?shop=incidents-a.example.com"

	// The grant is not known (the shop was made by the CLI).
	doc := list(tn.token, "")
	m := meta(doc)
	if len(doc["data"].([]any)) != 0 || m["theme_tracking"] != "scope_missing" || m["platform_scope"] != "read_themes" ||
		m["grant_known"] != false || m["reauthorize_url"] != reauthorize || !strings.Contains(fmt.Sprint(m["reason"]), "not known") {
		t.Fatalf("unknown grant: %v", doc)
	}
	// Known, without read_themes (write_products implies read_products only).
	scopesUpdate("dlv-inc-scopes-1", `["read_orders","write_products"]`)
	m = meta(list(tn.token, ""))
	if m["theme_tracking"] != "scope_missing" || m["grant_known"] != true || m["reauthorize_url"] != reauthorize ||
		!strings.Contains(fmt.Sprint(m["reason"]), "read_themes") {
		t.Fatalf("grant without read_themes: %v", m)
	}
	scopesUpdate("dlv-inc-scopes-2", `["read_orders","write_products","read_themes"]`)
	m = meta(list(tn.token, ""))
	if m["theme_tracking"] != "on" || m["grant_known"] != true || m["reauthorize_url"] != nil || m["reason"] != nil {
		t.Fatalf("grant with read_themes: %v", m)
	}
	rule := m["rule"].(map[string]any)
	if rule["window_days"] != 7.0 || rule["min_position_drop"] != 3.0 || rule["min_keywords"] != 2.0 {
		t.Errorf("rule %v", rule)
	}

	// Three publishes: 10 March (rankings drop after it), 1 April (steady),
	// 1 May (they drop again); a draft theme's edit is dropped at ingest.
	for _, p := range []struct{ delivery, id, name, at string }{
		{"dlv-inc-thm-1", "141234567890", "Dawn - spring 2026", "2026-03-10T07:30:00-05:00"},
		{"dlv-inc-thm-2", "141234567891", "Dawn - april", "2026-04-01T09:00:00Z"},
		{"dlv-inc-thm-3", "141234567892", "Sense - may", "2026-05-01T08:15:00Z"},
	} {
		wait = max(wait, s.deliver(t, tn, shopify.TopicThemesPublish, p.delivery, themePublish(t, p.id, p.name, p.at)))
	}
	wait = max(wait, s.deliver(t, tn, shopify.TopicThemesUpdate, "dlv-inc-thm-draft", fixture(t, shopify.TopicThemesUpdate)))
	const site = "https://incidents-a.example.com/p/"
	report := rankingHeader +
		"running shoes," + site + "runner,3,12000,40,900,2026-03-09\n" +
		"running shoes," + site + "runner,9,12000,20,700,2026-03-12\n" +
		"trail shoes," + site + "trail,5,3000,5,200,2026-03-08\n" +
		"trail shoes," + site + "trail,11,3000,2,150,2026-03-14\n" +
		"socks," + site + "socks,4,500,9,80,2026-03-09\n" +
		"socks," + site + "socks,5,500,9,80,2026-03-12\n" +
		"running shoes," + site + "runner,3,12000,40,900,2026-03-31\n" +
		"running shoes," + site + "runner,3.5,12000,40,900,2026-04-03\n" +
		"trail shoes," + site + "trail,5,3000,5,200,2026-03-31\n" +
		"trail shoes," + site + "trail,6,3000,5,200,2026-04-03\n" +
		"running shoes," + site + "runner,3,12000,40,900,2026-04-30\n" +
		"running shoes," + site + "runner,8,12000,40,900,2026-05-02\n" +
		"trail shoes," + site + "trail,5,3000,5,200,2026-04-30\n" +
		"trail shoes," + site + "trail,10.5,3000,5,200,2026-05-03\n"
	out := cli(t, dir, "seo", "import", "--shop", tn.shopID, writeFile(t, "rankings.csv", report))
	wait = max(wait, uint64(out["position"].(float64)))
	// The other shop tracks the same keywords, its rankings steady.
	otherReport := rankingHeader + "running shoes,https://incidents-b.example.com/p/runner,3,12000,40,900,2026-03-09\n" +
		"running shoes,https://incidents-b.example.com/p/runner,3,12000,40,900,2026-03-12\n"
	out = cli(t, dir, "seo", "import", "--shop", other.shopID, writeFile(t, "other.csv", otherReport))
	wait = max(wait, uint64(out["position"].(float64)))

	incidents := toMaps(list(tn.token, "")["data"])
	if got := ids(incidents); !reflect.DeepEqual(got, []string{"tin_20260501", "tin_20260310"}) {
		t.Fatalf("incidents %v, want the May and the March publish (April's had no drop)", got)
	}
	march := attrs(incidents[1])
	change := march["theme_change"].(map[string]any)
	if change["theme_external_id"] != "141234567890" || change["name"] != "Dawn - spring 2026" || change["topic"] != "themes/publish" ||
		change["changed_at"] != "2026-03-10T12:30:00Z" || change["theme_id"] != domain.ThemeIDFromExternal(tn.shopID, "141234567890") {
		t.Errorf("suspected change %v", change)
	}
	if w := march["window"].(map[string]any); w["from"] != "2026-03-11" || w["to"] != "2026-03-17" {
		t.Errorf("window %v", w)
	}
	if march["severity"] != "P1" || march["keywords_compared"] != 3.0 || march["keywords_dropped"] != 2.0 || march["theme_changes_on_day"] != 1.0 {
		t.Errorf("march incident %v", march)
	}
	var dropped []string
	for _, d := range toMaps(march["dropped_keywords"]) {
		dropped = append(dropped, fmt.Sprintf("%s %s %v(%s)→%v(%s) %v", d["keyword"], d["url"], d["position_before"], d["position_before_date"],
			d["position_after"], d["position_after_date"], d["change"]))
	}
	want := []string{
		"running shoes " + site + "runner 3(2026-03-09)→9(2026-03-12) -6",
		"trail shoes " + site + "trail 5(2026-03-08)→11(2026-03-14) -6",
	}
	if !reflect.DeepEqual(dropped, want) {
		t.Errorf("dropped keywords\n got %q\nwant %q", dropped, want)
	}
	if may := attrs(incidents[0]); may["theme_change"].(map[string]any)["name"] != "Sense - may" || may["keywords_compared"] != 2.0 {
		t.Errorf("may incident %v", may)
	}

	// Oldest first, one per page, and the date filters on the change day.
	walked := pageWalker{t: t, s: s, v: v, token: tn.token, wait: wait}.walk(path, "limit=1")
	if got := ids(walked); !reflect.DeepEqual(got, []string{"tin_20260501", "tin_20260310"}) {
		t.Errorf("walk of one per page: %v", got)
	}
	walked = pageWalker{t: t, s: s, v: v, token: tn.token, wait: wait}.walk(path, "limit=1&sort=changed_at")
	if got := ids(walked); !reflect.DeepEqual(got, []string{"tin_20260310", "tin_20260501"}) {
		t.Errorf("walk oldest first: %v", got)
	}
	for query, wantIDs := range map[string][]string{
		"filter[date_from]=2026-03-11":                            {"tin_20260501"},
		"filter[date_to]=2026-04-30":                              {"tin_20260310"},
		"filter[date_from]=2026-03-10&filter[date_to]=2026-03-10": {"tin_20260310"},
		"filter[date_from]=2026-04-01&filter[date_to]=2026-04-01": nil,
	} {
		if got := ids(toMaps(list(tn.token, query)["data"])); !reflect.DeepEqual(got, wantIDs) && len(got)+len(wantIDs) > 0 {
			t.Errorf("%s: %v, want %v", query, got, wantIDs)
		}
	}

	// Another shop's token sees none of it: its grant is not known, its
	// keywords steady, it had no theme change.
	doc = list(other.token, "")
	if len(doc["data"].([]any)) != 0 || meta(doc)["theme_tracking"] != "scope_missing" ||
		meta(doc)["reauthorize_url"] != "https://cgp.example.com/auth/install?shop=incidents-b.example.com" {
		t.Errorf("another shop: %v", doc)
	}

	for _, c := range []struct {
		query, token string
		status       int
		code         string
	}{
		{"", "", http.StatusUnauthorized, "authentication_required"},
		{"", noScope.token, http.StatusForbidden, "scope_required"},
		{"limit=101", tn.token, http.StatusBadRequest, "invalid_parameter"},
		{"sort=day", tn.token, http.StatusBadRequest, "invalid_parameter"},
		{"filter[keyword]=socks", tn.token, http.StatusBadRequest, "invalid_parameter"},
		{"filter[date_from]=2026-05-01&filter[date_to]=2026-04-01", tn.token, http.StatusBadRequest, "invalid_parameter"},
		{"filter[date_from]=May", tn.token, http.StatusBadRequest, "invalid_parameter"},
		{"cursor=bogus", tn.token, http.StatusBadRequest, "invalid_cursor"},
	} {
		r := s.get(t, path+"?"+c.query, c.token)
		if r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("GET ?%s: %d %s, want %d %s", c.query, r.status, r.body, c.status, c.code)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
}

// mustPosition is a write's X-Event-Position.
func mustPosition(t *testing.T, r response) uint64 {
	t.Helper()
	p, err := strconv.ParseUint(r.position(t), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
