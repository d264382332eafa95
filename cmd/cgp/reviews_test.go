package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/reviews"
	"github.com/cgp-platform/cgp/sending"
)

// reviewOrder is the orders fixture of topic for an order of a customer,
// with the buyer's e-mail.
func reviewOrder(t *testing.T, topic string, id, customer int64, email string) []byte {
	b := editJSON(t, fixture(t, topic), func(m map[string]any) {
		m["id"], m["name"] = id, "#"+strconv.FormatInt(id, 10)
		m["customer"].(map[string]any)["id"] = customer
	})
	return bytes.ReplaceAll(b, []byte("noor.haddad@example.com"), []byte(email))
}

// reviewBody is a submission's body.
func reviewBody(attrs map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"data": map[string]any{"attributes": attrs}})
	return b
}

// TestProductReviews (issue 20, points 1–2): a buyer of a fulfilled order
// reviews its product with the review token of the review request: the
// review is verified and published at once, and the storefront reads it
// from an allowed origin with its summary, ETag and 304; a buyer whose
// order is not fulfilled is not verified and waits for moderation; a
// second review of the product is 409; the honeypot records nothing; a
// flood from one address is stopped while another address gets through;
// erasing the reviewer removes their name, e-mail and texts from every
// file of the data directory while their rating stays counted.
func TestProductReviews(t *testing.T) {
	dir := t.TempDir()
	var tokens atomic.Pointer[reviews.Tokens]
	s := startServerWith(t, dir, func(c *Config) {
		c.TrustedProxies = []string{"127.0.0.1/32"}
		c.Test.Sending.Opened = func(_ *sending.Service, tk reviews.Tokens) { tokens.Store(&tk) }
	})
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "reviews.example.com", "agency", "*")
	waitForToken(t, s, tn)
	rm := readModels(t, dir)

	const product = int64(8123456789012) // the Linen Shirt of the fixtures
	reviewer := struct {
		ext, order int64
		email      string
	}{ext: 7301001, order: 93010001, email: "quorvilde.brantisham@review-erasure.example"}
	name, title, text := "Quorvilde Brantisham", "Zentrovial linen", "Softer than Mirlanthe cotton, fits well"
	// The reviewer's order is fulfilled; the second buyer's is not; the
	// third's is (the normal buyer of the flood).
	s.deliver(t, tn, "orders/create", "rv-o-1", reviewOrder(t, "orders/create", reviewer.order, reviewer.ext, reviewer.email))
	s.deliver(t, tn, "orders/fulfilled", "rv-f-1", reviewOrder(t, "orders/fulfilled", reviewer.order, reviewer.ext, reviewer.email))
	s.deliver(t, tn, "orders/create", "rv-o-2", reviewOrder(t, "orders/create", 93010002, 7301002, "second.buyer@example.com"))
	s.deliver(t, tn, "orders/create", "rv-o-3", reviewOrder(t, "orders/create", 93010003, 7301003, "third.buyer@example.com"))
	last := s.deliver(t, tn, "orders/fulfilled", "rv-f-3", reviewOrder(t, "orders/fulfilled", 93010003, 7301003, "third.buyer@example.com"))
	waitProjected(t, rm, "commerce", last)

	origin := "https://reviews.example.com"
	submitFrom := func(ip string, attrs map[string]any) response {
		t.Helper()
		r := do(t, http.MethodPost, s.base+"/api/public/reviews", reviewBody(attrs), map[string]string{"Content-Type": "application/json",
			"Origin": origin, "X-Shop-Domain": tn.domain, "X-Forwarded-For": ip})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	tk := tokens.Load()
	if tk == nil {
		t.Fatal("the sending side did not hand over the review tokens")
	}
	token := tk.Token(reviews.Claims{ShopID: tn.shopID, CustomerID: domain.CustomerIDFromExternal(tn.shopID, fmt.Sprint(reviewer.ext)),
		OrderID: domain.OrderIDFromExternal(tn.shopID, fmt.Sprint(reviewer.order)), Expires: time.Now().Add(time.Hour)})
	verified := map[string]any{"product_id": fmt.Sprint(product), "rating": 5, "title": "<b>" + title + "</b>",
		"body": text + " see https://spam.example.net/buy and www.spam.example.org", "author_name": name,
		"author_email": reviewer.email, "review_token": token}
	r := submitFrom("10.0.0.1", verified)
	if r.status != http.StatusAccepted {
		t.Fatalf("verified review: %d %s", r.status, r.body)
	}
	at := attrs(r.json(t)["data"].(map[string]any))
	if at["status"] != "published" || at["verified"] != true || bytes.Contains(r.body, []byte(reviewer.email)) {
		t.Fatalf("verified review answer: %s", r.body)
	}
	reviewPos := r.position(t)
	if r := submitFrom("10.0.0.2", verified); r.status != http.StatusConflict || r.errorCode(t) != "conflict" {
		t.Fatalf("second review of the product: %d %s", r.status, r.body)
	}
	// Not fulfilled: not verified, pending.
	unverified := map[string]any{"product_id": fmt.Sprint(product), "rating": 5, "body": "Arrived yesterday", "author_name": "Second",
		"author_email": "second.buyer@example.com", "order_id": "93010002"}
	if r := submitFrom("10.0.0.3", unverified); r.status != http.StatusAccepted ||
		attrs(r.json(t)["data"].(map[string]any))["status"] != "pending" || attrs(r.json(t)["data"].(map[string]any))["verified"] != false {
		t.Fatalf("unverified review: %d %s", r.status, r.body)
	}
	ip := 0
	for field, change := range map[string]map[string]any{
		"order_id":     {"review_token": nil, "order_id": "93010003", "author_email": "not.the.buyer@example.com"},
		"review_token": {"review_token": token + "x"},
		"rating":       {"rating": 6},
		"body":         {"body": "<a href='x'></a>"},
		"author_email": {"author_email": "nobody"},
		"product_id":   {"product_id": "shirt"},
	} {
		a := map[string]any{}
		for k, v := range verified {
			a[k] = v
		}
		for k, v := range change {
			if v == nil {
				delete(a, k)
			} else {
				a[k] = v
			}
		}
		ip++
		r := submitFrom(fmt.Sprintf("10.0.1.%d", ip), a)
		if r.status != http.StatusUnprocessableEntity || r.errorCode(t) != "validation_failed" ||
			r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"] != field {
			t.Errorf("%s: %d %s", field, r.status, r.body)
		}
	}

	// The storefront reads the published review and its summary.
	list := func(query string, h map[string]string) response {
		t.Helper()
		h["Origin"], h["X-Shop-Domain"] = origin, tn.domain
		r := do(t, http.MethodGet, s.base+"/api/public/reviews"+query, nil, h)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	r = list("?product_id="+fmt.Sprint(product), map[string]string{"X-Wait-For-Position": reviewPos})
	if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != origin || r.header.Get("Cache-Control") != "public, max-age=60" {
		t.Fatalf("list: %d %v %s", r.status, r.header, r.body)
	}
	doc := r.json(t)
	data := doc["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("list has %d reviews, want the published one: %s", len(data), r.body)
	}
	ra := attrs(data[0].(map[string]any))
	if ra["author_name"] != name || ra["title"] != title || ra["body"] != text+" see and" || ra["verified"] != true || ra["rating"] != float64(5) {
		t.Fatalf("published review: %v", ra)
	}
	if bytes.Contains(r.body, []byte(reviewer.email)) || bytes.Contains(r.body, []byte("Arrived yesterday")) {
		t.Fatalf("the list shows an e-mail or a pending review: %s", r.body)
	}
	meta := doc["meta"].(map[string]any)
	sum := meta["summary"].(map[string]any)
	if sum["count"] != float64(1) || sum["average_rating"] != float64(5) || sum["histogram"].(map[string]any)["5"] != float64(1) {
		t.Fatalf("summary: %v", sum)
	}
	if ld := meta["json_ld"].(map[string]any); ld["@type"] != "AggregateRating" || ld["reviewCount"] != float64(1) {
		t.Fatalf("json_ld: %v", ld)
	}
	etag := r.header.Get("ETag")
	if r := list("?product_id="+fmt.Sprint(product), map[string]string{"If-None-Match": etag}); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Fatalf("If-None-Match: %d %s", r.status, r.body)
	}
	// The shop-wide list has it too; a bad sort is 400.
	if r := list("?sort=-rating&limit=100", map[string]string{}); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(name)) {
		t.Fatalf("shop-wide list: %d %s", r.status, r.body)
	}
	if r := list("?sort=author_name", map[string]string{}); r.status != http.StatusBadRequest {
		t.Fatalf("unknown sort: %d %s", r.status, r.body)
	}

	// Pages: a cursor continues the list; a cursor of another product's
	// list is refused. A foreign origin is refused without CORS headers;
	// the preflight admits the shop's origin for GET and POST; a public
	// key reads without an origin.
	if r := list("?limit=1&sort=-rating", map[string]string{}); r.status != http.StatusOK || r.json(t)["pagination"].(map[string]any)["has_next"] != false {
		t.Fatalf("one review, one page: %d %s", r.status, r.body)
	}
	foreign := do(t, http.MethodGet, s.base+"/api/public/reviews", nil, map[string]string{"Origin": "https://evil.example.net", "X-Shop-Domain": tn.domain})
	v.ValidateResponse(t, foreign.req, foreign.resp, foreign.body)
	if foreign.status != http.StatusForbidden || foreign.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign origin: %d %v", foreign.status, foreign.header)
	}
	pre := do(t, http.MethodOptions, s.base+"/api/public/reviews", nil, map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST"})
	v.ValidateResponse(t, pre.req, pre.resp, pre.body)
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != origin || pre.header.Get("Access-Control-Allow-Methods") != "GET, POST" {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	pk := cli(t, dir, "public-keys", "create", "--shop", tn.shopID)
	byKey := do(t, http.MethodGet, s.base+"/api/public/reviews?product_id="+fmt.Sprint(product), nil, map[string]string{"X-Public-Key": pk["token"].(string),
		"X-Wait-For-Position": fmtAny(pk["position"])})
	v.ValidateResponse(t, byKey.req, byKey.resp, byKey.body)
	if byKey.status != http.StatusOK || !bytes.Contains(byKey.body, []byte(name)) {
		t.Fatalf("public key: %d %s", byKey.status, byKey.body)
	}

	// The honeypot: answered as accepted, nothing recorded.
	before := len(readLog(t, dir))
	bot := map[string]any{"product_id": fmt.Sprint(product), "rating": 5, "body": "great", "author_name": "Bot",
		"author_email": "bot@example.com", "order_id": "93010003", "website": "https://spam.example.net"}
	if r := submitFrom("10.0.2.1", bot); r.status != http.StatusAccepted {
		t.Fatalf("honeypot: %d %s", r.status, r.body)
	}
	if after := len(readLog(t, dir)); after != before {
		t.Fatalf("the honeypot recorded %d events", after-before)
	}

	// A flood from one address is stopped; another address gets through.
	limited := 0
	for i := 0; i < 1000; i++ {
		r := submitFrom("10.6.6.6", bot)
		if r.status == http.StatusTooManyRequests {
			if r.errorCode(t) != "rate_limited" || r.header.Get("Retry-After") == "" {
				t.Fatalf("429 without rate_limited and Retry-After: %v %s", r.header, r.body)
			}
			limited++
		}
	}
	if limited < 990 {
		t.Fatalf("only %d of 1000 flooding submissions were refused", limited)
	}
	// The shop lowers its auto-publish rule to 3 stars (verified still
	// required): the normal buyer's verified 3-star review is published
	// at once.
	admin := func(method, path string, body []byte) response {
		t.Helper()
		r := do(t, method, s.base+path, body, map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	if r := admin(http.MethodGet, "/api/v1/reviews/settings", nil); r.status != http.StatusOK ||
		!bytes.Contains(r.body, []byte(`"auto_publish":{"enabled":true,"require_verified":true,"min_rating":4}`)) {
		t.Fatalf("default settings: %d %s", r.status, r.body)
	}
	if r := admin(http.MethodPatch, "/api/v1/reviews/settings", reviewBody(map[string]any{"auto_publish": map[string]any{"min_rating": 9}})); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("min_rating 9: %d %s", r.status, r.body)
	}
	set := admin(http.MethodPatch, "/api/v1/reviews/settings", reviewBody(map[string]any{"auto_publish": map[string]any{"min_rating": 3}}))
	if set.status != http.StatusOK || !bytes.Contains(set.body, []byte(`"min_rating":3`)) || !bytes.Contains(set.body, []byte(`"require_verified":true`)) {
		t.Fatalf("set the rule: %d %s", set.status, set.body)
	}
	normal := map[string]any{"product_id": fmt.Sprint(product), "rating": 3, "body": "Good enough", "author_name": "Third",
		"author_email": "third.buyer@example.com", "order_id": "93010003"}
	if r := submitFrom("10.0.3.1", normal); r.status != http.StatusAccepted || attrs(r.json(t)["data"].(map[string]any))["status"] != "published" {
		t.Fatalf("a normal buyer during the flood, under the 3-star rule: %d %s", r.status, r.body)
	}

	// Moderation: the pending review is listed for the moderators (without
	// any e-mail), published, and then shows on the storefront; the
	// merchant replies to the verified one; a rejection needs a reason.
	pendingList := admin(http.MethodGet, "/api/v1/reviews?filter[status]=pending&limit=100", nil)
	pend := pendingList.json(t)["data"].([]any)
	if pendingList.status != http.StatusOK || len(pend) != 1 || bytes.Contains(pendingList.body, []byte("@example.com")) {
		t.Fatalf("pending reviews: %d %s", pendingList.status, pendingList.body)
	}
	var secondID string
	for _, p := range pend {
		if attrs(p.(map[string]any))["author_name"] == "Second" {
			secondID = p.(map[string]any)["id"].(string)
		}
	}
	if r := admin(http.MethodPost, "/api/v1/reviews/"+secondID+"/publish", []byte(`{"data":{"attributes":{}}}`)); r.status != http.StatusOK ||
		attrs(r.json(t)["data"].(map[string]any))["status"] != "published" {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	verifiedID := at["product_id"].(string)
	verifiedID = domain.ReviewID(tn.shopID, domain.CustomerIDFromExternal(tn.shopID, fmt.Sprint(reviewer.ext)), verifiedID)
	if r := admin(http.MethodPost, "/api/v1/reviews/"+verifiedID+"/reply", reviewBody(map[string]any{"body": "Thank you!"})); r.status != http.StatusOK {
		t.Fatalf("reply: %d %s", r.status, r.body)
	}
	if r := admin(http.MethodPost, "/api/v1/reviews/"+secondID+"/reject", reviewBody(map[string]any{"reason": " "})); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("reject without a reason: %d %s", r.status, r.body)
	}
	if r := admin(http.MethodPost, "/api/v1/reviews/rev_unknown/publish", nil); r.status != http.StatusNotFound {
		t.Fatalf("unknown review: %d %s", r.status, r.body)
	}
	eventually(t, 20*time.Second, "the published and replied reviews on the storefront", func() bool {
		r := list("?product_id="+fmt.Sprint(product), map[string]string{})
		return r.status == http.StatusOK && bytes.Contains(r.body, []byte("Arrived yesterday")) && bytes.Contains(r.body, []byte("Thank you!"))
	})

	// The CLI twins: a reply, the list, the rule (a flag left out keeps
	// its setting).
	cli(t, dir, "reviews", "reply", "--shop", tn.shopID, "--review", secondID, "--body", "Merci beaucoup")
	eventually(t, 20*time.Second, "the CLI's reply in the CLI's list", func() bool {
		out := cli(t, dir, "reviews", "list", "--shop", tn.shopID, "--status", "published")
		b, _ := json.Marshal(out["reviews"])
		return len(out["reviews"].([]any)) == 3 && bytes.Contains(b, []byte("Merci beaucoup")) && !bytes.Contains(b, []byte("@example.com"))
	})
	rule := cli(t, dir, "reviews", "settings", "--shop", tn.shopID, "--min-rating", "5")["auto_publish"].(map[string]any)
	if rule["min_rating"] != float64(5) || rule["require_verified"] != true || rule["enabled"] != true {
		t.Fatalf("cgp reviews settings: %v", rule)
	}

	first := list("?product_id="+fmt.Sprint(product)+"&limit=1", map[string]string{})
	next, _ := first.json(t)["pagination"].(map[string]any)["next_cursor"].(string)
	if first.status != http.StatusOK || next == "" {
		t.Fatalf("first page: %d %s", first.status, first.body)
	}
	id := func(r response) string { return r.json(t)["data"].([]any)[0].(map[string]any)["id"].(string) }
	if r := list("?product_id="+fmt.Sprint(product)+"&limit=1&cursor="+url.QueryEscape(next), map[string]string{}); r.status != http.StatusOK ||
		len(r.json(t)["data"].([]any)) != 1 || id(r) == id(first) {
		t.Fatalf("second page: %d %s", r.status, r.body)
	}
	if r := list("?product_id=1&limit=1&cursor="+url.QueryEscape(next), map[string]string{}); r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_cursor" {
		t.Fatalf("another product's cursor: %d %s", r.status, r.body)
	}

	// Erasing the reviewer: no byte of their name, e-mail or texts is
	// left, their rating still counts.
	redact := []byte(fmt.Sprintf(`{"shop_id":59000000,"shop_domain":%q,"customer":{"id":%d,"email":%q,"phone":null},"orders_to_redact":[%d]}`,
		tn.domain, reviewer.ext, reviewer.email, reviewer.order))
	if r := s.webhook(t, tn, "customers/redact", "rv-redact-1", redact); r.status != http.StatusOK {
		t.Fatalf("customers/redact: %d %s", r.status, r.body)
	}
	values := []string{reviewer.email, name, title, "Mirlanthe"}
	eventually(t, 30*time.Second, "the reviewer's data erased from every file", func() bool {
		hits, _, _, err := app.SearchDataDir(dir, values)
		return err == nil && len(hits) == 0
	})
	assertNowhere(t, "after the reviewer's erasure", dir, s.logs.String(), values)
	r = list("?product_id="+fmt.Sprint(product), map[string]string{})
	doc = r.json(t)
	if r.status != http.StatusOK || len(doc["data"].([]any)) != 2 || doc["meta"].(map[string]any)["summary"].(map[string]any)["count"] != float64(3) {
		t.Fatalf("after the erasure: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), name) {
		t.Fatal("the erased name is still listed")
	}

	// A replay rebuilds the same: nothing of the reviewer, the rating
	// still counted.
	s.stop()
	replayCLI(t, dir)
	assertNowhere(t, "after a replay", dir, s.logs.String(), values)
	s = startServerWith(t, dir, func(c *Config) { c.TrustedProxies = []string{"127.0.0.1/32"} })
	r = list("?product_id="+fmt.Sprint(product), map[string]string{})
	if doc := r.json(t); r.status != http.StatusOK || len(doc["data"].([]any)) != 2 ||
		doc["meta"].(map[string]any)["summary"].(map[string]any)["count"] != float64(3) || bytes.Contains(r.body, []byte(name)) {
		t.Fatalf("after a replay: %d %s", r.status, r.body)
	}
}
