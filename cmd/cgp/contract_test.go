package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/readapi"
)

// The admin API contract: one row per row of the specification's admin
// endpoint table (section "Admin API (bearer token, required scope in the
// last column)") plus the beta routes we add, each proven over real HTTP
// on a shop seeded through the real surfaces: the envelope, the scope (403
// scope_required naming it; 401 without a token), X-Service-Stability,
// the rate-limit headers, the OpenAPI document, and for every list the
// generic list rules (limit, unknown filter and sort, every allow-listed
// sort and filter, cursors bound to their query, a walk that serves every
// row once). Deep scenarios live in the resource tests; each row here
// checks one business rule of its resource.

// Scopes of the rows that are not admin scopes.
const (
	scopeMaster = "master" // a master token (Enterprise)
	scopeAny    = "any"    // any valid token
)

type contractRow struct {
	method, path string // as in the specification's table
	url          func(f *contractFixture) string
	body         func(f *contractFixture) string
	scope        string
	beta         bool
	status       int
	list         *listContract
	include      []includeCase
	rule         func(t *testing.T, f *contractFixture)
}

// listContract is what the generic list rules need to know of a list.
type listContract struct {
	// sorts maps every allow-listed sort field to the attribute it orders
	// by.
	sorts       map[string]string
	defaultSort string
	filters     []filterCase
	// expect are the ids a walk must serve exactly once; nil: count rows,
	// each once.
	expect func(f *contractFixture) []string
	count  int
}

// filterCase is one allow-listed filter with a value and what every row it
// keeps satisfies.
type filterCase struct {
	query string
	holds func(row map[string]any) bool
	// narrows: the seeded rows include some the filter leaves out.
	narrows bool
}

// includeCase is one include value of the row.
type includeCase struct {
	value, rel, typ string
	toMany          bool
	// key gives the id of the related resource of a row (to-one), or ""
	// for a row without one.
	key func(row map[string]any) string
}

func path(p string) func(*contractFixture) string { return func(*contractFixture) string { return p } }

func attrIs(name, want string) func(map[string]any) bool {
	return func(row map[string]any) bool { return fmt.Sprint(attr(row, name)) == want }
}

func strAttr(name string) func(map[string]any) string {
	return func(row map[string]any) string { s, _ := attr(row, name).(string); return s }
}

func orderFilters(withCustomer bool) []filterCase {
	fs := []filterCase{
		{query: "filter[financial_status]=refunded", holds: attrIs("financial_status", "refunded"), narrows: true},
		{query: "filter[fulfillment_status]=fulfilled", holds: attrIs("fulfillment_status", "fulfilled"), narrows: true},
		{query: "filter[date_from]=2026-03-10", holds: func(r map[string]any) bool { return attr(r, "created_at").(string) >= "2026-03-10" }, narrows: true},
		{query: "filter[date_to]=2026-03-10", holds: func(r map[string]any) bool { return attr(r, "created_at").(string) < "2026-03-11" }, narrows: true},
	}
	if withCustomer {
		fs = append(fs, filterCase{query: "filter[customer_id]=CUSTOMER", holds: nil, narrows: true})
	}
	return fs
}

var orderSortAttrs = map[string]string{"created_at": "created_at", "updated_at": "updated_at", "total_price": "total_price"}

// creditedTo: an attribution record has a touch of the channel.
func creditedTo(channel string) func(map[string]any) bool {
	return func(r map[string]any) bool {
		models, _ := attr(r, "models").(map[string]any)
		for _, credits := range models {
			for _, c := range toMaps(credits) {
				if c["channel"] == channel {
					return true
				}
			}
		}
		return false
	}
}

