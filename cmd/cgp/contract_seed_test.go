package main

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// seedRows is how many rows the contract seeds of every list: more than
// the default page (25), so the default limit shows.
const seedRows = 27

// contractFixture is a shop seeded through the real surfaces (signed
// webhooks, API writes, `cgp seo import`, `cgp di run`), with the ids of
// what it seeded, and the tokens the contract test calls with.
type contractFixture struct {
	t   *testing.T
	s   *testServer
	v   *openapitest.Validator
	dir string

	shop, other tenant
	// without maps a scope to a token of the shop with every admin scope
	// but that one.
	without map[string]string
	master  string
	// usage is a token with one scope unrelated to every row.
	usage string
	// wait is a log position every seeded row is at or before.
	wait uint64

	customers, orders, customerOrders, products, audiences, campaigns, journeys, keywords, runs []string
	customer                                                                                    string // the customer with seedRows orders
	journey                                                                                     string // the journey with seedRows enrollments
	otherRun                                                                                    string // a run of the other shop
	items                                                                                       []string
}

// call sends a request as token (none when ""), validates the response
// against the OpenAPI document and returns it.
func (f *contractFixture) call(token, method, path, body string) response {
	f.t.Helper()
	h := map[string]string{"X-Wait-For-Position": strconv.FormatUint(f.wait, 10)}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	r := do(f.t, method, f.s.base+path, []byte(body), h)
	f.v.ValidateResponse(f.t, r.req, r.resp, r.body)
	if p := r.header.Get("X-Event-Position"); p != "" && r.status < 300 {
		n, _ := strconv.ParseUint(p, 10, 64)
		f.wait = max(f.wait, n)
	}
	return r
}

// must calls as the shop's full token and requires status.
func (f *contractFixture) must(status int, method, path, body string) response {
	f.t.Helper()
	r := f.call(f.shop.token, method, path, body)
	if r.status != status {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, status)
	}
	return r
}

func (f *contractFixture) mint(shop, scopes string) string {
	f.t.Helper()
	tok := cli(f.t, f.dir, "tokens", "create", "--shop", shop, "--scopes", scopes)
	waitForToken(f.t, f.s, tenant{token: tok["token"].(string), position: uint64(tok["position"].(float64))})
	return tok["token"].(string)
}

func newContractFixture(t *testing.T) *contractFixture {
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, nil) // the launched e-mail campaigns are sent to a real SMTP server
	f := &contractFixture{t: t, s: s, v: openapitest.NewValidator(t), dir: dir, without: map[string]string{}}
	var all []string
	for _, s := range domain.AdminScopes() {
		all = append(all, string(s))
	}
	f.shop = newTenant(t, dir, "contract.example.com", "enterprise", strings.Join(all, ","))
	f.other = newTenant(t, dir, "other-contract.example.com", "agency", strings.Join(all, ","))
	waitForToken(t, f.s, f.shop)
	waitForToken(t, f.s, f.other)
	for i, s := range all {
		f.without[s] = f.mint(f.shop.shopID, strings.Join(append(append([]string(nil), all[:i]...), all[i+1:]...), ","))
	}
	f.usage = f.mint(f.shop.shopID, "audit:read")
	mt := cli(t, dir, "tokens", "create-master", "--account", f.shop.accountID)
	f.master = mt["token"].(string)
	waitForToken(t, f.s, tenant{token: f.master, position: uint64(mt["position"].(float64))})

	f.seedCommerce()
	f.seedCatalog()
	f.seedCampaigns()
	f.seedJourneys()
	f.seedIntelligence()
	return f
}

