package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestReviewHelpfulVotes (issue 20, "sort by helpfulness"): shoppers mark
// published reviews helpful from the storefront, one vote per address per
// review: two addresses count 2, a repeat from the same address appends
// nothing and answers the same count; a pending, unknown or other shop's
// review is 404; sort=-helpful and sort=helpful order the storefront's and
// the moderators' lists with a working cursor, and the public list's ETag
// changes with the counts; a flood of votes from one address is stopped
// with 429 and Retry-After. Every answer is validated against the OpenAPI
// document.
func TestReviewHelpfulVotes(t *testing.T) {
	dir := t.TempDir()
	// The test server trusts the loopback proxy: X-Forwarded-For sets each
	// request's client address.
	s := startServerWith(t, dir, func(c *Config) { c.TrustedProxies = []string{"127.0.0.1/32"} })
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "votes.example.com", "agency", "*")
	other := newTenant(t, dir, "other-votes.example.com", "agency", "*")
	waitForToken(t, s, tn)
	rm := readModels(t, dir)

	const product = int64(8123456789012) // the Linen Shirt of the fixtures
	// Buyers 1–3 have fulfilled orders (their 5-star reviews are verified
	// and published at once); buyer 4's order is not fulfilled (pending).
	var last uint64
	for i := int64(1); i <= 4; i++ {
		order, customer, email := 93020000+i, 7302000+i, fmt.Sprintf("buyer%d@example.com", i)
		last = s.deliver(t, tn, "orders/create", fmt.Sprintf("hv-o-%d", i), reviewOrder(t, "orders/create", order, customer, email))
		if i < 4 {
			last = s.deliver(t, tn, "orders/fulfilled", fmt.Sprintf("hv-f-%d", i), reviewOrder(t, "orders/fulfilled", order, customer, email))
		}
	}
	waitProjected(t, rm, "commerce", last)

	origin := "https://" + tn.domain
	public := func(method, path, ip string, body []byte, h map[string]string) response {
		t.Helper()
		if h == nil {
			h = map[string]string{}
		}
		h["Origin"], h["X-Shop-Domain"], h["X-Forwarded-For"] = origin, tn.domain, ip
		if body != nil {
			h["Content-Type"] = "application/json"
		}
		r := do(t, method, s.base+path, body, h)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	var ids []string
	for i := int64(1); i <= 4; i++ {
		r := public(http.MethodPost, "/api/public/reviews", fmt.Sprintf("10.2.0.%d", i), reviewBody(map[string]any{
			"product_id": fmt.Sprint(product), "rating": 5, "body": fmt.Sprintf("Review number %d", i), "author_name": fmt.Sprintf("Buyer %d", i),
			"author_email": fmt.Sprintf("buyer%d@example.com", i), "order_id": fmt.Sprint(93020000 + i)}), nil)
		want := "published"
		if i == 4 {
			want = "pending"
		}
		if r.status != http.StatusAccepted || attrs(data(r, t))["status"] != want {
			t.Fatalf("review %d: %d %s", i, r.status, r.body)
		}
		ids = append(ids, data(r, t)["id"].(string))
	}
	a, b, c, pending := ids[0], ids[1], ids[2], ids[3]

	list := func(query string, h map[string]string) response {
		t.Helper()
		return public(http.MethodGet, "/api/public/reviews?product_id="+fmt.Sprint(product)+query, "10.2.9.1", nil, h)
	}
	before := list("", map[string]string{"X-Wait-For-Position": strconv.FormatUint(last, 10)})
	if before.status != http.StatusOK || len(before.json(t)["data"].([]any)) != 3 || !bytes.Contains(before.body, []byte(`"helpful_count":0`)) {
		t.Fatalf("the published reviews before any vote: %d %s", before.status, before.body)
	}

	vote := func(id, ip string) response {
		t.Helper()
		return public(http.MethodPost, "/api/public/reviews/"+id+"/helpful", ip, nil, nil)
	}
	count := func(t *testing.T, r response) float64 {
		t.Helper()
		d := data(r, t)
		if d["id"] == nil || d["type"] != "review_helpfulness" {
			t.Fatalf("vote answer: %s", r.body)
		}
		return attrs(d)["helpful_count"].(float64)
	}
	// Two addresses count 2; the first address again stays 2 and appends
	// nothing; the first address's vote on another review counts there.
	if r := vote(a, "10.3.0.1"); r.status != http.StatusOK || count(t, r) != 1 || r.header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("first vote: %d %v %s", r.status, r.header, r.body)
	}
	second := vote(a, "10.3.0.2")
	if second.status != http.StatusOK || count(t, second) != 2 {
		t.Fatalf("second address: %d %s", second.status, second.body)
	}
	logged := len(readLog(t, dir))
	again := vote(a, "10.3.0.1")
	if again.status != http.StatusOK || count(t, again) != 2 {
		t.Fatalf("a repeat from the first address: %d %s", again.status, again.body)
	}
	if n := len(readLog(t, dir)); n != logged {
		t.Fatalf("a repeated vote appended %d events", n-logged)
	}
	lastVote := vote(b, "10.3.0.1")
	if lastVote.status != http.StatusOK || count(t, lastVote) != 1 {
		t.Fatalf("the first address on another review: %d %s", lastVote.status, lastVote.body)
	}
	// No file of the data directory keeps a voter's address (the votes
	// carry a keyed hash).
	if hits, _, _, err := app.SearchDataDir(dir, []string{"10.3.0.1", "10.3.0.2"}); err != nil || len(hits) != 0 {
		t.Fatalf("a voter's address in the data directory: %v %v", hits, err)
	}

	// Not found: a pending review, an unknown one, a malformed id, and a
	// review of another shop asked by that shop's storefront.
	for name, r := range map[string]response{
		"pending": vote(pending, "10.3.1.1"),
		"unknown": vote("rev_unknown0000000000000", "10.3.1.2"),
		"no id":   vote("not-a-review", "10.3.1.3"),
		"other shop's": do(t, http.MethodPost, s.base+"/api/public/reviews/"+a+"/helpful", nil, map[string]string{
			"Origin": "https://" + other.domain, "X-Shop-Domain": other.domain, "X-Forwarded-For": "10.3.1.4"}),
	} {
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusNotFound || r.errorCode(t) != "not_found" {
			t.Errorf("%s review: %d %s", name, r.status, r.body)
		}
	}
	// The preflight admits the shop's origin for POST.
	pre := do(t, http.MethodOptions, s.base+"/api/public/reviews/"+a+"/helpful", nil, map[string]string{"Origin": origin,
		"Access-Control-Request-Method": "POST"})
	v.ValidateResponse(t, pre.req, pre.resp, pre.body)
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != origin || pre.header.Get("Access-Control-Allow-Methods") != "POST" {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}

	// The most helpful first (a 2, b 1, c 0), one per page through the
	// cursor; the least helpful first; the counts are in the list and the
	// ETag changed with them.
	walk := func(sort string) []string {
		t.Helper()
		var got []string
		q := "&limit=1&sort=" + sort
		for page := 0; page < 5; page++ {
			r := list(q, map[string]string{"X-Wait-For-Position": lastVote.position(t)})
			if r.status != http.StatusOK {
				t.Fatalf("sort %s: %d %s", sort, r.status, r.body)
			}
			for _, d := range r.json(t)["data"].([]any) {
				got = append(got, d.(map[string]any)["id"].(string))
			}
			next, _ := r.json(t)["pagination"].(map[string]any)["next_cursor"].(string)
			if next == "" {
				return got
			}
			q = "&limit=1&sort=" + sort + "&cursor=" + url.QueryEscape(next)
		}
		t.Fatalf("sort %s: more pages than reviews", sort)
		return nil
	}
	if got := walk("-helpful"); fmt.Sprint(got) != fmt.Sprint([]string{a, b, c}) {
		t.Fatalf("sort=-helpful: %v, want %v", got, []string{a, b, c})
	}
	if got := walk("helpful"); fmt.Sprint(got) != fmt.Sprint([]string{c, b, a}) {
		t.Fatalf("sort=helpful: %v, want %v", got, []string{c, b, a})
	}
	after := list("", map[string]string{"If-None-Match": before.header.Get("ETag")})
	if after.status != http.StatusOK || after.header.Get("ETag") == before.header.Get("ETag") ||
		!bytes.Contains(after.body, []byte(`"helpful_count":2`)) {
		t.Fatalf("the list after the votes (If-None-Match of the list before): %d %v %s", after.status, after.header, after.body)
	}
	// A cursor of the helpfulness sort is refused with another sort.
	first := list("&limit=1&sort=-helpful", map[string]string{})
	next, _ := first.json(t)["pagination"].(map[string]any)["next_cursor"].(string)
	if r := list("&limit=1&sort=-rating&cursor="+url.QueryEscape(next), map[string]string{}); r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_cursor" {
		t.Fatalf("a -helpful cursor with -rating: %d %s", r.status, r.body)
	}

	// The moderators see the counts and sort by them too.
	adm := do(t, http.MethodGet, s.base+"/api/v1/reviews?sort=-helpful&limit=2", nil, map[string]string{"Authorization": "Bearer " + tn.token})
	v.ValidateResponse(t, adm.req, adm.resp, adm.body)
	if adm.status != http.StatusOK {
		t.Fatalf("admin list: %d %s", adm.status, adm.body)
	}
	rows := adm.json(t)["data"].([]any)
	if len(rows) != 2 || rows[0].(map[string]any)["id"] != a || attrs(rows[0].(map[string]any))["helpful_count"] != float64(2) ||
		rows[1].(map[string]any)["id"] != b {
		t.Fatalf("admin list by helpfulness: %s", adm.body)
	}

	// A flood of votes from one address is stopped; another address still
	// votes.
	limited := 0
	for i := 0; i < 100; i++ {
		r := vote(c, "10.6.6.6")
		if r.status == http.StatusTooManyRequests {
			if r.errorCode(t) != "rate_limited" || r.header.Get("Retry-After") == "" {
				t.Fatalf("429 without rate_limited and Retry-After: %v %s", r.header, r.body)
			}
			limited++
		} else if r.status != http.StatusOK || count(t, r) != 1 {
			t.Fatalf("a flooding vote that passed: %d %s", r.status, r.body)
		}
	}
	if limited < 70 {
		t.Fatalf("only %d of 100 flooding votes were refused", limited)
	}
	if r := vote(c, "10.3.0.9"); r.status != http.StatusOK || count(t, r) != 2 {
		t.Fatalf("another address during the flood: %d %s", r.status, r.body)
	}
}
