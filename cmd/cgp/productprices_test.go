package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestProductPatchChangesVariantPrices: products:write updates prices too
// (as documented): PATCH changes variants' price, compare_at_price and sku,
// validates money, names an unknown variant, records one event with the
// actor, and GET and the list show the change.
func TestProductPatchChangesVariantPrices(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "prices.example.com", "agency", "products:read,products:write")
	waitForToken(t, s, tn)
	a := catalogClient{t: t, s: s, v: openapitest.NewValidator(t), token: tn.token}

	r := a.ok(201, http.MethodPost, "/api/v1/products", `{"data":{"attributes":{"title":"Mug","variants":[{"sku":"MUG-S","price":"9.50"},{"sku":"MUG-L","price":12}]}}}`)
	prod := data(r, t)
	id := prod["id"].(string)
	vs := attrs(prod)["variants"].([]any)
	small, large := vs[0].(map[string]any)["id"].(string), vs[1].(map[string]any)["id"].(string)
	path := "/api/v1/products/" + id

	// Bad input: nothing recorded.
	patch := func(variants string) string { return `{"data":{"attributes":{"variants":` + variants + `}}}` }
	a.fails(422, "validation_failed", "variants[0].id", http.MethodPatch, path, patch(`[{"id":"var_nope","price":"1.00"}]`))
	a.fails(422, "validation_failed", "variants[1].id", http.MethodPatch, path, patch(fmt.Sprintf(`[{"id":%q,"price":"1.00"},{"price":"2.00"}]`, small)))
	for _, bad := range []string{`"12.345"`, `"-1.00"`, `"1e3"`, `"twelve"`, `""`} {
		a.fails(422, "validation_failed", "variants[0].price", http.MethodPatch, path, patch(fmt.Sprintf(`[{"id":%q,"price":%s}]`, small, bad)))
	}
	a.fails(422, "validation_failed", "variants[0].compare_at_price", http.MethodPatch, path, patch(fmt.Sprintf(`[{"id":%q,"compare_at_price":"9,99"}]`, small)))
	a.fails(422, "validation_failed", "variants[0].id", http.MethodPatch, path, patch(fmt.Sprintf(`[{"id":%q}]`, small)))
	a.fails(422, "validation_failed", "variants[1].id", http.MethodPatch, path, patch(fmt.Sprintf(`[{"id":%q,"price":1},{"id":%q,"price":2}]`, small, small)))
	if n := countOfType(readLog(t, dir), "ProductUpdated"); n != 0 {
		t.Fatalf("%d ProductUpdated events after refused patches", n)
	}

	// The change: price, compare-at price and SKU of one variant, price of the other.
	r = a.ok(200, http.MethodPatch, path, patch(fmt.Sprintf(`[{"id":%q,"price":"11.00","compare_at_price":"14.90","sku":"MUG-S2"},{"id":%q,"price":13.5}]`, small, large)))
	check := func(what string, res map[string]any, wantCompare any) {
		t.Helper()
		got := attrs(res)["variants"].([]any)
		s0, l0 := got[0].(map[string]any), got[1].(map[string]any)
		if s0["price"] != 11.0 || s0["compare_at_price"] != wantCompare || s0["sku"] != "MUG-S2" || l0["price"] != 13.5 ||
			l0["sku"] != "MUG-L" || l0["compare_at_price"] != nil || attrs(res)["title"] != "Mug" {
			t.Fatalf("%s: %v", what, got)
		}
	}
	check("PATCH answer", data(r, t), 14.9)
	pos := r.position(t)
	check("GET", data(a.ok(200, http.MethodGet, path, "", "X-Wait-For-Position", pos), t), 14.9)
	rows := a.list("/api/v1/products?limit=10", pos)
	if len(rows) != 1 {
		t.Fatalf("list: %v", rows)
	}
	check("list", rows[0], 14.9)

	// null removes the compare-at price.
	r = a.ok(200, http.MethodPatch, path, patch(fmt.Sprintf(`[{"id":%q,"compare_at_price":null}]`, small)))
	check("GET after clearing", data(a.ok(200, http.MethodGet, path, "", "X-Wait-For-Position", r.position(t)), t), nil)

	// One event per change, with the token as the actor.
	var updates int
	for _, e := range readLog(t, dir) {
		if e.Type == "ProductUpdated" && e.StreamID == domain.ProductStream(id) {
			updates++
			if !strings.HasPrefix(e.Metadata.Actor, "tok_") || e.Metadata.Source != "api" || !strings.HasPrefix(e.Metadata.CorrelationID, "req_") {
				t.Errorf("ProductUpdated metadata %+v", e.Metadata)
			}
		}
	}
	if updates != 2 {
		t.Fatalf("%d ProductUpdated events, want 2", updates)
	}
}
