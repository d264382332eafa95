package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

const httpapiDefaultLimit = 25

// testOrder is an orders/create delivery made from the fixture.
type testOrder struct {
	ext         int64  // the platform's order id
	customer    string // the platform's customer id
	created     string // RFC 3339
	total       string // decimal
	financial   string
	fulfillment string // "" for none (null)
}

func (o testOrder) body(t *testing.T) []byte {
	t.Helper()
	b := fixture(t, shopify.TopicOrdersCreate)
	b = withField(t, b, "id", "5984321190041", strconv.FormatInt(o.ext, 10))
	b = withField(t, b, "created_at", `"2026-03-09T10:58:12+01:00"`, strconv.Quote(o.created))
	b = withField(t, b, "updated_at", `"2026-03-09T10:58:14+01:00"`, strconv.Quote(o.created))
	b = withField(t, b, "total_price", `"114.30"`, strconv.Quote(o.total))
	b = withField(t, b, "financial_status", `"pending"`, strconv.Quote(o.financial))
	if o.fulfillment != "" {
		b = withField(t, b, "fulfillment_status", "null", strconv.Quote(o.fulfillment))
	}
	if o.customer != "" {
		b = withField(t, b, "id", "7064055069303700841", o.customer)
	}
	return b
}

// deliverOrder posts the order as orders/create and returns the position.
func (s *testServer) deliverOrder(t *testing.T, tn tenant, o testOrder) uint64 {
	t.Helper()
	return s.deliver(t, tn, shopify.TopicOrdersCreate, fmt.Sprintf("dlv-ord-%d", o.ext), o.body(t))
}

// pageWalker walks an order list with cursors, validating every page.
type pageWalker struct {
	t     *testing.T
	s     *testServer
	v     *openapitest.Validator
	token string
	wait  uint64
	// between runs after each page (e.g. to deliver more orders).
	between func(page int)
}

// walk follows next_cursor from path?query to the last page and returns
// the order resources in the order served.
func (w pageWalker) walk(path, query string) []map[string]any {
	t := w.t
	t.Helper()
	var out []map[string]any
	next := path + "?" + query
	for page := 0; next != ""; page++ {
		if page > 200 {
			t.Fatalf("walk of %s?%s does not end", path, query)
		}
		r := w.s.get(t, next, w.token, "X-Wait-For-Position", strconv.FormatUint(w.wait, 10))
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, r.status, r.body)
		}
		w.v.ValidateResponse(t, r.req, r.resp, r.body)
		doc := r.json(t)
		for _, d := range doc["data"].([]any) {
			out = append(out, d.(map[string]any))
		}
		pg := doc["pagination"].(map[string]any)
		next = ""
		if pg["has_next"] == true {
			next = path + "?" + query + "&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
		}
		if w.between != nil {
			w.between(page)
		}
	}
	return out
}

func attr(res map[string]any, name string) any { return res["attributes"].(map[string]any)[name] }

func ids(rs []map[string]any) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r["id"].(string)
	}
	return out
}

