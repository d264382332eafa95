package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// catalogClient calls the admin API as one token and validates every
// response against the OpenAPI document.
type catalogClient struct {
	t     *testing.T
	s     *testServer
	v     *openapitest.Validator
	token string
}

func (c catalogClient) call(method, path, body string, headers ...string) response {
	c.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + c.token}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	r := do(c.t, method, c.s.base+path, []byte(body), h)
	c.v.ValidateResponse(c.t, r.req, r.resp, r.body)
	return r
}

// ok calls and requires status want.
func (c catalogClient) ok(want int, method, path, body string, headers ...string) response {
	c.t.Helper()
	r := c.call(method, path, body, headers...)
	if r.status != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, want)
	}
	return r
}

// fails calls and requires status, code and (when given) details.field.
func (c catalogClient) fails(status int, code, field, method, path, body string) map[string]any {
	c.t.Helper()
	r := c.call(method, path, body)
	if r.status != status || r.errorCode(c.t) != code {
		c.t.Fatalf("%s %s %s: %d %s, want %d %s", method, path, body, r.status, r.body, status, code)
	}
	details := r.json(c.t)["error"].(map[string]any)["details"].(map[string]any)
	if field != "" && details["field"] != field {
		c.t.Fatalf("%s %s %s: details.field %v, want %s", method, path, body, details["field"], field)
	}
	return details
}

// list walks every page of a list (limit per page) and returns the rows.
func (c catalogClient) list(path, pos string) []map[string]any {
	c.t.Helper()
	var out []map[string]any
	next := path
	for pages := 0; next != ""; pages++ {
		if pages > 50 {
			c.t.Fatalf("walk of %s does not end", path)
		}
		doc := c.ok(200, http.MethodGet, next, "", "X-Wait-For-Position", pos).json(c.t)
		for _, d := range doc["data"].([]any) {
			out = append(out, d.(map[string]any))
		}
		next = ""
		if pg := doc["pagination"].(map[string]any); pg["has_next"] == true {
			next = path + "&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
		}
	}
	return out
}

func attrs(res map[string]any) map[string]any { return res["attributes"].(map[string]any) }

func data(r response, t *testing.T) map[string]any { return r.json(t)["data"].(map[string]any) }

func TestCatalogProductsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "catalog.example.com", "agency", "products:read,products:write")
	other := newTenant(t, dir, "other-catalog.example.com", "agency", "products:read,products:write")
	readOnly := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "products:read")
	noScope := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read")
	waitForToken(t, s, other)
	waitForToken(t, s, tenant{token: noScope["token"].(string), position: uint64(noScope["position"].(float64))})
	a := catalogClient{t: t, s: s, v: v, token: tn.token}
	b := catalogClient{t: t, s: s, v: v, token: other.token}
	ro := catalogClient{t: t, s: s, v: v, token: readOnly["token"].(string)}
	none := catalogClient{t: t, s: s, v: v, token: noScope["token"].(string)}

	// A platform product, and one the platform deleted (not listed).
	s.deliver(t, tn, "products/create", "dlv-cat-p1", fixture(t, "products/create"))
	platformID := domain.ProductIDFromExternal(tn.shopID, "8123456789012")
	gone := withField(t, fixture(t, "products/create"), "id", "8123456789012", "8123456789099")
	s.deliver(t, tn, "products/create", "dlv-cat-p2", gone)
	s.deliver(t, tn, "products/delete", "dlv-cat-p2-del", []byte(`{"id": 8123456789099}`))
	goneID := domain.ProductIDFromExternal(tn.shopID, "8123456789099")

	// Products created through the API.
	created := map[string]string{}
	var pos string
	for _, p := range []struct{ title, status string }{{"Charlie", "draft"}, {"Alpha", "active"}, {"Bravo", "draft"}} {
		r := a.ok(201, http.MethodPost, "/api/v1/products", fmt.Sprintf(`{"data":{"attributes":{"title":%q,"status":%q,"vendor":"Nord",
			"tags":["x"," x ","y"],"variants":[{"sku":"SKU-%s","price":"12.50"},{"price":3}]}}}`, p.title, p.status, p.title))
		pos = r.position(t)
		d := data(r, t)
		at := attrs(d)
		vs := at["variants"].([]any)
		if !strings.HasPrefix(d["id"].(string), domain.PrefixProduct) || at["title"] != p.title || at["status"] != p.status ||
			at["handle"] != strings.ToLower(p.title) || fmt.Sprint(at["tags"]) != "[x y]" || at["external_id"] != nil || len(vs) != 2 ||
			vs[0].(map[string]any)["price"] != 12.5 || vs[0].(map[string]any)["sku"] != "SKU-"+p.title || vs[1].(map[string]any)["sku"] != nil {
			t.Fatalf("created %s", r.body)
		}
		created[p.title] = d["id"].(string)
	}

	// Reads: the single product, read-your-writes, and the list.
	got := data(a.ok(200, http.MethodGet, "/api/v1/products/"+created["Alpha"], "", "X-Wait-For-Position", pos), t)
	if attrs(got)["title"] != "Alpha" || attrs(got)["vendor"] != "Nord" {
		t.Fatalf("GET created product: %v", got)
	}
	if g := data(a.ok(200, http.MethodGet, "/api/v1/products/"+goneID, ""), t); attrs(g)["deleted"] != true {
		t.Fatalf("deleted product: %v", g)
	}
	if g := data(a.ok(200, http.MethodGet, "/api/v1/products/"+platformID, ""), t); attrs(g)["external_id"] != "8123456789012" ||
		attrs(g)["title"] != "Linen Shirt" || len(attrs(g)["variants"].([]any)) != 2 {
		t.Fatalf("platform product: %v", g)
	}
	titles := func(rows []map[string]any) string {
		var out []string
		for _, r := range rows {
			out = append(out, attrs(r)["title"].(string))
		}
		return strings.Join(out, ",")
	}
	if got := titles(a.list("/api/v1/products?limit=1&sort=title", pos)); got != "Alpha,Bravo,Charlie,Linen Shirt" {
		t.Fatalf("sort=title: %s", got)
	}
	if got := titles(a.list("/api/v1/products?limit=2&sort=-title", pos)); got != "Linen Shirt,Charlie,Bravo,Alpha" {
		t.Fatalf("sort=-title: %s", got)
	}
	if got := titles(a.list("/api/v1/products?limit=1&filter[status]=draft&sort=created_at", pos)); got != "Charlie,Bravo" {
		t.Fatalf("filter[status]=draft: %s", got)
	}
	if got := titles(a.list("/api/v1/products?filter[vendor]=Atelier%20Nord", pos)); got != "Linen Shirt" {
		t.Fatalf("filter[vendor]: %s", got)
	}
	if n := len(a.list("/api/v1/products?limit=3&sort=-updated_at", pos)); n != 4 {
		t.Fatalf("list: %d products, want 4 (the deleted one left out)", n)
	}
	if n := len(b.list("/api/v1/products?limit=100", pos)); n != 0 {
		t.Fatalf("another shop sees %d products", n)
	}
	for q, field := range map[string]string{"filter[price]=1": "filter[price]", "sort=price": "sort", "filter[status]=gone": "filter[status]",
		"limit=101": "limit", "include=variants": "include"} {
		a.fails(400, "invalid_parameter", field, http.MethodGet, "/api/v1/products?"+q, "")
	}

	// Scopes and tenancy.
	none.fails(403, "scope_required", "", http.MethodGet, "/api/v1/products", "")
	none.fails(403, "scope_required", "", http.MethodGet, "/api/v1/inventory", "")
	if d := ro.fails(403, "scope_required", "", http.MethodPost, "/api/v1/products", `{"data":{"attributes":{"title":"x"}}}`); d["required_scope"] != "products:write" {
		t.Fatalf("required_scope %v", d["required_scope"])
	}
	b.fails(404, "not_found", "", http.MethodGet, "/api/v1/products/"+created["Alpha"], "")
	b.fails(404, "not_found", "", http.MethodPatch, "/api/v1/products/"+created["Alpha"], `{"data":{"attributes":{"title":"Mine"}}}`)
	a.fails(404, "not_found", "", http.MethodGet, "/api/v1/products/prd_doesnotexist", "")

	// Validation.
	for body, field := range map[string]string{
		`{"data":{"attributes":{"vendor":"x"}}}`:                                 "title",
		`{"data":{"attributes":{"title":"  "}}}`:                                 "title",
		`{"data":{"attributes":{"title":"x","status":"live"}}}`:                  "status",
		`{"data":{"attributes":{"title":"x","colour":"red"}}}`:                   "colour",
		`{"data":{"attributes":{"title":"x","variants":[{"sku":"a"}]}}}`:         "variants[0].price",
		`{"data":{"attributes":{"title":"x","variants":[{"price":"-1"}]}}}`:      "variants[0].price",
		`{"data":{"attributes":{"title":"x","variants":[{"price":"1.23456"}]}}}`: "variants[0].price",
		`{"data":{"attributes":{"title":"x","tags":[""]}}}`:                      "tags",
	} {
		a.fails(422, "validation_failed", field, http.MethodPost, "/api/v1/products", body)
	}
	a.fails(400, "invalid_json", "", http.MethodPost, "/api/v1/products", `{"data":`)
	a.fails(422, "validation_failed", "title", http.MethodPatch, "/api/v1/products/"+created["Alpha"], `{"data":{"attributes":{"title":""}}}`)
	a.fails(422, "validation_failed", "status", http.MethodPatch, "/api/v1/products/"+created["Alpha"], `{"data":{"attributes":{"status":"gone"}}}`)
	a.fails(422, "validation_failed", "data.attributes", http.MethodPatch, "/api/v1/products/"+created["Alpha"], `{"data":{"attributes":{}}}`)
	a.fails(409, "conflict", "", http.MethodPatch, "/api/v1/products/"+goneID, `{"data":{"attributes":{"title":"Back"}}}`)

	// PATCH, on an API product and on a platform product.
	r := a.ok(200, http.MethodPatch, "/api/v1/products/"+created["Alpha"], `{"data":{"attributes":{"title":"Alpha 2","status":"archived","tags":["z"]}}}`)
	if at := attrs(data(r, t)); at["title"] != "Alpha 2" || at["status"] != "archived" || fmt.Sprint(at["tags"]) != "[z]" || at["vendor"] != "Nord" {
		t.Fatalf("PATCH answered %s", r.body)
	}
	a.ok(200, http.MethodPatch, "/api/v1/products/"+platformID, `{"data":{"attributes":{"product_type":"Tops"}}}`)
	if got := titles(a.list("/api/v1/products?filter[status]=archived", r.position(t))); got != "Alpha 2" {
		t.Fatalf("after PATCH, archived: %s", got)
	}

	// Idempotent create: one product for two posts with the same key.
	body := `{"data":{"attributes":{"title":"Once"}}}`
	first := a.ok(201, http.MethodPost, "/api/v1/products", body, "Idempotency-Key", "cat-1")
	again := a.ok(201, http.MethodPost, "/api/v1/products", body, "Idempotency-Key", "cat-1")
	if again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("replay: %v %s", again.header, again.body)
	}
	if r := a.call(http.MethodPost, "/api/v1/products", `{"data":{"attributes":{"title":"Twice"}}}`, "Idempotency-Key", "cat-1"); r.status != 409 || r.errorCode(t) != "idempotency_key_reused" {
		t.Fatalf("same key, other body: %d %s", r.status, r.body)
	}
	if n := countOfType(readLog(t, dir), "ProductCreated"); n != 4 {
		t.Fatalf("%d ProductCreated events, want 4", n)
	}
}