func contractRows() []contractRow {
	customerInclude := []includeCase{{value: "customer", rel: "customer", typ: "customer", key: strAttr("customer_id")}}
	return []contractRow{
		{method: "GET", path: "/api/v1/decision-intelligence/runs", url: path("/api/v1/decision-intelligence/runs"), scope: "analytics:read", status: 200,
			list: &listContract{sorts: map[string]string{"started_at": "started_at"}, defaultSort: "-started_at",
				filters: []filterCase{{query: "filter[status]=completed", holds: attrIs("status", "completed")}},
				expect:  func(f *contractFixture) []string { return f.runs }}},
		{method: "GET", path: "/api/v1/decision-intelligence/runs/{run_id}", url: func(f *contractFixture) string { return "/api/v1/decision-intelligence/runs/" + f.runs[0] },
			scope: "analytics:read", status: 200, rule: ruleRunOfAnotherShop},
		{method: "GET", path: "/api/v1/seo-intelligence/keywords", url: path("/api/v1/seo-intelligence/keywords"), scope: "analytics:read", status: 200,
			list: &listContract{sorts: map[string]string{"position": "position", "change": "change", "search_volume": "search_volume", "keyword": "keyword"},
				defaultSort: "position",
				filters:     []filterCase{{query: "filter[keyword]=Keyword%20%2003", holds: attrIs("keyword", "keyword 03"), narrows: true}},
				expect:      func(f *contractFixture) []string { return f.keywords }}},
		{method: "GET", path: "/api/v1/seo-intelligence/keywords/{kw_id}", url: func(f *contractFixture) string { return "/api/v1/seo-intelligence/keywords/" + f.keywords[0] },
			scope: "analytics:read", status: 200, rule: ruleKeywordChange},
		{method: "GET", path: "/api/v1/customers", url: path("/api/v1/customers"), scope: "customers:read", status: 200,
			list: &listContract{sorts: map[string]string{"created_at": "created_at", "last_order_at": "last_order_at", "total_spent": "total_spent"},
				defaultSort: "-created_at",
				filters:     []filterCase{{query: "filter[lifecycle_stage]=prospect", holds: attrIs("lifecycle_stage", "prospect"), narrows: true}},
				expect:      func(f *contractFixture) []string { return f.customers }}},
		{method: "GET", path: "/api/v1/customers/{customer_id}", url: func(f *contractFixture) string { return "/api/v1/customers/" + f.customers[1] },
			scope: "customers:read", status: 200},
		{method: "PATCH", path: "/api/v1/customers/{customer_id}", url: func(f *contractFixture) string { return "/api/v1/customers/" + f.customers[2] },
			body: func(*contractFixture) string { return `{"data":{"attributes":{"tags":["vip","contract"]}}}` }, scope: "customers:write", status: 200,
			rule: ruleCustomerTags},
		{method: "GET", path: "/api/v1/orders", url: path("/api/v1/orders"), scope: "orders:read", status: 200, include: customerInclude,
			list: &listContract{sorts: orderSortAttrs, defaultSort: "-created_at", filters: orderFilters(true),
				expect: func(f *contractFixture) []string { return f.orders }}},
		{method: "GET", path: "/api/v1/orders/{order_id}", url: func(f *contractFixture) string { return "/api/v1/orders/" + f.orders[0] },
			scope: "orders:read", status: 200, include: customerInclude},
		{method: "GET", path: "/api/v1/attribution", url: path("/api/v1/attribution"), scope: "attribution:read", status: 200,
			list: &listContract{sorts: map[string]string{"ordered_at": "ordered_at"}, defaultSort: "-ordered_at",
				filters: []filterCase{
					{query: "filter[date_from]=2026-03-10", holds: func(r map[string]any) bool { return attr(r, "ordered_at").(string) >= "2026-03-10" }, narrows: true},
					{query: "filter[date_to]=2026-03-10", holds: func(r map[string]any) bool { return attr(r, "ordered_at").(string) < "2026-03-11" }, narrows: true},
					{query: "filter[channel]=paid_search", holds: creditedTo("paid_search")}},
				expect: func(f *contractFixture) []string { return f.orders }}},
		{method: "GET", path: "/api/v1/campaigns", url: path("/api/v1/campaigns"), scope: "campaigns:read", status: 200,
			include: []includeCase{{value: "audience", rel: "audience", typ: "audience", key: strAttr("audience_id")}},
			list: &listContract{sorts: map[string]string{"created_at": "created_at"}, defaultSort: "-created_at",
				filters: []filterCase{{query: "filter[status]=draft", holds: attrIs("status", "draft"), narrows: true}},
				expect:  func(f *contractFixture) []string { return f.campaigns }}},
		{method: "POST", path: "/api/v1/campaigns", url: path("/api/v1/campaigns"), scope: "campaigns:write", status: 201,
			body: func(f *contractFixture) string { return campaignBody("Contract", f.audiences[0], "email", "") }, rule: ruleCampaignNeedsAudience},
		{method: "POST", path: "/api/v1/campaigns/{id}/launch", url: func(f *contractFixture) string { return "/api/v1/campaigns/" + f.campaigns[1] + "/launch" },
			scope: "campaigns:write", status: 200, rule: ruleLaunchTwice},
		{method: "GET", path: "/api/v1/journeys", url: path("/api/v1/journeys"), scope: "journeys:read", status: 200,
			list: &listContract{sorts: map[string]string{"created_at": "created_at"}, defaultSort: "-created_at",
				filters: []filterCase{{query: "filter[status]=draft", holds: attrIs("status", "draft"), narrows: true}},
				expect:  func(f *contractFixture) []string { return f.journeys }}},
		{method: "POST", path: "/api/v1/journeys", url: path("/api/v1/journeys"), scope: "journeys:write", status: 201,
			body: func(*contractFixture) string { return journeyBody("Contract", "orders/paid", `,"status":"draft"`) }, rule: ruleJourneyValidation},
		{method: "GET", path: "/api/v1/journeys/{id}/enrollments", url: func(f *contractFixture) string { return "/api/v1/journeys/" + f.journey + "/enrollments" },
			scope: "journeys:read", status: 200, include: customerInclude, rule: ruleEnrollmentsOfAnotherShop,
			list: &listContract{sorts: map[string]string{"enrolled_at": "enrolled_at"}, defaultSort: "-enrolled_at",
				filters: []filterCase{{query: "filter[status]=active", holds: attrIs("status", "active")}}, count: seedRows}},
		{method: "GET", path: "/api/v1/products", url: path("/api/v1/products"), scope: "products:read", status: 200,
			include: []includeCase{{value: "inventory", rel: "inventory", typ: "inventory_level", toMany: true}},
			list: &listContract{sorts: map[string]string{"created_at": "created_at", "updated_at": "updated_at", "title": "title"}, defaultSort: "-created_at",
				filters: []filterCase{{query: "filter[status]=draft", holds: attrIs("status", "draft"), narrows: true},
					{query: "filter[vendor]=Sud", holds: attrIs("vendor", "Sud"), narrows: true}},
				expect: func(f *contractFixture) []string { return f.products }}},
		{method: "POST", path: "/api/v1/products", url: path("/api/v1/products"), scope: "products:write", status: 201,
			body: func(*contractFixture) string { return `{"data":{"attributes":{"title":"Contract product"}}}` }},
		{method: "GET", path: "/api/v1/products/{id}", url: func(f *contractFixture) string { return "/api/v1/products/" + f.products[0] },
			scope: "products:read", status: 200, include: []includeCase{{value: "inventory", rel: "inventory", typ: "inventory_level", toMany: true}}},
		{method: "PATCH", path: "/api/v1/products/{id}", url: func(f *contractFixture) string { return "/api/v1/products/" + f.products[1] },
			body: func(*contractFixture) string { return `{"data":{"attributes":{"title":"Renamed"}}}` }, scope: "products:write", status: 200,
			rule: ruleProductPatch},
		{method: "GET", path: "/api/v1/inventory", url: path("/api/v1/inventory"), scope: "products:read", status: 200,
			list: &listContract{sorts: map[string]string{"inventory_item_id": "inventory_item_id", "updated_at": "updated_at"}, defaultSort: "inventory_item_id",
				filters: []filterCase{{query: "filter[sku]=SKU-04", holds: attrIs("sku", "SKU-04"), narrows: true},
					{query: "filter[location_id]=loc-b", holds: attrIs("location_id", "loc-b"), narrows: true},
					{query: "filter[product_id]=PRODUCT", narrows: true}},
				count: seedRows + 10}},
		{method: "PATCH", path: "/api/v1/inventory", url: path("/api/v1/inventory"), scope: "products:write", status: 200,
			body: func(f *contractFixture) string {
				return fmt.Sprintf(`{"data":{"attributes":{"items":[{"inventory_item_id":%q,"location_id":"loc-c","available":3}]}}}`, f.items[2])
			}, rule: ruleInventoryAllOrNothing},
		{method: "GET", path: "/api/v1/usage", url: path("/api/v1/usage"), scope: scopeAny, status: 200},
		{method: "POST", path: "/api/v1/api-keys", url: path("/api/v1/api-keys"), scope: scopeMaster, status: 201,
			body: func(f *contractFixture) string {
				return `{"data":{"attributes":{"shop_id":"` + f.shop.shopID + `","name":"contract","scopes":["orders:read"],"environment":"test"}}}`
			}},
		{method: "POST", path: "/api/v1/api-keys/{id}/rotate", scope: scopeAny, status: 200}, // url and token: the key rotates itself

		// Beta routes we add.
		{method: "GET", path: "/api/v1/audiences", url: path("/api/v1/audiences"), scope: "customers:read", beta: true, status: 200,
			list: &listContract{sorts: map[string]string{"created_at": "created_at"}, defaultSort: "-created_at",
				expect: func(f *contractFixture) []string { return f.audiences }}},
		{method: "GET", path: "/api/v1/audiences/{id}", url: func(f *contractFixture) string { return "/api/v1/audiences/" + f.audiences[0] },
			scope: "customers:read", beta: true, status: 200},
		{method: "POST", path: "/api/v1/audiences", url: path("/api/v1/audiences"), scope: "customers:write", beta: true, status: 201,
			body: func(*contractFixture) string { return `{"data":{"attributes":{"name":"Contract audience"}}}` }},
		{method: "GET", path: "/api/v1/attribution/settings", url: path("/api/v1/attribution/settings"), scope: "attribution:read", beta: true, status: 200},
		{method: "GET", path: "/api/v1/customers/{customer_id}/orders", url: func(f *contractFixture) string { return "/api/v1/customers/" + f.customer + "/orders" },
			scope: "orders:read", beta: true, status: 200, include: customerInclude,
			list: &listContract{sorts: orderSortAttrs, defaultSort: "-created_at", filters: orderFilters(false),
				expect: func(f *contractFixture) []string { return f.customerOrders }}},
	}
}