// seedCommerce delivers customers/create for 30 customers and
// orders/create for seedRows orders of one customer and a few of others.
func (f *contractFixture) seedCommerce() {
	t := f.t
	for i := range 30 {
		ext := int64(101 + i)
		stamp := time.Date(2026, 6, 1+i%28, 10, 0, 0, 0, time.UTC).Format(time.RFC3339)
		body := customerPayload(ext, fmt.Sprintf("c%d@example.com", ext), i%4, fmt.Sprintf("%d.%02d", 10*i, i), stamp)
		f.wait = max(f.wait, f.s.deliver(t, f.shop, "customers/create", fmt.Sprintf("dlv-ct-cus-%d", ext), body))
		f.customers = append(f.customers, domain.CustomerIDFromExternal(f.shop.shopID, strconv.FormatInt(ext, 10)))
	}
	f.customer = f.customers[0]
	statuses := []string{"paid", "pending", "refunded"}
	for i := range seedRows + 6 {
		cust := "101"
		if i >= seedRows {
			cust = strconv.Itoa(102 + i - seedRows)
		}
		o := testOrder{ext: int64(50000 + i), customer: cust, created: time.Date(2026, 3, 1+i, 9, i, 0, 0, time.UTC).Format(time.RFC3339),
			total: fmt.Sprintf("%d.50", 10+(i*37)%90), financial: statuses[i%3]}
		if i%4 == 0 {
			o.fulfillment = "fulfilled"
		}
		f.wait = max(f.wait, f.s.deliverOrder(t, f.shop, o))
		id := domain.OrderIDFromExternal(f.shop.shopID, strconv.FormatInt(o.ext, 10))
		f.orders = append(f.orders, id)
		if cust == "101" {
			f.customerOrders = append(f.customerOrders, id)
		}
	}
	// Another shop's order: never in this shop's lists.
	f.wait = max(f.wait, f.s.deliverOrder(t, f.other, testOrder{ext: 59999, customer: "101", created: "2026-03-02T00:00:00Z", total: "1.00", financial: "paid"}))
}

// seedCatalog creates seedRows products through the API (one variant each)
// and sets inventory levels with one bulk PATCH.
func (f *contractFixture) seedCatalog() {
	var items []string
	for i := range seedRows {
		vendor, status := "Nord", "active"
		if i%3 == 0 {
			vendor, status = "Sud", "draft"
		}
		r := f.must(201, http.MethodPost, "/api/v1/products", fmt.Sprintf(`{"data":{"attributes":{"title":"Product %02d","status":%q,
			"vendor":%q,"variants":[{"sku":"SKU-%02d","price":"%d.00"}]}}}`, (i*7)%seedRows, status, vendor, i, 5+i))
		d := data(r, f.t)
		f.products = append(f.products, d["id"].(string))
		items = append(items, attrs(d)["variants"].([]any)[0].(map[string]any)["inventory_item_id"].(string))
	}
	f.items = items
	// Two bulk updates: levels at loc-b are updated after those at loc-a.
	var a, b strings.Builder
	for i, item := range items {
		fmt.Fprintf(&a, `{"inventory_item_id":%q,"location_id":"loc-a","available":%d},`, item, i)
		if i < 10 {
			fmt.Fprintf(&b, `{"inventory_item_id":%q,"location_id":"loc-b","available":%d},`, item, 100+i)
		}
	}
	for _, sb := range []*strings.Builder{&a, &b} {
		f.must(200, http.MethodPatch, "/api/v1/inventory", `{"data":{"attributes":{"items":[`+strings.TrimSuffix(sb.String(), ",")+`]}}}`)
	}
}

// seedCampaigns creates seedRows audiences and seedRows e-mail campaigns
// and launches every third campaign.
func (f *contractFixture) seedCampaigns() {
	for i := range seedRows {
		r := f.must(201, http.MethodPost, "/api/v1/audiences", fmt.Sprintf(`{"data":{"attributes":{"name":"Audience %02d"}}}`, i))
		f.audiences = append(f.audiences, data(r, f.t)["id"].(string))
	}
	for i := range seedRows {
		r := f.must(201, http.MethodPost, "/api/v1/campaigns", campaignBody(fmt.Sprintf("Campaign %02d", i), f.audiences[i%3], "email", ""))
		id := data(r, f.t)["id"].(string)
		f.campaigns = append(f.campaigns, id)
		if i%3 == 0 {
			f.must(200, http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "")
		}
	}
}