// countOfType counts the events of a type in the log.
func countOfType(events []eventlog.Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestCatalogInventoryEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "stock.example.com", "agency", "products:read,products:write")
	other := newTenant(t, dir, "other-stock.example.com", "agency", "products:read,products:write")
	readOnly := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "products:read")
	waitForToken(t, s, tenant{token: readOnly["token"].(string), position: uint64(readOnly["position"].(float64))})
	waitForToken(t, s, other)
	a := catalogClient{t: t, s: s, v: v, token: tn.token}
	b := catalogClient{t: t, s: s, v: v, token: other.token}
	ro := catalogClient{t: t, s: s, v: v, token: readOnly["token"].(string)}

	// Platform product with two variants; three levels, one untracked.
	s.deliver(t, tn, "products/create", "dlv-inv-p", fixture(t, "products/create"))
	platformID := domain.ProductIDFromExternal(tn.shopID, "8123456789012")
	level := fixture(t, "inventory_levels/update")
	s.deliver(t, tn, "inventory_levels/update", "dlv-inv-1", level)
	s.deliver(t, tn, "inventory_levels/update", "dlv-inv-2", withField(t, level, "location_id", "40642626", "111"))
	untracked := withField(t, withField(t, level, "inventory_item_id", "46234567890124", "46234567890123"), "available", "7", "null")
	pos := fmt.Sprint(s.deliver(t, tn, "inventory_levels/update", "dlv-inv-3", untracked))

	rows := a.list("/api/v1/inventory?limit=1&filter[product_id]="+platformID, pos)
	if len(rows) != 3 {
		t.Fatalf("filter[product_id]: %d levels, want 3", len(rows))
	}
	for i, r := range rows {
		at := attrs(r)
		if at["product_id"] != platformID || !strings.HasPrefix(at["sku"].(string), "LIN-SHIRT-") {
			t.Fatalf("level %v", r)
		}
		if i > 0 && attrs(rows[i-1])["inventory_item_id"].(string) > at["inventory_item_id"].(string) {
			t.Fatalf("default sort out of order: %v", rows)
		}
		if at["inventory_item_id"] == "46234567890123" && at["available"] != nil {
			t.Fatalf("untracked level shows available %v", at["available"])
		}
	}
	if rows := a.list("/api/v1/inventory?filter[sku]=LIN-SHIRT-L-SAND&sort=-updated_at", pos); len(rows) != 2 || attrs(rows[0])["available"] != 7.0 {
		t.Fatalf("filter[sku]: %v", rows)
	}
	if rows := a.list("/api/v1/inventory?filter[location_id]=111", pos); len(rows) != 1 || attrs(rows[0])["location_id"] != "111" {
		t.Fatalf("filter[location_id]: %v", rows)
	}
	if rows := b.list("/api/v1/inventory?limit=5", pos); len(rows) != 0 {
		t.Fatalf("another shop sees %d levels", len(rows))
	}
	for q, field := range map[string]string{"filter[variant_id]=1": "filter[variant_id]", "sort=available": "sort", "limit=0": "limit"} {
		a.fails(400, "invalid_parameter", field, http.MethodGet, "/api/v1/inventory?"+q, "")
	}

	// A product of the API: its variant's inventory item takes levels too.
	p := data(a.ok(201, http.MethodPost, "/api/v1/products", `{"data":{"attributes":{"title":"Mug","variants":[{"sku":"MUG","price":"9"}]}}}`), t)
	item := attrs(p)["variants"].([]any)[0].(map[string]any)["inventory_item_id"].(string)

	const path = "/api/v1/inventory"
	ro.fails(403, "scope_required", "", http.MethodPatch, path, `{"data":{"attributes":{"items":[]}}}`)
	// One bad item: nothing is applied, every bad item is named.
	bad := fmt.Sprintf(`{"data":{"attributes":{"items":[{"inventory_item_id":%q,"location_id":"loc-a","available":999},
		{"inventory_item_id":"46234567890124","location_id":"loc-bad"},{"inventory_item_id":5,"location_id":"x","available":1}]}}}`, item)
	d := a.fails(422, "validation_failed", "items[1].available", http.MethodPatch, path, bad)
	if got := fmt.Sprint(d["items"]); !strings.Contains(got, "index:1") || !strings.Contains(got, "index:2") || strings.Contains(got, "index:0") {
		t.Fatalf("details.items = %s", got)
	}
	dup := fmt.Sprintf(`{"data":{"attributes":{"items":[{"inventory_item_id":%q,"location_id":"loc-a","available":1},
		{"inventory_item_id":"46234567890124","location_id":"loc-bad","available":2000000000},
		{"inventory_item_id":%q,"location_id":"loc-a","available":2}]}}}`, item, item)
	d = a.fails(422, "validation_failed", "items[1].available", http.MethodPatch, path, dup)
	if items := d["items"].([]any); len(items) != 2 || items[1].(map[string]any)["index"] != 2.0 || items[1].(map[string]any)["field"] != "location_id" {
		t.Fatalf("details.items = %v", d["items"])
	}
	many := `{"data":{"attributes":{"items":[` + strings.Repeat(`{"inventory_item_id":"i","location_id":"l","available":1},`, 100) +
		`{"inventory_item_id":"i","location_id":"l","available":1}]}}}`
	a.fails(422, "validation_failed", "items", http.MethodPatch, path, many)
	a.fails(422, "validation_failed", "items", http.MethodPatch, path, `{"data":{"attributes":{"items":[]}}}`)

	// A good bulk update, replayed with its Idempotency-Key.
	good := fmt.Sprintf(`{"data":{"attributes":{"items":[{"inventory_item_id":%q,"location_id":"loc-a","available":5},
		{"inventory_item_id":"46234567890124","location_id":"40642626","available":20}]}}}`, item)
	first := a.ok(200, http.MethodPatch, path, good, "Idempotency-Key", "inv-1")
	again := a.ok(200, http.MethodPatch, path, good, "Idempotency-Key", "inv-1")
	if again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("replay: %v %s", again.header, again.body)
	}
	if at := attrs(data(first, t)); len(at["items"].([]any)) != 2 {
		t.Fatalf("adjustment %s", first.body)
	}
	after := first.position(t)
	mug := a.list("/api/v1/inventory?filter[sku]=MUG", after)
	if len(mug) != 1 || attrs(mug[0])["available"] != 5.0 || attrs(mug[0])["product_id"] != p["id"] || attrs(mug[0])["location_id"] != "loc-a" {
		t.Fatalf("after PATCH, MUG: %v", mug)
	}
	shirt := a.list("/api/v1/inventory?filter[location_id]=40642626&filter[sku]=LIN-SHIRT-L-SAND", after)
	if len(shirt) != 1 || attrs(shirt[0])["available"] != 20.0 {
		t.Fatalf("after PATCH, shirt: %v", shirt)
	}
	if n := len(a.list("/api/v1/inventory?filter[location_id]=loc-bad", after)); n != 0 {
		t.Fatalf("a rejected item was applied: %d levels at loc-bad", n)
	}
	if n := countOfType(readLog(t, dir), "InventoryAdjusted"); n != 1 {
		t.Fatalf("%d InventoryAdjusted events, want 1", n)
	}
}