// specAdminTable is the specification's admin endpoint table, row for row.
var specAdminTable = []string{
	"GET /api/v1/decision-intelligence/runs", "GET /api/v1/decision-intelligence/runs/{run_id}",
	"GET /api/v1/seo-intelligence/keywords", "GET /api/v1/seo-intelligence/keywords/{kw_id}",
	"GET /api/v1/customers", "GET /api/v1/customers/{customer_id}", "PATCH /api/v1/customers/{customer_id}",
	"GET /api/v1/orders", "GET /api/v1/orders/{order_id}", "GET /api/v1/attribution",
	"GET /api/v1/campaigns", "POST /api/v1/campaigns", "POST /api/v1/campaigns/{id}/launch",
	"GET /api/v1/journeys", "POST /api/v1/journeys", "GET /api/v1/journeys/{id}/enrollments",
	"GET /api/v1/products", "POST /api/v1/products", "GET /api/v1/products/{id}", "PATCH /api/v1/products/{id}",
	"GET /api/v1/inventory", "PATCH /api/v1/inventory", "GET /api/v1/usage",
	"POST /api/v1/api-keys", "POST /api/v1/api-keys/{id}/rotate",
}

func TestAdminAPIContract(t *testing.T) {
	rows := contractRows()
	var covered []string
	for _, r := range rows {
		covered = append(covered, r.method+" "+r.path)
	}
	for _, want := range specAdminTable {
		if !slices.Contains(covered, want) {
			t.Errorf("the contract has no row for %s", want)
		}
	}
	checkAllowLists(t, rows)
	f := newContractFixture(t)
	doc := openapitest.Document(t)
	top := f.t
	for _, row := range rows {
		t.Run(row.method+" "+row.path, func(t *testing.T) {
			f.t = t
			defer func() { f.t = top }()
			checkDocumented(t, doc, row)
			token, u := f.shop.token, ""
			switch {
			case row.path == "/api/v1/api-keys/{id}/rotate":
				token, u = f.selfRotatingKey()
			case row.scope == scopeMaster:
				token = f.master
			case row.scope == scopeAny:
				token = f.usage
			}
			if u == "" {
				u = row.url(f)
			}
			body := ""
			if row.body != nil {
				body = row.body(f)
			}
			f.checkAuth(row, u, body)
			r := f.call(token, row.method, u, body)
			if r.status != row.status {
				t.Fatalf("%s %s: %d %s, want %d", row.method, u, r.status, r.body, row.status)
			}
			checkHeaders(t, r, row.beta)
			if row.list != nil {
				checkListEnvelope(t, f.s, r)
				f.checkList(row, u)
			} else {
				checkSingleEnvelope(t, r)
			}
			for _, inc := range row.include {
				f.checkInclude(row, u, inc)
			}
			if row.method == http.MethodGet {
				if r := f.call(f.shop.token, row.method, u+sep(u)+"include=everything", ""); r.status != 400 || r.errorCode(t) != "invalid_parameter" ||
					errorDetails(t, r)["field"] != "include" {
					t.Errorf("include=everything: %d %s, want 400 invalid_parameter naming include", r.status, r.body)
				}
			}
			if row.rule != nil {
				row.rule(t, f)
			}
		})
	}
}