// seedJourneys creates seedRows journeys (one enrolling on every fulfilled
// order, some drafts) and delivers seedRows orders/fulfilled webhooks.
func (f *contractFixture) seedJourneys() {
	t := f.t
	for i := range seedRows {
		extra := `,"status":"draft"`
		switch {
		case i == 0:
			extra = `,"allow_reentry":true`
		case i%2 == 0:
			extra = ""
		}
		trigger := "customers/create"
		if i == 0 {
			trigger = "orders/fulfilled"
		}
		r := f.must(201, http.MethodPost, "/api/v1/journeys", journeyBody(fmt.Sprintf("Journey %02d", i), trigger, extra))
		f.journeys = append(f.journeys, data(r, t)["id"].(string))
	}
	f.journey = f.journeys[0]
	for i := range seedRows {
		body := withField(t, fixture(t, shopify.TopicOrdersFulfilled), "id", "5984321190041", strconv.Itoa(60000+i))
		body = withField(t, body, "id", "7064055069303700841", strconv.Itoa(101+i%5))
		f.wait = max(f.wait, f.s.deliver(t, f.shop, shopify.TopicOrdersFulfilled, fmt.Sprintf("dlv-ct-ful-%d", i), body))
		f.orders = append(f.orders, domain.OrderIDFromExternal(f.shop.shopID, strconv.Itoa(60000+i)))
		if i%5 == 0 {
			f.customerOrders = append(f.customerOrders, domain.OrderIDFromExternal(f.shop.shopID, strconv.Itoa(60000+i)))
		}
	}
	// The reactor enrolls after the journeys projector saw the orders: wait
	// for every enrollment (bounded).
	eventually(t, 15*time.Second, "enrollments of every fulfilled order", func() bool {
		r := f.call(f.shop.token, http.MethodGet, "/api/v1/journeys/"+f.journey+"/enrollments?limit=100", "")
		return r.status == 200 && len(r.json(t)["data"].([]any)) == seedRows
	})
	// A write after the enrollments: waiting for its position sees them.
	f.journeys = append(f.journeys, data(f.must(201, http.MethodPost, "/api/v1/journeys",
		journeyBody("Journey after", "customers/create", `,"status":"draft"`)), t)["id"].(string))
}

// seedIntelligence imports a ranking report of seedRows keywords (a
// previous ranking for every other one) and runs decision intelligence
// seedRows times, plus once for the other shop.
func (f *contractFixture) seedIntelligence() {
	t := f.t
	var b strings.Builder
	b.WriteString(rankingHeader)
	for i := range seedRows {
		kw, url := fmt.Sprintf("keyword %02d", (i*11)%seedRows), fmt.Sprintf("https://contract.example.com/p/%d", i)
		fmt.Fprintf(&b, "%s,%s,%d.5,%d,%d,%d,2026-11-08\n", kw, url, 1+(i*13)%40, 100*(1+(i*5)%9), i, 10*i)
		if i%2 == 0 {
			fmt.Fprintf(&b, "%s,%s,%d,%d,%d,%d,2026-11-01\n", kw, url, 1+(i*7)%50, 100, 1, 2)
		}
		f.keywords = append(f.keywords, domain.KeywordID(f.shop.shopID, kw, url))
	}
	out := cli(t, f.dir, "seo", "import", "--shop", f.shop.shopID, writeFile(t, "contract.csv", b.String()))
	f.wait = max(f.wait, uint64(out["position"].(float64)))
	for range seedRows {
		run := cli(t, f.dir, "di", "run", "--shop", f.shop.shopID)
		f.runs = append(f.runs, run["id"].(string))
		f.wait = max(f.wait, uint64(run["position"].(float64)))
	}
	run := cli(t, f.dir, "di", "run", "--shop", f.other.shopID)
	f.otherRun = run["id"].(string)
	f.wait = max(f.wait, uint64(run["position"].(float64)))
}

// Business rules, one or more per resource.

func ruleRunOfAnotherShop(t *testing.T, f *contractFixture) {
	for _, c := range []struct{ token, id string }{{f.shop.token, f.otherRun}, {f.other.token, f.runs[0]}} {
		if r := f.call(c.token, http.MethodGet, "/api/v1/decision-intelligence/runs/"+c.id, ""); r.status != 404 || r.errorCode(t) != "not_found" {
			t.Errorf("another shop's run: %d %s", r.status, r.body)
		}
	}
}

