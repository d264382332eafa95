package main

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// checkEncodedLink fails unless link's query is URL-encoded as
// url.Values encodes it: no raw brackets, spaces, '#' or '&' inside a
// value, so curl (which globs [ ]) and every client can follow it as is.
func checkEncodedLink(t *testing.T, what, link string) *url.URL {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("%s %q: %v", what, link, err)
	}
	if strings.ContainsAny(u.RawQuery, "[] #") || u.Fragment != "" || u.Query().Encode() != u.RawQuery {
		t.Errorf("%s %q: query not URL-encoded (want %q)", what, link, u.Query().Encode())
	}
	return u
}

// TestLinksAreURLEncoded: links.next of a list filtered by a value with
// '&', '#', space, '[' and ']' is encoded and, followed as given, serves
// the next page of the same filter; links.related are encoded too.
func TestLinksAreURLEncoded(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "links.example.com", "agency", "products:read,products:write,attribution:read")
	waitForToken(t, s, tn)
	a := catalogClient{t: t, s: s, v: openapitest.NewValidator(t), token: tn.token}

	vendor := "A&B #1 [x] y+z%"
	want := map[string]bool{}
	var pos string
	for _, v := range []string{vendor, vendor, "A", vendor} {
		r := a.ok(201, http.MethodPost, "/api/v1/products", `{"data":{"attributes":{"title":"T","vendor":`+strconv.Quote(v)+`}}}`)
		pos = r.position(t)
		if v == vendor {
			want[data(r, t)["id"].(string)] = true
		}
	}
	first := "/api/v1/products?limit=1&" + url.Values{"filter[vendor]": {vendor}}.Encode()
	got := map[string]bool{}
	for next, pages := first, 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatalf("walk from %s does not end", first)
		}
		doc := a.ok(200, http.MethodGet, next, "", "X-Wait-For-Position", pos).json(t)
		for _, row := range toMaps(doc["data"]) {
			if attrs(row)["vendor"] != vendor || got[row["id"].(string)] {
				t.Fatalf("page %d: %v", pages, row)
			}
			got[row["id"].(string)] = true
			rel := row["relationships"].(map[string]any)["inventory"].(map[string]any)["links"].(map[string]any)["related"].(string)
			checkEncodedLink(t, "links.related", rel)
		}
		next, _ = doc["links"].(map[string]any)["next"].(string)
		if next != "" {
			u := checkEncodedLink(t, "links.next", next)
			if u.Query().Get("filter[vendor]") != vendor {
				t.Fatalf("links.next %q lost the filter", next)
			}
			next = strings.TrimPrefix(next, s.base)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("walk served %v, want %v", got, want)
	}

	// Attribution: the touchpoints link of a record, followed as given.
	p := s.deliver(t, tn, shopify.TopicCheckoutsCreate, "dlv-links-co", fixture(t, shopify.TopicCheckoutsCreate))
	p = max(p, s.deliverOrder(t, tn, testOrder{ext: 7101, customer: "7064055069303700841", created: "2026-03-10T12:00:00Z",
		total: "10.00", financial: "paid"}))
	wait := strconv.FormatUint(p, 10)
	r := s.get(t, "/api/v1/attribution?"+url.Values{"filter[date_from]": {"2026-03-10"}, "filter[date_to]": {"2026-03-10"}}.Encode(), tn.token, "X-Wait-For-Position", wait)
	rows := toMaps(r.json(t)["data"])
	if r.status != 200 || len(rows) != 1 {
		t.Fatalf("attribution: %d %s", r.status, r.body)
	}
	rel := rows[0]["relationships"].(map[string]any)["touchpoints"].(map[string]any)["links"].(map[string]any)["related"].(string)
	checkEncodedLink(t, "touchpoints links.related", rel)
	again := s.get(t, rel, tn.token, "X-Wait-For-Position", wait)
	if back := toMaps(again.json(t)["data"]); again.status != 200 || len(back) != 1 || back[0]["id"] != rows[0]["id"] {
		t.Fatalf("following %s: %d %s", rel, again.status, again.body)
	}
}