// checkAllowLists: every list row covers exactly the sorts, the default
// sort and the filters its handler allows, so a key added later without a
// contract case fails here.
func checkAllowLists(t *testing.T, rows []contractRow) {
	specs := map[string]httpapi.ListSpec{
		"/api/v1/decision-intelligence/runs":     readapi.RunListSpec,
		"/api/v1/seo-intelligence/keywords":      readapi.KeywordListSpec,
		"/api/v1/customers":                      readapi.CustomerListSpec,
		"/api/v1/orders":                         readapi.OrderListSpec(),
		"/api/v1/attribution":                    readapi.AttributionListSpec,
		"/api/v1/campaigns":                      readapi.CampaignListSpec,
		"/api/v1/journeys":                       readapi.JourneyListSpec,
		"/api/v1/journeys/{id}/enrollments":      readapi.EnrollmentListSpec("jrn_x"),
		"/api/v1/products":                       readapi.ProductListSpec,
		"/api/v1/inventory":                      readapi.InventoryListSpec,
		"/api/v1/audiences":                      readapi.AudienceListSpec,
		"/api/v1/customers/{customer_id}/orders": readapi.CustomerOrderListSpec("cus_x"),
	}
	for _, row := range rows {
		if row.list == nil {
			continue
		}
		spec, ok := specs[row.path]
		if !ok {
			t.Errorf("%s: no allow-list to compare with", row.path)
			continue
		}
		delete(specs, row.path)
		var sorts []string
		for s := range row.list.sorts {
			sorts = append(sorts, s)
		}
		slices.Sort(sorts)
		want := slices.Sorted(slices.Values(spec.Sorts))
		if !slices.Equal(sorts, want) || row.list.defaultSort != spec.DefaultSort {
			t.Errorf("%s: contract sorts %v (default %s), allowed %v (default %s)", row.path, sorts, row.list.defaultSort, want, spec.DefaultSort)
		}
		var filters []string
		for _, fc := range row.list.filters {
			filters = append(filters, fc.query[len("filter["):strings.Index(fc.query, "]")])
		}
		slices.Sort(filters)
		var allowed []string
		for name := range spec.Filters {
			allowed = append(allowed, name)
		}
		slices.Sort(allowed)
		if !slices.Equal(filters, allowed) {
			t.Errorf("%s: contract filters %v, allowed %v", row.path, filters, allowed)
		}
	}
	for path := range specs {
		t.Errorf("%s: a list without a contract row", path)
	}
}