func TestOrdersSingleCustomerAndIsolation(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "orders-a.example.com", "agency", "orders:read,customers:read")
	other := newTenant(t, dir, "orders-b.example.com", "agency", "orders:read")
	tok := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read")
	noOrders := tenant{shopID: tn.shopID, token: tok["token"].(string), position: uint64(tok["position"].(float64))}
	for _, x := range []tenant{tn, other, noOrders} {
		waitForToken(t, s, x)
	}

	pos := s.deliverOrder(t, tn, testOrder{ext: 9001, customer: "501", created: "2026-05-01T10:00:00Z", total: "114.30", financial: "paid"})
	pos2 := s.deliverOrder(t, other, testOrder{ext: 9002, customer: "502", created: "2026-05-01T11:00:00Z", total: "20.00", financial: "paid"})
	orderID := domain.OrderIDFromExternal(tn.shopID, "9001")
	customerID := domain.CustomerIDFromExternal(tn.shopID, "501")
	wait := strconv.FormatUint(max(pos, pos2), 10)

	got := s.get(t, "/api/v1/orders/"+orderID, tn.token, "X-Wait-For-Position", wait)
	if got.status != http.StatusOK {
		t.Fatalf("GET order: %d %s", got.status, got.body)
	}
	v.ValidateResponse(t, got.req, got.resp, got.body)
	if st := got.header.Get("X-Service-Stability"); st != "stable" {
		t.Errorf("X-Service-Stability = %q", st)
	}
	data := got.json(t)["data"].(map[string]any)
	a := data["attributes"].(map[string]any)
	if data["id"] != orderID || data["type"] != "order" || a["name"] != "#1043" || a["total_price"] != 114.3 ||
		a["subtotal_price"] != 114.3 || a["total_tax"] != 19.84 || a["total_discounts"] != 10.0 || a["refunded"] != 0.0 ||
		a["currency"] != "EUR" || a["financial_status"] != "paid" || a["fulfillment_status"] != "unfulfilled" ||
		a["email"] != "noor.haddad@example.com" || a["customer_id"] != customerID || a["source_name"] != "web" ||
		a["created_at"] != "2026-05-01T10:00:00Z" || a["cancelled_at"] != nil || a["redacted"] != false {
		t.Fatalf("order = %s", got.body)
	}
	lines := a["line_items"].([]any)
	first := lines[0].(map[string]any)
	if len(lines) != 2 || first["sku"] != "LIN-SHIRT-M-SAND" || first["quantity"] != 2.0 || first["price"] != 59.9 ||
		lines[1].(map[string]any)["product_id"] != nil {
		t.Errorf("line_items = %v", lines)
	}
	if fmt.Sprint(a["discount_codes"]) != "[SPRING10]" || fmt.Sprint(a["tags"]) != "[first-order newsletter]" ||
		a["utm"].(map[string]any)["source"] != "newsletter" || a["click_ids"].(map[string]any)["gclid"] == nil {
		t.Errorf("codes %v tags %v utm %v clicks %v", a["discount_codes"], a["tags"], a["utm"], a["click_ids"])
	}
	rel := data["relationships"].(map[string]any)["customer"].(map[string]any)["links"].(map[string]any)["related"]
	if rel != "/api/v1/customers/"+customerID {
		t.Errorf("customer link = %v", rel)
	}

	// The customer's orders: the path its relationship links to (no
	// customers/create was delivered: the order makes the customer known).
	mine := s.get(t, "/api/v1/customers/"+customerID+"/orders", tn.token, "X-Wait-For-Position", wait)
	v.ValidateResponse(t, mine.req, mine.resp, mine.body)
	if mine.status != 200 || mine.header.Get("X-Service-Stability") != "beta" || len(mine.json(t)["data"].([]any)) != 1 {
		t.Fatalf("customer's orders: %d %s", mine.status, mine.body)
	}

	// Another shop's order and customer are not found; its list is its own.
	otherOrder := domain.OrderIDFromExternal(other.shopID, "9002")
	otherCustomer := domain.CustomerIDFromExternal(other.shopID, "502")
	for _, path := range []string{"/api/v1/orders/" + otherOrder, "/api/v1/customers/" + otherCustomer + "/orders",
		"/api/v1/orders/ord_doesnotexist", "/api/v1/customers/cus_doesnotexist/orders"} {
		r := s.get(t, path, tn.token, "X-Wait-For-Position", wait)
		if r.status != http.StatusNotFound || r.errorCode(t) != "not_found" {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
	if r := s.get(t, "/api/v1/orders/"+otherOrder, other.token); r.status != 200 {
		t.Errorf("own order: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/api/v1/orders", other.token); fmt.Sprint(ids(toMaps(r.json(t)["data"]))) != "["+otherOrder+"]" {
		t.Errorf("other shop's list: %s", r.body)
	}

	// A token without orders:read gets scope_required everywhere.
	for _, path := range []string{"/api/v1/orders", "/api/v1/orders/" + orderID, "/api/v1/customers/" + customerID + "/orders"} {
		r := s.get(t, path, noOrders.token)
		if r.status != http.StatusForbidden || r.errorCode(t) != "scope_required" {
			t.Errorf("GET %s without orders:read: %d %s", path, r.status, r.body)
			continue
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if req := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["required_scope"]; req != "orders:read" {
			t.Errorf("required_scope = %v", req)
		}
	}
	if r := s.get(t, "/api/v1/orders/"+orderID, tn.token, "X-Wait-For-Position", "soon"); r.status != 400 || r.errorCode(t) != "invalid_parameter" {
		t.Errorf("malformed X-Wait-For-Position: %d %s", r.status, r.body)
	} else {
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
	if r := s.get(t, "/api/v1/orders", ""); r.status != http.StatusUnauthorized || r.errorCode(t) != "authentication_required" {
		t.Errorf("no token: %d %s", r.status, r.body)
	}
}

func toMaps(v any) []map[string]any {
	var out []map[string]any
	for _, x := range v.([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

func TestOrderListFiltersAndSorts(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "orders-list.example.com", "agency", "orders:read")
	waitForToken(t, s, tn)
	financial := []string{"paid", "pending", "refunded"}
	fulfillment := []string{"", "fulfilled", "partial", "fulfilled"}
	const n = 30
	var last uint64
	for i := range n {
		o := testOrder{ext: int64(7000 + i), customer: strconv.Itoa(600 + (i/3)%3),
			created: fmt.Sprintf("2026-06-%02dT%02d:00:00Z", 1+i/2, 8+i%2), total: fmt.Sprintf("%d.%02d", 10+(i*37)%50, i),
			financial: financial[i%3], fulfillment: fulfillment[i%4]}
		last = max(last, s.deliverOrder(t, tn, o))
	}
	w := pageWalker{t: t, s: s, v: v, token: tn.token, wait: last}

	all := w.walk("/api/v1/orders", "limit=5")
	if len(all) != n || len(slices.Compact(slices.Sorted(slices.Values(ids(all))))) != n {
		t.Fatalf("walk: %d orders (%d distinct), want %d", len(all), len(slices.Compact(slices.Sorted(slices.Values(ids(all))))), n)
	}
	checkOrder := func(name string, rs []map[string]any, key string, desc bool) {
		t.Helper()
		for i := 1; i < len(rs); i++ {
			a, b := fmt.Sprint(attr(rs[i-1], key)), fmt.Sprint(attr(rs[i], key))
			if key == "total_price" {
				x, y := attr(rs[i-1], key).(float64), attr(rs[i], key).(float64)
				if (desc && x < y) || (!desc && x > y) {
					t.Fatalf("%s: out of order at %d: %v then %v", name, i, x, y)
				}
				continue
			}
			if (desc && a < b) || (!desc && a > b) {
				t.Fatalf("%s: out of order at %d: %v then %v", name, i, a, b)
			}
		}
	}
	checkOrder("default -created_at", all, "created_at", true)
	for _, sort := range []string{"created_at", "-created_at", "updated_at", "-updated_at", "total_price", "-total_price"} {
		rs := w.walk("/api/v1/orders", "limit=7&sort="+sort)
		if len(rs) != n {
			t.Fatalf("sort=%s: %d orders", sort, len(rs))
		}
		checkOrder("sort="+sort, rs, strings.TrimPrefix(sort, "-"), strings.HasPrefix(sort, "-"))
	}

	count := func(query string, keep func(map[string]any) bool) {
		t.Helper()
		rs := w.walk("/api/v1/orders", query)
		want := 0
		for _, r := range all {
			if keep(r) {
				want++
			}
		}
		if len(rs) != want || want == 0 || want == n {
			t.Fatalf("%s: %d orders, want %d of %d", query, len(rs), want, n)
		}
		for _, r := range rs {
			if !keep(r) {
				t.Fatalf("%s returned %v", query, r)
			}
		}
	}
	cus := domain.CustomerIDFromExternal(tn.shopID, "601")
	count("filter[customer_id]="+cus, func(r map[string]any) bool { return attr(r, "customer_id") == cus })
	count("filter[financial_status]=refunded&limit=3", func(r map[string]any) bool { return attr(r, "financial_status") == "refunded" })
	count("filter[fulfillment_status]=unfulfilled", func(r map[string]any) bool { return attr(r, "fulfillment_status") == "unfulfilled" })
	count("filter[fulfillment_status]=fulfilled&sort=total_price&limit=2", func(r map[string]any) bool { return attr(r, "fulfillment_status") == "fulfilled" })
	count("filter[date_from]=2026-06-03&filter[date_to]=2026-06-05", func(r map[string]any) bool {
		c := attr(r, "created_at").(string)
		return c >= "2026-06-03" && c < "2026-06-06"
	})
	count("filter[date_from]=2026-06-10", func(r map[string]any) bool { return attr(r, "created_at").(string) >= "2026-06-10" })
	count("filter[date_to]=2026-06-01", func(r map[string]any) bool { return attr(r, "created_at").(string) < "2026-06-02" })
	count("filter[financial_status]=paid&filter[customer_id]="+cus, func(r map[string]any) bool {
		return attr(r, "financial_status") == "paid" && attr(r, "customer_id") == cus
	})
	mine := w.walk("/api/v1/customers/"+cus+"/orders", "limit=3&sort=-total_price&filter[financial_status]=paid")
	if len(mine) == 0 || len(mine) != len(w.walk("/api/v1/orders", "filter[financial_status]=paid&filter[customer_id]="+cus)) {
		t.Fatalf("customer's paid orders: %d", len(mine))
	}
	checkOrder("customer's orders by -total_price", mine, "total_price", true)

	if r := s.get(t, "/api/v1/orders", tn.token); len(r.json(t)["data"].([]any)) != httpapiDefaultLimit ||
		r.json(t)["pagination"].(map[string]any)["has_next"] != true {
		t.Errorf("default limit: %d orders", len(r.json(t)["data"].([]any)))
	}
	if r := s.get(t, "/api/v1/orders?limit=100", tn.token); len(r.json(t)["data"].([]any)) != n || r.json(t)["pagination"].(map[string]any)["has_next"] != false {
		t.Errorf("limit=100: %s", r.body)
	}
	firstPage := s.get(t, "/api/v1/orders?limit=2", tn.token).json(t)
	cursor := firstPage["pagination"].(map[string]any)["next_cursor"].(string)
	for _, c := range []struct{ path, query, code, field string }{
		{"/api/v1/orders", "limit=101", "invalid_parameter", "limit"},
		{"/api/v1/orders", "limit=0", "invalid_parameter", "limit"},
		{"/api/v1/orders", "sort=email", "invalid_parameter", "sort"},
		{"/api/v1/orders", "sort=-name", "invalid_parameter", "sort"},
		{"/api/v1/orders", "filter[email]=x", "invalid_parameter", "filter[email]"},
		{"/api/v1/orders", "filter[financial_status]=free", "invalid_parameter", "filter[financial_status]"},
		{"/api/v1/orders", "filter[fulfillment_status]=shipped", "invalid_parameter", "filter[fulfillment_status]"},
		{"/api/v1/orders", "filter[date_from]=2026-13-01", "invalid_parameter", "filter[date_from]"},
		{"/api/v1/orders", "filter[date_from]=2026-06-05&filter[date_to]=2026-06-04", "invalid_parameter", "filter[date_to]"},
		{"/api/v1/orders", "include=line_items", "invalid_parameter", "include"},
		{"/api/v1/customers/" + cus + "/orders", "filter[customer_id]=" + cus, "invalid_parameter", "filter[customer_id]"},
		{"/api/v1/orders", "sort=total_price&cursor=" + url.QueryEscape(cursor), "invalid_cursor", ""},
		{"/api/v1/orders", "filter[financial_status]=paid&cursor=" + url.QueryEscape(cursor), "invalid_cursor", ""},
		{"/api/v1/customers/" + cus + "/orders", "cursor=" + url.QueryEscape(cursor), "invalid_cursor", ""},
		{"/api/v1/orders", "cursor=garbage", "invalid_cursor", ""},
	} {
		r := s.get(t, c.path+"?"+c.query, tn.token)
		if r.status != http.StatusBadRequest || r.errorCode(t) != c.code {
			t.Errorf("%s?%s: %d %s", c.path, c.query, r.status, r.body)
			continue
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if c.field != "" {
			if f := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"]; f != c.field {
				t.Errorf("%s: details.field = %v, want %s", c.query, f, c.field)
			}
		}
	}
}

// A cursor walk finds every order that existed when it began exactly once,
// while orders keep arriving between its pages (older and newer ones).
func TestOrderCursorWalkWhileOrdersArrive(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "orders-walk.example.com", "agency", "orders:read")
	waitForToken(t, s, tn)
	const n = 40
	var last uint64
	existing := map[string]bool{}
	for i := range n {
		o := testOrder{ext: int64(8000 + i), customer: "700", created: fmt.Sprintf("2026-07-%02dT10:00:00Z", 2+i%5), // ties across pages
			total: "10.00", financial: "paid"}
		last = max(last, s.deliverOrder(t, tn, o))
		existing[domain.OrderIDFromExternal(tn.shopID, strconv.Itoa(8000+i))] = true
	}
	for _, sort := range []string{"created_at", "-created_at"} {
		t.Run(sort, func(t *testing.T) {
			arrived := 0
			w := pageWalker{t: t, s: s, v: v, token: tn.token, wait: last, between: func(page int) {
				// One older, one newer than anything so far, one in the
				// middle of the range, between every two pages.
				base := 9000 + 100*len(sort) + 3*page
				for j, created := range []string{"2026-07-01T00:00:00Z", "2026-08-01T00:00:00Z", fmt.Sprintf("2026-07-%02dT12:30:00Z", 2+page%25)} {
					s.deliverOrder(t, tn, testOrder{ext: int64(base + j), customer: "701", created: created, total: "5.00", financial: "pending"})
					arrived++
				}
			}}
			got := w.walk("/api/v1/orders", "limit=6&sort="+sort)
			seen := map[string]int{}
			for _, id := range ids(got) {
				seen[id]++
				if seen[id] > 1 {
					t.Fatalf("order %s served twice", id)
				}
			}
			for id := range existing {
				if seen[id] != 1 {
					t.Fatalf("pre-existing order %s served %d times", id, seen[id])
				}
			}
			if arrived == 0 {
				t.Fatal("no order arrived during the walk")
			}
		})
	}
}
