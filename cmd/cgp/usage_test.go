package main

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// usageOf is the decoded attributes of a 200 from GET /api/v1/usage.
type usageOf struct {
	attrs   map[string]any
	total   float64
	byToken map[string]map[string]any
	order   []string
}

// TestUsageCountsRequestsPerTokenAndShop drives GET /api/v1/usage over
// HTTP. What counts: every request authenticated with an admin token and
// admitted (plan, scope and rate limit passed), whatever it is answered
// then, the usage call itself included (it is counted before its handler
// runs); a 401, 403 or 429 does not, nor a request with an image-API key.
func TestUsageCountsRequestsPerTokenAndShop(t *testing.T) {
	dir := t.TempDir()
	const perMinute = 10
	s := startServerWith(t, dir, func(c *Config) { c.RateAgency = perMinute })
	v := openapitest.NewValidator(t)
	month := time.Now().UTC().Format("2006-01")

	a := newTenant(t, dir, "usage.example.com", "agency", "customers:read")
	other := newTenant(t, dir, "usage-other.example.com", "agency", "customers:read")
	key := cli(t, dir, "image-keys", "mint", "--shop", a.shopID)["token"].(string)
	b := cli(t, dir, "tokens", "create", "--shop", a.shopID, "--scopes", "customers:read", "--name", "sync job")
	c := cli(t, dir, "tokens", "create", "--shop", a.shopID, "--scopes", "*", "--name", "flood")
	tokB, tokC := b["token"].(string), c["token"].(string)
	idB, idC := b["id"].(string), c["id"].(string)
	// One usage request with C: the tokens and the key made before it are
	// known from then on. It counts for C.
	waitForToken(t, s, tenant{token: tokC, position: uint64(c["position"].(float64))})

	usage := func(s *testServer, query string, h ...string) response {
		t.Helper()
		r := s.get(t, "/api/v1/usage"+query, "", h...)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	read := func(s *testServer, query string, h ...string) usageOf {
		t.Helper()
		r := usage(s, query, h...)
		if r.status != 200 {
			t.Fatalf("usage%s: %d %s", query, r.status, r.body)
		}
		attrs := r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
		req := attrs["api_requests"].(map[string]any)
		u := usageOf{attrs: attrs, total: req["total"].(float64), byToken: map[string]map[string]any{}}
		for _, e := range req["by_token"].([]any) {
			tk := e.(map[string]any)
			u.byToken[tk["token_id"].(string)] = tk
			u.order = append(u.order, tk["token_id"].(string))
		}
		return u
	}
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

	const n, m = 7, 4
	for i := 0; i < n; i++ {
		if r := s.get(t, "/api/v1/customers", a.token); r.status != 200 {
			t.Fatalf("A request %d: %d %s", i, r.status, r.body)
		}
	}
	for i := 0; i < m; i++ {
		if r := s.get(t, "/api/v1/customers", tokB); r.status != 200 {
			t.Fatalf("B request %d: %d %s", i, r.status, r.body)
		}
	}
	// Not counted: a scope the token lacks (403), a refused rate (429).
	if r := s.get(t, "/api/v1/orders", a.token); r.status != 403 {
		t.Fatalf("A without orders:read: %d %s", r.status, r.body)
	}
	statuses := map[int]int{}
	for i := 0; i < perMinute+2; i++ {
		statuses[s.get(t, "/api/v1/customers", tokC).status]++
	}
	// C used one request of its minute for the wait: 9 more are admitted.
	if statuses[200] != perMinute-1 || statuses[429] != 3 {
		t.Fatalf("C's burst: %v", statuses)
	}
	// Counted: an admitted request answered 404.
	if r := s.get(t, "/api/v1/customers/cus_unknown", tokB); r.status != 404 {
		t.Fatalf("unknown customer: %d %s", r.status, r.body)
	}

	// A: n and this usage call; B: m and the 404; C: the wait and the 9.
	wantA, wantB, wantC := float64(n+1), float64(m+1), float64(perMinute)
	u := read(s, "", bearer(a.token)...)
	if u.attrs["plan"] != "agency" || u.attrs["period"] != month {
		t.Fatalf("plan %v period %v", u.attrs["plan"], u.attrs["period"])
	}
	start, _ := time.Parse(time.RFC3339, u.attrs["period_start"].(string))
	end, _ := time.Parse(time.RFC3339, u.attrs["period_end"].(string))
	if start.Day() != 1 || start.Format("2006-01") != month || !end.Equal(start.AddDate(0, 1, 0)) || start.Location() != time.UTC {
		t.Fatalf("period %v to %v", u.attrs["period_start"], u.attrs["period_end"])
	}
	check := func(when string, u usageOf, wantA, wantB, wantC float64) {
		t.Helper()
		got := map[string]float64{}
		for id, tk := range u.byToken {
			got[id] = tk["requests"].(float64)
		}
		want := map[string]float64{tokenID(t, dir, a.shopID, ""): wantA, idB: wantB, idC: wantC}
		if fmt.Sprint(got) != fmt.Sprint(want) || u.total != wantA+wantB+wantC {
			t.Fatalf("%s: requests %v total %v, want %v total %v", when, got, u.total, want, wantA+wantB+wantC)
		}
		if u.byToken[idB]["name"] != "sync job" || u.byToken[idC]["name"] != "flood" {
			t.Fatalf("%s: names %v", when, u.byToken)
		}
		for id, tk := range u.byToken {
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(tk["last_used_at"]))
			if err != nil || at.Before(start) || at.After(time.Now().Add(time.Minute)) {
				t.Fatalf("%s: %s last used %v", when, id, tk["last_used_at"])
			}
		}
		for i := 1; i < len(u.order); i++ {
			if u.byToken[u.order[i-1]]["requests"].(float64) < u.byToken[u.order[i]]["requests"].(float64) {
				t.Fatalf("%s: by_token not sorted by requests: %v", when, u.order)
			}
		}
	}
	check("first read", u, wantA, wantB, wantC)
	if rl := u.attrs["rate_limit"].(map[string]any)["requests_per_minute"]; rl != float64(perMinute) {
		t.Fatalf("rate limit %v", rl)
	}
	if ai := u.attrs["ai_credits"].(map[string]any); ai["quota"] != 5000.0 || ai["used"] != 0.0 || ai["remaining"] != 5000.0 {
		t.Fatalf("ai credits %v", ai)
	}

	// An image-API key with usage:read sees the same shop's usage and is
	// not an admin API request itself; filter[period] of this month is
	// the default.
	check("image key", read(s, "?"+url.Values{"filter[period]": {month}}.Encode(), "X-API-Key", key), wantA, wantB, wantC)

	// Another shop's usage holds its own token only (this call itself).
	o := read(s, "", bearer(other.token)...)
	if o.total != 1 || len(o.byToken) != 1 || o.byToken[tokenID(t, dir, other.shopID, "")]["requests"] != 1.0 {
		t.Fatalf("other shop: total %v %v", o.total, o.byToken)
	}

	// Invalid periods and parameters: 400 naming the parameter (they are
	// admitted requests of the other shop's token, so they count there).
	next := time.Now().UTC().AddDate(0, 1, 0).Format("2006-01")
	for q, field := range map[string]string{
		"?filter[period]=2026-13": "filter[period]", "?filter[period]=" + next: "filter[period]", "?filter[period]=2026-1": "filter[period]",
		"?filter[period]=1999-12": "filter[period]", "?filter[period]=2026-01&filter[period]=2026-02": "filter[period]",
		"?filter[month]=2026-01": "filter[month]", "?page=2": "page",
	} {
		r := usage(s, q, bearer(other.token)...)
		if r.status != 400 || r.errorCode(t) != "invalid_parameter" || r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"] != field {
			t.Errorf("usage%s: %d %s, want 400 on %s", q, r.status, r.body, field)
		}
	}
	// A past month had no requests.
	prev := time.Now().UTC().AddDate(0, -1, 0)
	prev = time.Date(prev.Year(), prev.Month(), 1, 0, 0, 0, 0, time.UTC)
	p := read(s, "?filter[period]="+prev.Format("2006-01"), bearer(other.token)...)
	if p.total != 0 || len(p.byToken) != 0 || p.attrs["period_start"] != prev.Format(time.RFC3339) || p.attrs["period_end"] != prev.AddDate(0, 1, 0).Format(time.RFC3339) {
		t.Fatalf("previous month: %v", p.attrs)
	}

	// A master token reads no shop's usage.
	ent := newTenant(t, dir, "usage-ent.example.com", "enterprise", "customers:read")
	mt := cli(t, dir, "tokens", "create-master", "--account", ent.accountID)
	r := usage(s, "", "Authorization", "Bearer "+mt["token"].(string), "X-Wait-For-Position", fmt.Sprint(mt["position"]))
	if r.status != 403 || r.errorCode(t) != "scope_required" {
		t.Fatalf("master token: %d %s", r.status, r.body)
	}

	// After a restart the counts are the saved ones (nothing in memory).
	s.stop()
	s2 := startServerWith(t, dir, func(c *Config) { c.RateAgency = perMinute })
	check("after restart", read(s2, "", "X-API-Key", key), wantA, wantB, wantC)
	check("after restart, own call counted", read(s2, "", bearer(tokB)...), wantA, wantB+1, wantC)
}