// selfRotatingKey mints a key with the master token and returns it and
// the path that rotates it (a key may rotate itself).
func (f *contractFixture) selfRotatingKey() (string, string) {
	r := f.call(f.master, http.MethodPost, "/api/v1/api-keys",
		`{"data":{"attributes":{"shop_id":"`+f.shop.shopID+`","name":"rotating","scopes":["orders:read"],"environment":"test"}}}`)
	if r.status != 201 {
		f.t.Fatalf("mint: %d %s", r.status, r.body)
	}
	d := data(r, f.t)
	tok := attrs(d)["token"].(string)
	waitForToken(f.t, f.s, tenant{token: tok, position: mustUint(f.t, r.position(f.t))})
	return tok, "/api/v1/api-keys/" + d["id"].(string) + "/rotate"
}

func sep(u string) string {
	if strings.Contains(u, "?") {
		return "&"
	}
	return "?"
}

func errorDetails(t *testing.T, r response) map[string]any {
	t.Helper()
	d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	return d
}

// checkDocumented: the row is an operation of the OpenAPI document with
// its scope and stability.
func checkDocumented(t *testing.T, doc *openapi3.T, row contractRow) {
	t.Helper()
	item := doc.Paths.Value(row.path)
	var op *openapi3.Operation
	if item != nil {
		op = item.GetOperation(row.method)
	}
	if op == nil {
		t.Errorf("openapi.yaml has no operation %s %s", row.method, row.path)
		return
	}
	want := "stable"
	if row.beta {
		want = "beta"
	}
	if got, _ := op.Extensions["x-service-stability"].(string); got != want {
		t.Errorf("x-service-stability %q, want %q", got, want)
	}
	if got, _ := op.Extensions["x-required-scope"].(string); got != row.scope {
		t.Errorf("x-required-scope %q, want %q", got, row.scope)
	}
}

// checkAuth: no token is a 401 authentication_required; a token of the
// shop with every scope but the row's is a 403 scope_required naming it;
// for the master row, a shop token is a 403 naming the master token.
func (f *contractFixture) checkAuth(row contractRow, u, body string) {
	t := f.t
	t.Helper()
	if r := f.call("", row.method, u, body); r.status != 401 || r.errorCode(t) != "authentication_required" {
		t.Errorf("no token: %d %s, want 401 authentication_required", r.status, r.body)
	}
	var token, want string
	switch row.scope {
	case scopeAny:
		return
	case scopeMaster:
		token, want = f.shop.token, "master token"
	default:
		token, want = f.without[row.scope], row.scope
	}
	r := f.call(token, row.method, u, body)
	if r.status != 403 || r.errorCode(t) != "scope_required" || errorDetails(t, r)["required_scope"] != want {
		t.Errorf("token without %s: %d %s, want 403 scope_required naming it", want, r.status, r.body)
	}
	// A shop token refused for its scope was authenticated: it shows its
	// rate limit like any other answer.
	if row.scope != scopeMaster && (r.header.Get("X-RateLimit-Limit") == "" || r.header.Get("X-RateLimit-Remaining") == "" || r.header.Get("X-RateLimit-Reset") == "") {
		t.Errorf("403 for %s without rate-limit headers: %v", want, r.header)
	}
}