func ruleKeywordChange(t *testing.T, f *contractFixture) {
	withPrevious := 0
	for _, k := range toMaps(f.must(200, http.MethodGet, "/api/v1/seo-intelligence/keywords?limit=100", "").json(t)["data"]) {
		prev, ok := attr(k, "previous_position").(float64)
		if !ok {
			if attr(k, "change") != nil {
				t.Errorf("%s: a change without a previous ranking", k["id"])
			}
			continue
		}
		withPrevious++
		if c, _ := attr(k, "change").(float64); math.Abs(c-(prev-attr(k, "position").(float64))) > 0.005 {
			t.Errorf("%s: change %v, want previous %v − latest %v", k["id"], c, prev, attr(k, "position"))
		}
	}
	if withPrevious == 0 {
		t.Error("no keyword with a previous ranking")
	}
}

func ruleCustomerTags(t *testing.T, f *contractFixture) {
	got := attrs(data(f.must(200, http.MethodGet, "/api/v1/customers/"+f.customers[2], ""), t))["tags"]
	if fmt.Sprint(got) != "[vip contract]" && fmt.Sprint(got) != "[contract vip]" {
		t.Errorf("tags after PATCH: %v", got)
	}
}

func ruleCampaignNeedsAudience(t *testing.T, f *contractFixture) {
	r := f.call(f.shop.token, http.MethodPost, "/api/v1/campaigns", `{"data":{"attributes":{"name":"No audience","channel":"email"}}}`)
	if r.status != 422 || r.errorCode(t) != "validation_failed" || errorDetails(t, r)["field"] != "audience_id" {
		t.Errorf("campaign without audience_id: %d %s", r.status, r.body)
	}
}

func ruleLaunchTwice(t *testing.T, f *contractFixture) {
	if r := f.call(f.shop.token, http.MethodPost, "/api/v1/campaigns/"+f.campaigns[1]+"/launch", ""); r.status != 409 || r.errorCode(t) != "conflict" {
		t.Errorf("second launch: %d %s", r.status, r.body)
	}
}

func ruleJourneyValidation(t *testing.T, f *contractFixture) {
	r := f.call(f.shop.token, http.MethodPost, "/api/v1/journeys", journeyBody("x", "products/create", ""))
	if r.status != 422 || r.errorCode(t) != "validation_failed" || errorDetails(t, r)["field"] != "trigger" {
		t.Errorf("journey with an unknown trigger: %d %s", r.status, r.body)
	}
}

func ruleEnrollmentsOfAnotherShop(t *testing.T, f *contractFixture) {
	if r := f.call(f.other.token, http.MethodGet, "/api/v1/journeys/"+f.journey+"/enrollments", ""); r.status != 404 || r.errorCode(t) != "not_found" {
		t.Errorf("another shop's journey: %d %s", r.status, r.body)
	}
}

func ruleProductPatch(t *testing.T, f *contractFixture) {
	if got := attrs(data(f.must(200, http.MethodGet, "/api/v1/products/"+f.products[1], ""), t))["title"]; got != "Renamed" {
		t.Errorf("title after PATCH: %v", got)
	}
}

func ruleInventoryAllOrNothing(t *testing.T, f *contractFixture) {
	body := fmt.Sprintf(`{"data":{"attributes":{"items":[{"inventory_item_id":%q,"location_id":"loc-d","available":1},
		{"inventory_item_id":%q,"location_id":"loc-d"}]}}}`, f.items[0], f.items[1])
	if r := f.call(f.shop.token, http.MethodPatch, "/api/v1/inventory", body); r.status != 422 || r.errorCode(t) != "validation_failed" {
		t.Fatalf("bulk with a bad item: %d %s", r.status, r.body)
	}
	if n := len(toMaps(f.must(200, http.MethodGet, "/api/v1/inventory?filter[location_id]=loc-d", "").json(t)["data"])); n != 0 {
		t.Errorf("a rejected bulk applied %d levels", n)
	}
	if n := len(toMaps(f.must(200, http.MethodGet, "/api/v1/inventory?filter[location_id]=loc-c", "").json(t)["data"])); n != 1 {
		t.Errorf("the accepted bulk: %d levels at loc-c, want 1", n)
	}
}
