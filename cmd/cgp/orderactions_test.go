package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/replay"
)

// on answers a GraphQL operation of the fake platform (by its first
// field's name) with fn's data.
func (fp *fakePlatform) on(name string, fn func(shop string, vars map[string]any) any) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.Mutations[name] = fn
}

// flakyPlatform stands in front of the fake platform: while down, its
// Admin GraphQL endpoint answers 503 with Retry-After, as the platform
// does in an outage; OAuth passes through.
type flakyPlatform struct {
	*httptest.Server
	down atomic.Bool
}

func newFlakyPlatform(t *testing.T, fp *fakePlatform) *flakyPlatform {
	t.Helper()
	target, err := url.Parse(fp.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	f := &flakyPlatform{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() && strings.HasSuffix(r.URL.Path, "/graphql.json") {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// post sends a JSON admin API write with the token and extra headers
// (name, value pairs).
func (s *testServer) post(t *testing.T, path, token, body string, extra ...string) response {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return do(t, http.MethodPost, s.base+path, []byte(body), h)
}

// orderActions returns the actions of an order once the order read model
// reached pos.
func orderActions(t *testing.T, s *testServer, tn tenant, orderID, pos string) []map[string]any {
	t.Helper()
	r := s.get(t, "/api/v1/orders/"+orderID, tn.token, "X-Wait-For-Position", pos)
	if r.status != http.StatusOK {
		t.Fatalf("GET order: %d %s", r.status, r.body)
	}
	return toMaps(attr(r.json(t)["data"].(map[string]any), "actions"))
}

// deliverTestOrder posts the orders/create fixture as order ext of tn.
func deliverTestOrder(t *testing.T, s *testServer, tn tenant, ext int64) string {
	t.Helper()
	s.deliverOrder(t, tn, testOrder{ext: ext, created: "2026-03-09T10:58:12+01:00", total: "114.30", financial: "paid"})
	return domain.OrderIDFromExternal(tn.shopID, strconv.FormatInt(ext, 10))
}

// TestOrderActionsOnThePlatform cancels and refunds orders of an installed
// shop through the admin API: each reaches the platform's Admin GraphQL
// API exactly once even when retried with the same Idempotency-Key, shows
// as submitted, and the platform's own webhook confirms it. The
// platform's userErrors, outage, a shop without a session and a shop
// without the write_orders grant get their documented answers.
func TestOrderActionsOnThePlatform(t *testing.T) {
	dir := t.TempDir()
	fp := newFakePlatform(t)
	flaky := newFlakyPlatform(t, fp)
	s := startServerWith(t, dir, func(c *Config) {
		fp.configure(c)
		c.PlatformAPIURL = flaky.URL + "/{shop}"
	})
	v := openapitest.NewValidator(t)
	tn := installedTenant(t, s, fp, "atelier-actions.myshopify.com", "orders:read,orders:write")

	var mu sync.Mutex
	var cancelVars, refundVars map[string]any
	fp.on("orderCancel", func(_ string, vars map[string]any) any {
		mu.Lock()
		cancelVars = vars
		mu.Unlock()
		return map[string]any{"orderCancel": map[string]any{"job": map[string]any{"id": "gid://shopify/Job/cancel-1", "done": false},
			"orderCancelUserErrors": []any{}}}
	})
	fp.on("order", func(_ string, vars map[string]any) any {
		return map[string]any{"order": map[string]any{"id": vars["id"], "transactions": []any{
			map[string]any{"id": "gid://shopify/OrderTransaction/801038806", "gateway": "shopify_payments", "kind": "SALE", "status": "SUCCESS",
				"amountSet": map[string]any{"shopMoney": map[string]any{"amount": "114.30", "currencyCode": "EUR"}}}}}}
	})
	fp.on("refundCreate", func(_ string, vars map[string]any) any {
		mu.Lock()
		refundVars = vars
		mu.Unlock()
		return map[string]any{"refundCreate": map[string]any{"refund": map[string]any{"id": "gid://shopify/Refund/929361464",
			"totalRefundedSet": map[string]any{"shopMoney": map[string]any{"amount": "59.90", "currencyCode": "EUR"}}}, "userErrors": []any{}}}
	})

	first := deliverTestOrder(t, s, tn, 5984321190041)
	post := func(path, body string, extra ...string) response {
		t.Helper()
		r := s.post(t, path, tn.token, body, extra...)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}

	// Bad bodies and unknown orders never reach the platform.
	for name, c := range map[string]struct {
		path, body, code string
		status           int
	}{
		"malformed":      {"/api/v1/orders/" + first + "/cancel", `{"data":`, "invalid_json", 400},
		"unknown reason": {"/api/v1/orders/" + first + "/cancel", `{"data":{"attributes":{"reason":"BORED"}}}`, "validation_failed", 422},
		"unknown order":  {"/api/v1/orders/ord_doesnotexist/cancel", `{"data":{"attributes":{"reason":"CUSTOMER"}}}`, "not_found", 404},
		"over-refund":    {"/api/v1/orders/" + first + "/refunds", `{"data":{"attributes":{"amount":"114.31"}}}`, "validation_failed", 422},
		"unknown line": {"/api/v1/orders/" + first + "/refunds", `{"data":{"attributes":{"line_items":[{"line_item_id":1,"quantity":1}]}}}`,
			"validation_failed", 422},
	} {
		if r := post(c.path, c.body); r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if n := fp.calls("orderCancel") + fp.calls("refundCreate"); n != 0 {
		t.Fatalf("refused requests reached the platform %d times", n)
	}

	// Cancel, then retry with the same key: one call to the platform.
	body := `{"data":{"attributes":{"reason":"CUSTOMER","refund":true,"restock":true,"notify_customer":true,"staff_note":"Wrong size"}}}`
	r := post("/api/v1/orders/"+first+"/cancel", body, "Idempotency-Key", "cancel-first")
	if r.status != http.StatusAccepted || r.header.Get("X-Service-Stability") != "beta" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	data := r.json(t)["data"].(map[string]any)
	acts := toMaps(attr(data, "actions"))
	if len(acts) != 1 || acts[0]["kind"] != "cancel" || acts[0]["status"] != "submitted" || acts[0]["platform_job_id"] != "gid://shopify/Job/cancel-1" ||
		acts[0]["reason"] != "CUSTOMER" || data["meta"].(map[string]any)["action_id"] != acts[0]["id"] {
		t.Fatalf("cancel answered %s", r.body)
	}
	again := post("/api/v1/orders/"+first+"/cancel", body, "Idempotency-Key", "cancel-first")
	if again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "true" || fp.calls("orderCancel") != 1 {
		t.Fatalf("retry: %d %s, %d platform calls", again.status, again.body, fp.calls("orderCancel"))
	}
	mu.Lock()
	if cancelVars["orderId"] != "gid://shopify/Order/5984321190041" || cancelVars["reason"] != "CUSTOMER" || cancelVars["restock"] != true ||
		cancelVars["notifyCustomer"] != true || cancelVars["staffNote"] != "Wrong size" ||
		cancelVars["refundMethod"].(map[string]any)["originalPaymentMethodsRefund"] != true {
		t.Errorf("orderCancel variables %v", cancelVars)
	}
	mu.Unlock()
	// Another cancellation while this one is on its way: 409.
	if r := post("/api/v1/orders/"+first+"/cancel", body, "Idempotency-Key", "cancel-first-2"); r.status != http.StatusConflict || r.errorCode(t) != "conflict" {
		t.Fatalf("second cancellation: %d %s", r.status, r.body)
	}

	// The platform's orders/updated with cancelled_at confirms it.
	upd := (testOrder{ext: 5984321190041, created: "2026-03-09T10:58:12+01:00", total: "114.30", financial: "refunded"}).body(t)
	upd = withField(t, upd, "updated_at", `"2026-03-09T10:58:12+01:00"`, `"2026-03-10T09:00:00+01:00"`)
	upd = withField(t, upd, "cancelled_at", "null", `"2026-03-10T09:00:00+01:00"`)
	pos := s.deliver(t, tn, shopify.TopicOrdersUpdated, "dlv-oa-cancelled", upd)
	acts = orderActions(t, s, tn, first, strconv.FormatUint(pos, 10))
	if len(acts) != 1 || acts[0]["status"] != "confirmed" || acts[0]["confirmed_at"] == nil {
		t.Fatalf("after orders/updated: %v", acts)
	}
	if r := post("/api/v1/orders/"+first+"/cancel", body); r.status != http.StatusConflict || r.errorCode(t) != "conflict" {
		t.Fatalf("cancel a cancelled order: %d %s", r.status, r.body)
	}

	// Refund a line and money of another order, retried with the same
	// key: one refund on the platform, on the order's payment.
	second := deliverTestOrder(t, s, tn, 5984321190042)
	refund := `{"data":{"attributes":{"amount":"59.90","currency":"EUR","line_items":[{"line_item_id":14522187530329,"quantity":1,"restock":true}],"note":"Damaged","notify":true}}}`
	r = post("/api/v1/orders/"+second+"/refunds", refund, "Idempotency-Key", "refund-second")
	if r.status != http.StatusAccepted {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	acts = toMaps(attr(r.json(t)["data"].(map[string]any), "actions"))
	if len(acts) != 1 || acts[0]["kind"] != "refund" || acts[0]["status"] != "submitted" || acts[0]["platform_refund_id"] != "929361464" ||
		acts[0]["amount"] != 59.9 || acts[0]["currency"] != "EUR" {
		t.Fatalf("refund answered %s", r.body)
	}
	if again := post("/api/v1/orders/"+second+"/refunds", refund, "Idempotency-Key", "refund-second"); again.status != http.StatusAccepted ||
		again.header.Get("Idempotent-Replayed") != "true" || fp.calls("refundCreate") != 1 || fp.calls("order") != 1 {
		t.Fatalf("refund retry: %d, %d refundCreate calls", again.status, fp.calls("refundCreate"))
	}
	mu.Lock()
	in := refundVars["input"].(map[string]any)
	tx := in["transactions"].([]any)[0].(map[string]any)
	line := in["refundLineItems"].([]any)[0].(map[string]any)
	if in["orderId"] != "gid://shopify/Order/5984321190042" || in["notify"] != true || in["note"] != "Damaged" ||
		tx["parentId"] != "gid://shopify/OrderTransaction/801038806" || tx["amount"] != "59.90" || tx["kind"] != "REFUND" ||
		line["lineItemId"] != "gid://shopify/LineItem/14522187530329" || line["restockType"] != "RETURN" {
		t.Errorf("refundCreate input %v", in)
	}
	mu.Unlock()
	// More than what remains (114.30 − 59.90 on its way) is refused here.
	if r := post("/api/v1/orders/"+second+"/refunds", `{"data":{"attributes":{"amount":"54.41"}}}`); r.status != 422 || r.errorCode(t) != "validation_failed" {
		t.Fatalf("over-refund with one pending: %d %s", r.status, r.body)
	}
	// The platform's refunds/create for that refund confirms it.
	rb := withField(t, fixture(t, shopify.TopicRefundsCreate), "order_id", "5984321190041", "5984321190042")
	pos = s.deliver(t, tn, shopify.TopicRefundsCreate, "dlv-oa-refund", rb)
	got := s.get(t, "/api/v1/orders/"+second, tn.token, "X-Wait-For-Position", strconv.FormatUint(pos, 10))
	gotData := got.json(t)["data"].(map[string]any)
	acts = toMaps(attr(gotData, "actions"))
	if len(acts) != 1 || acts[0]["status"] != "confirmed" || attr(gotData, "refunded") != 59.9 {
		t.Fatalf("after refunds/create: %s", got.body)
	}

	// The platform's userErrors: 422 platform_rejected, the action failed.
	third := deliverTestOrder(t, s, tn, 5984321190043)
	fp.on("orderCancel", func(string, map[string]any) any {
		return map[string]any{"orderCancel": map[string]any{"job": nil, "orderCancelUserErrors": []any{
			map[string]any{"field": []string{"orderId"}, "message": "Cannot cancel an order with pending payments", "code": "INVALID"}}}}
	})
	r = post("/api/v1/orders/"+third+"/cancel", `{"data":{"attributes":{"reason":"OTHER"}}}`, "Idempotency-Key", "cancel-third")
	if r.status != 422 || r.errorCode(t) != "platform_rejected" {
		t.Fatalf("userErrors: %d %s", r.status, r.body)
	}
	ue := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["user_errors"].([]any)
	if len(ue) != 1 || ue[0].(map[string]any)["message"] != "Cannot cancel an order with pending payments" {
		t.Fatalf("user_errors %s", r.body)
	}
	acts = orderActions(t, s, tn, third, r.header.Get("X-Event-Position"))
	if len(acts) != 1 || acts[0]["status"] != "failed" || acts[0]["error"].(map[string]any)["code"] != "platform_rejected" {
		t.Fatalf("rejected action %v", acts)
	}

	// The platform down: 502 platform_unavailable with Retry-After,
	// recorded as failed; the same key runs again once it is back.
	flaky.down.Store(true)
	r = post("/api/v1/orders/"+third+"/refunds", `{"data":{"attributes":{"amount":"10"}}}`, "Idempotency-Key", "refund-third")
	if r.status != http.StatusBadGateway || r.errorCode(t) != "platform_unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("platform down: %d %s %v", r.status, r.body, r.header)
	}
	flaky.down.Store(false)
	if r := post("/api/v1/orders/"+third+"/refunds", `{"data":{"attributes":{"amount":"10"}}}`, "Idempotency-Key", "refund-third"); r.status != http.StatusAccepted {
		t.Fatalf("after the outage: %d %s", r.status, r.body)
	}

	// Another shop's order is not found.
	other := installedTenant(t, s, fp, "other-actions.myshopify.com", "orders:write")
	if r := s.post(t, "/api/v1/orders/"+second+"/refunds", other.token, `{"data":{"attributes":{"amount":"1"}}}`); r.status != 404 {
		t.Fatalf("other shop's order: %d %s", r.status, r.body)
	}

	// A shop without a platform session: 409 platform_not_connected.
	plain := newTenant(t, dir, "plain-actions.myshopify.com", "agency", "orders:write")
	waitForToken(t, s, plain)
	plainOrder := deliverTestOrder(t, s, plain, 5984321190044)
	r = s.post(t, "/api/v1/orders/"+plainOrder+"/cancel", plain.token, `{"data":{"attributes":{"reason":"STAFF"}}}`)
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != http.StatusConflict || r.errorCode(t) != "platform_not_connected" ||
		!strings.Contains(fmt.Sprint(r.json(t)["error"].(map[string]any)["details"]), "/auth/install?shop=plain-actions.myshopify.com") {
		t.Fatalf("no session: %d %s", r.status, r.body)
	}

	// A shop that did not grant write_orders: 403 platform_scope_missing.
	fp.setGrant("readonly-actions.myshopify.com", "read_orders,read_products")
	ro := installedTenant(t, s, fp, "readonly-actions.myshopify.com", "orders:write")
	roOrder := deliverTestOrder(t, s, ro, 5984321190045)
	r = s.post(t, "/api/v1/orders/"+roOrder+"/refunds", ro.token, `{"data":{"attributes":{"amount":"1"}}}`)
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != http.StatusForbidden || r.errorCode(t) != "platform_scope_missing" {
		t.Fatalf("no write_orders: %d %s", r.status, r.body)
	}
	if d := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["platform_scope"] != "write_orders" ||
		!strings.HasSuffix(d["reauthorize_url"].(string), "/auth/install?shop=readonly-actions.myshopify.com") {
		t.Fatalf("details %v", d)
	}
	if n := fp.calls("orderCancel") + fp.calls("refundCreate"); n != 4 {
		t.Errorf("the platform was called %d times, want 4 (cancel, refund, rejected cancel, refund after the outage)", n)
	}
	// Every request and outcome is on the orders' streams.
	if n := countShopType(t, dir, "OrderActionFailed", tn.shopID); n != 2 {
		t.Errorf("%d OrderActionFailed, want 2 (rejected, unavailable)", n)
	}
	if n := countShopType(t, dir, "OrderActionSubmitted", tn.shopID); n != 3 {
		t.Errorf("%d OrderActionSubmitted, want 3", n)
	}

	// Replaying the log rebuilds the actions and their confirmations as
	// they were.
	waitAllProjected(t, dir)
	s.stop()
	want := snapshot(t, dir)
	replayCLI(t, dir, "--projector", "commerce")
	live, err := replay.Current(dir)
	if err != nil {
		t.Fatal(err)
	}
	compareVersions(t, live, want)
}

// TestProductPatchPushesToThePlatform changes platform products through
// PATCH /api/v1/products/{id}: pushed when the shop granted
// write_products, not pushed (said so) without a grant or a session, and
// push_failed with the platform's userErrors, the local change standing
// in every case.
func TestProductPatchPushesToThePlatform(t *testing.T) {
	dir := t.TempDir()
	fp := newFakePlatform(t)
	s := startServerWith(t, dir, fp.configure)
	v := openapitest.NewValidator(t)
	tn := installedTenant(t, s, fp, "atelier-push.myshopify.com", "products:read,products:write")
	var mu sync.Mutex
	var productVars, variantVars map[string]any
	fp.on("productUpdate", func(_ string, vars map[string]any) any {
		mu.Lock()
		productVars = vars
		mu.Unlock()
		return map[string]any{"productUpdate": map[string]any{"product": map[string]any{"id": "p"}, "userErrors": []any{}}}
	})
	fp.on("productVariantsBulkUpdate", func(_ string, vars map[string]any) any {
		mu.Lock()
		variantVars = vars
		mu.Unlock()
		return map[string]any{"productVariantsBulkUpdate": map[string]any{"productVariants": []any{}, "userErrors": []any{}}}
	})
	pb := fixture(t, shopify.TopicProductsCreate)
	pos := s.deliver(t, tn, shopify.TopicProductsCreate, "dlv-push-prd", pb)
	prod := s.get(t, "/api/v1/products?limit=1", tn.token, "X-Wait-For-Position", strconv.FormatUint(pos, 10))
	items := toMaps(prod.json(t)["data"])
	if len(items) != 1 {
		t.Fatalf("products %s", prod.body)
	}
	id := items[0]["id"].(string)
	variant := toMaps(attr(items[0], "variants"))[0]["id"].(string)
	patch := func(token, body string) (response, map[string]any) {
		t.Helper()
		r := do(t, http.MethodPatch, s.base+"/api/v1/products/"+id, []byte(body), map[string]string{"Authorization": "Bearer " + token,
			"Content-Type": "application/json"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusOK {
			t.Fatalf("PATCH: %d %s", r.status, r.body)
		}
		data := r.json(t)["data"].(map[string]any)
		return r, data["meta"].(map[string]any)["platform_sync"].(map[string]any)
	}

	_, sync := patch(tn.token, `{"data":{"attributes":{"title":"Linen shirt, sand","status":"draft","variants":[{"id":"`+variant+`","price":"64.90"}]}}}`)
	if sync["status"] != "pushed" || fp.calls("productUpdate") != 1 || fp.calls("productVariantsBulkUpdate") != 1 {
		t.Fatalf("push: %v, %d/%d calls", sync, fp.calls("productUpdate"), fp.calls("productVariantsBulkUpdate"))
	}
	mu.Lock()
	p := productVars["product"].(map[string]any)
	vr := variantVars["variants"].([]any)[0].(map[string]any)
	if !strings.HasPrefix(p["id"].(string), "gid://shopify/Product/") || p["title"] != "Linen shirt, sand" || p["status"] != "DRAFT" ||
		vr["id"] != "gid://shopify/ProductVariant/"+variant || vr["price"] != "64.90" {
		t.Errorf("pushed %v %v", productVars, variantVars)
	}
	mu.Unlock()

	// The platform's userErrors: the change stands, the answer says so.
	fp.on("productUpdate", func(string, map[string]any) any {
		return map[string]any{"productUpdate": map[string]any{"product": nil,
			"userErrors": []any{map[string]any{"field": []string{"title"}, "message": "Title is too long"}}}}
	})
	r, sync := patch(tn.token, `{"data":{"attributes":{"title":"Linen shirt"}}}`)
	if sync["status"] != "push_failed" || sync["error"].(map[string]any)["code"] != "platform_rejected" ||
		attr(r.json(t)["data"].(map[string]any), "title") != "Linen shirt" {
		t.Fatalf("push refused: %s", r.body)
	}

	// A product created through the API is not the platform's.
	created := do(t, http.MethodPost, s.base+"/api/v1/products", []byte(`{"data":{"attributes":{"title":"Local mug"}}}`),
		map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
	localID := created.json(t)["data"].(map[string]any)["id"].(string)
	lr := do(t, http.MethodPatch, s.base+"/api/v1/products/"+localID, []byte(`{"data":{"attributes":{"title":"Local cup"}}}`),
		map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
	if got := lr.json(t)["data"].(map[string]any)["meta"].(map[string]any)["platform_sync"].(map[string]any); got["reason"] != "not_platform_product" {
		t.Fatalf("local product: %s", lr.body)
	}

	// A shop that did not grant write_products: changed here, not pushed.
	fp.setGrant("readonly-push.myshopify.com", "read_products")
	ro := installedTenant(t, s, fp, "readonly-push.myshopify.com", "products:read,products:write")
	pos = s.deliver(t, ro, shopify.TopicProductsCreate, "dlv-push-ro", pb)
	roID := domain.ProductIDFromExternal(ro.shopID, "8123456789012")
	eventually(t, 10*time.Second, "read-only shop's product", func() bool {
		return s.get(t, "/api/v1/products/"+roID, ro.token, "X-Wait-For-Position", strconv.FormatUint(pos, 10)).status == 200
	})
	calls := fp.calls("productUpdate")
	rr := do(t, http.MethodPatch, s.base+"/api/v1/products/"+roID, []byte(`{"data":{"attributes":{"title":"Renamed"}}}`),
		map[string]string{"Authorization": "Bearer " + ro.token, "Content-Type": "application/json"})
	if rr.status != 200 {
		t.Fatalf("PATCH without the grant: %d %s", rr.status, rr.body)
	}
	got := rr.json(t)["data"].(map[string]any)
	if sync := got["meta"].(map[string]any)["platform_sync"].(map[string]any); sync["status"] != "not_pushed" ||
		sync["reason"] != "platform_scope_missing" || sync["platform_scope"] != "write_products" || fp.calls("productUpdate") != calls {
		t.Fatalf("not granted: %s", rr.body)
	}
	if attr(got, "title") != "Renamed" {
		t.Errorf("local change lost: %s", rr.body)
	}
}