// checkHeaders: the row's stability, and the rate-limit headers of an
// admitted request (checkAuth checks them on a 403 for a scope).
func checkHeaders(t *testing.T, r response, beta bool) {
	t.Helper()
	want := "stable"
	if beta {
		want = "beta"
	}
	if got := r.header.Get("X-Service-Stability"); got != want {
		t.Errorf("X-Service-Stability %q, want %q", got, want)
	}
	checkRateLimitHeaders(t, r)
}

func checkRateLimitHeaders(t *testing.T, r response) {
	t.Helper()
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if _, err := strconv.ParseUint(r.header.Get(h), 10, 64); err != nil {
			t.Errorf("%s = %q on %s %s", h, r.header.Get(h), r.req.Method, r.req.URL)
		}
	}
	if reset, _ := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64); reset < time.Now().Add(-time.Minute).Unix() {
		t.Errorf("X-RateLimit-Reset %d is not epoch seconds of now", reset)
	}
}

// checkResource: id, type, attributes (an object) and relationships of
// links.related.
func checkResource(t *testing.T, res map[string]any) {
	t.Helper()
	if id, _ := res["id"].(string); id == "" {
		t.Errorf("resource without id: %v", res)
	}
	if typ, _ := res["type"].(string); typ == "" {
		t.Errorf("resource without type: %v", res)
	}
	if _, ok := res["attributes"].(map[string]any); !ok {
		t.Errorf("resource without attributes: %v", res)
	}
	if rels, ok := res["relationships"]; ok {
		for name, rel := range rels.(map[string]any) {
			if link, _ := rel.(map[string]any)["links"].(map[string]any)["related"].(string); !strings.HasPrefix(link, "/api/v1/") {
				t.Errorf("relationship %s: links.related %q", name, link)
			}
		}
	}
}

func checkSingleEnvelope(t *testing.T, r response) {
	t.Helper()
	d, ok := r.json(t)["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object: %s", r.body)
	}
	checkResource(t, d)
}

// checkListEnvelope: data[], pagination.next_cursor and has_next, and
// links.next, the full URL of the next page, all agreeing.
func checkListEnvelope(t *testing.T, s *testServer, r response) {
	t.Helper()
	doc := r.json(t)
	items, ok := doc["data"].([]any)
	if !ok {
		t.Fatalf("no data array: %s", r.body)
	}
	for _, it := range items {
		checkResource(t, it.(map[string]any))
	}
	pg, _ := doc["pagination"].(map[string]any)
	links, _ := doc["links"].(map[string]any)
	if pg == nil || links == nil {
		t.Fatalf("no pagination or links: %s", r.body)
	}
	hasNext, ok := pg["has_next"].(bool)
	cursor, _ := pg["next_cursor"].(string)
	next, _ := links["next"].(string)
	if !ok || hasNext != (cursor != "") || hasNext != (next != "") {
		t.Fatalf("pagination %v and links %v disagree", pg, links)
	}
	if hasNext {
		u, err := url.Parse(next)
		if err != nil || !strings.HasPrefix(next, s.base+r.req.URL.Path) || u.Query().Get("cursor") != cursor {
			t.Errorf("links.next %q: not this list's URL with the cursor", next)
		}
	}
}

// walk follows links.next from u to the last page and returns the rows in
// the order served.
func (f *contractFixture) walk(u string) []map[string]any {
	t := f.t
	t.Helper()
	var out []map[string]any
	next := u
	for pages := 0; next != ""; pages++ {
		if pages > 100 {
			t.Fatalf("walk of %s does not end", u)
		}
		r := f.call(f.shop.token, http.MethodGet, next, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", next, r.status, r.body)
		}
		checkListEnvelope(t, f.s, r)
		doc := r.json(t)
		out = append(out, toMaps(doc["data"])...)
		next, _ = doc["links"].(map[string]any)["next"].(string)
		next = strings.TrimPrefix(next, f.s.base)
	}
	return out
}

func idSet(t *testing.T, what string, rows []map[string]any) map[string]bool {
	t.Helper()
	set := make(map[string]bool, len(rows))
	for _, r := range rows {
		id := r["id"].(string)
		if set[id] {
			t.Errorf("%s: %s served twice", what, id)
		}
		set[id] = true
	}
	return set
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// before reports whether a sorts strictly before b: numbers as numbers,
// RFC 3339 times as instants, other text as bytes.
func before(a, b any) bool {
	switch x := a.(type) {
	case float64:
		return x < b.(float64)
	case string:
		y := b.(string)
		ta, errA := time.Parse(time.RFC3339Nano, x)
		tb, errB := time.Parse(time.RFC3339Nano, y)
		if errA == nil && errB == nil {
			return ta.Before(tb)
		}
		return x < y
	}
	return false
}

// checkOrdered: the rows' non-null values of attribute name never go
// against the order.
func checkOrdered(t *testing.T, what string, rows []map[string]any, name string, desc bool) {
	t.Helper()
	var prev any
	values := map[string]bool{}
	for _, r := range rows {
		v := attr(r, name)
		if v == nil {
			continue
		}
		values[fmt.Sprint(v)] = true
		if prev != nil && ((!desc && before(v, prev)) || (desc && before(prev, v))) {
			t.Errorf("%s: %v after %v", what, v, prev)
			return
		}
		prev = v
	}
	if len(values) < 2 {
		t.Errorf("%s: the seeded rows have %d distinct values of %s: nothing shows the order", what, len(values), name)
	}
}

func (f *contractFixture) expectInvalid(u, code, field string) {
	t := f.t
	t.Helper()
	r := f.call(f.shop.token, http.MethodGet, u, "")
	if r.status != 400 || r.errorCode(t) != code {
		t.Errorf("GET %s: %d %s, want 400 %s", u, r.status, r.body, code)
		return
	}
	if field != "" && errorDetails(t, r)["field"] != field {
		t.Errorf("GET %s: details.field %v, want %s", u, errorDetails(t, r)["field"], field)
	}
}

// checkList proves the generic list rules on the list at u.
func (f *contractFixture) checkList(row contractRow, u string) {
	t := f.t
	t.Helper()
	lc := row.list
	if n := len(toMaps(f.must(200, http.MethodGet, u, "").json(t)["data"])); n != 25 {
		t.Errorf("default page: %d rows, want 25", n)
	}
	for _, l := range []string{"101", "0", "-1", "abc"} {
		f.expectInvalid(u+sep(u)+"limit="+l, "invalid_parameter", "limit")
	}
	f.must(200, http.MethodGet, u+sep(u)+"limit=100", "")
	f.expectInvalid(u+sep(u)+"filter[nope]=x", "invalid_parameter", "filter[nope]")
	f.expectInvalid(u+sep(u)+"sort=nope", "invalid_parameter", "sort")

	base := u + sep(u) + "limit=7"
	all := f.walk(base)
	got := idSet(t, "walk", all)
	if lc.expect != nil {
		want := map[string]bool{}
		for _, id := range lc.expect(f) {
			want[id] = true
		}
		if !sameSet(got, want) {
			t.Errorf("walk served %d rows, want exactly the %d seeded", len(got), len(want))
		}
	} else if len(got) != lc.count {
		t.Errorf("walk served %d rows, want %d", len(got), lc.count)
	}
	if explicit := f.walk(base + "&sort=" + lc.defaultSort); fmt.Sprint(ids(explicit)) != fmt.Sprint(ids(all)) {
		t.Errorf("the default order is not sort=%s", lc.defaultSort)
	}
	for field, name := range lc.sorts {
		for _, dir := range []string{"", "-"} {
			rows := f.walk(base + "&sort=" + dir + field)
			if !sameSet(idSet(t, "sort="+dir+field, rows), got) {
				t.Errorf("sort=%s%s served %d rows, want %d", dir, field, len(rows), len(got))
			}
			checkOrdered(t, "sort="+dir+field, rows, name, dir == "-")
		}
	}
	for _, fc := range lc.filters {
		q, holds := fc.query, fc.holds
		switch {
		case strings.Contains(q, "CUSTOMER"):
			q, holds = strings.Replace(q, "CUSTOMER", f.customers[1], 1), attrIs("customer_id", f.customers[1])
		case strings.Contains(q, "PRODUCT"):
			q, holds = strings.Replace(q, "PRODUCT", f.products[0], 1), attrIs("product_id", f.products[0])
		}
		rows := f.walk(base + "&" + q)
		want := map[string]bool{}
		for _, r := range all {
			if holds(r) {
				want[r["id"].(string)] = true
			}
		}
		if gotF := idSet(t, q, rows); len(gotF) == 0 || !sameSet(gotF, want) {
			t.Errorf("%s: %d rows, want the %d of the walk it holds for", q, len(gotF), len(want))
		}
		if fc.narrows && len(want) == len(all) {
			t.Errorf("%s: the seeded rows do not show the filter working", q)
		}
	}

	// Cursors are bound to their query and signed.
	first := f.must(200, http.MethodGet, base, "").json(t)
	cursor, _ := first["pagination"].(map[string]any)["next_cursor"].(string)
	if cursor == "" {
		t.Fatal("no cursor on the first page")
	}
	other := "-" + lc.defaultSort
	if strings.HasPrefix(lc.defaultSort, "-") {
		other = lc.defaultSort[1:]
	}
	f.expectInvalid(base+"&sort="+other+"&cursor="+url.QueryEscape(cursor), "invalid_cursor", "")
	if len(lc.filters) > 0 && !strings.Contains(lc.filters[0].query, "CUSTOMER") && !strings.Contains(lc.filters[0].query, "PRODUCT") {
		f.expectInvalid(base+"&"+lc.filters[0].query+"&cursor="+url.QueryEscape(cursor), "invalid_cursor", "")
	}
	foreign := "/api/v1/journeys?limit=1"
	if strings.HasPrefix(u, "/api/v1/journeys") {
		foreign = "/api/v1/audiences?limit=1"
	}
	fc, _ := f.must(200, http.MethodGet, foreign, "").json(t)["pagination"].(map[string]any)["next_cursor"].(string)
	f.expectInvalid(base+"&cursor="+url.QueryEscape(fc), "invalid_cursor", "")
	k := len(cursor) / 2
	flip := byte('A')
	if cursor[k] == 'A' {
		flip = 'B'
	}
	f.expectInvalid(base+"&cursor="+url.QueryEscape(cursor[:k]+string(flip)+cursor[k+1:]), "invalid_cursor", "")
	f.expectInvalid(base+"&cursor=abc", "invalid_cursor", "")
}

// checkInclude proves include=inc.value at u: a top-level included array
// with every related resource once, and relationship data pointing at
// them; without include, neither.
func (f *contractFixture) checkInclude(row contractRow, u string, inc includeCase) {
	t := f.t
	t.Helper()
	plain := f.must(200, http.MethodGet, u, "").json(t)
	if _, ok := plain["included"]; ok {
		t.Errorf("included without include: %v", plain["included"])
	}
	doc := f.must(200, http.MethodGet, u+sep(u)+"include="+inc.value+","+inc.value, "").json(t)
	list, ok := doc["included"].([]any)
	if !ok {
		t.Fatalf("include=%s: no included array", inc.value)
	}
	included := map[string]map[string]any{}
	for _, it := range toMaps(list) {
		checkResource(t, it)
		if it["type"] != inc.typ {
			t.Errorf("included %v, want type %s", it["type"], inc.typ)
		}
		if included[it["id"].(string)] != nil {
			t.Errorf("%s included twice", it["id"])
		}
		included[it["id"].(string)] = it
	}
	var primaries []map[string]any
	if row.list != nil {
		primaries = toMaps(doc["data"])
	} else {
		primaries = []map[string]any{doc["data"].(map[string]any)}
	}
	referenced := map[string]bool{}
	withMany := 0
	for _, p := range primaries {
		rel, _ := p["relationships"].(map[string]any)[inc.rel].(map[string]any)
		if inc.toMany {
			refs, ok := rel["data"].([]any)
			if !ok {
				t.Fatalf("%s: relationship %s has no data array: %v", p["id"], inc.rel, rel)
			}
			if len(refs) > 0 {
				withMany++
			}
			for _, ref := range toMaps(refs) {
				id := ref["id"].(string)
				referenced[id] = true
				if ref["type"] != inc.typ || included[id] == nil || attr(included[id], "product_id") != p["id"] {
					t.Errorf("%s: %s data %v is not an included resource of it", p["id"], inc.rel, ref)
				}
			}
			continue
		}
		key := inc.key(p)
		if key == "" {
			continue
		}
		ref, _ := rel["data"].(map[string]any)
		if ref["type"] != inc.typ || ref["id"] != key || included[key] == nil {
			t.Errorf("%s: %s data %v, want {%s %s} included", p["id"], inc.rel, ref, inc.typ, key)
		}
		referenced[key] = true
	}
	if len(referenced) == 0 || len(referenced) != len(included) {
		t.Errorf("include=%s: %d included, %d referenced", inc.value, len(included), len(referenced))
	}
	if inc.toMany && row.list != nil && withMany < 2 {
		t.Errorf("include=%s: only %d resources have related ones", inc.value, withMany)
	}
}
