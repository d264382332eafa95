package platformapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/platformapi"
)

const (
	testShop  = "actions.myshopify.com"
	testToken = "shpat_test_access_token"
)

// gqlCall is one request the fake Admin GraphQL API received.
type gqlCall struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
}

// fakeAdmin serves the Admin GraphQL endpoint of the platform's documented
// contract: POST /{shop}/admin/api/{version}/graphql.json with the access
// token in X-Shopify-Access-Token; answer decides each answer.
type fakeAdmin struct {
	t      *testing.T
	mu     sync.Mutex
	calls  []gqlCall
	answer func(w http.ResponseWriter, c gqlCall)
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/"+testShop+"/admin/api/"+platformapi.DefaultAPIVersion+"/graphql.json" {
		f.t.Errorf("request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("X-Shopify-Access-Token") != testToken || r.Header.Get("Content-Type") != "application/json" {
		f.t.Errorf("headers %v", r.Header)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var c gqlCall
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		f.t.Errorf("body: %v", err)
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	f.answer(w, c)
}

func (f *fakeAdmin) all() []gqlCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gqlCall(nil), f.calls...)
}

func newAdmin(t *testing.T, answer func(w http.ResponseWriter, c gqlCall)) (*platformapi.Client, *fakeAdmin) {
	t.Helper()
	f := &fakeAdmin{t: t, answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := platformapi.New(platformapi.Config{BaseURL: srv.URL + "/{shop}", ClientID: "client", ClientSecret: "secret",
		ShopSuffix: platformapi.DefaultShopSuffix, HTTP: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func TestCancelOrderRequestAndJob(t *testing.T) {
	c, f := newAdmin(t, func(w http.ResponseWriter, c gqlCall) {
		writeJSON(w, map[string]any{"data": map[string]any{"orderCancel": map[string]any{
			"job": map[string]any{"id": "gid://shopify/Job/abc", "done": false}, "orderCancelUserErrors": []any{}}}})
	})
	job, err := c.CancelOrder(context.Background(), testShop, testToken, platformapi.CancelOrder{OrderID: "820982911946154508",
		Reason: "CUSTOMER", Refund: true, Restock: true, NotifyCustomer: false, StaffNote: "wrong size"})
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != "gid://shopify/Job/abc" || job.Done {
		t.Errorf("job %+v", job)
	}
	calls := f.all()
	if len(calls) != 1 || !strings.Contains(calls[0].Query, "orderCancel(") || !strings.Contains(calls[0].Query, "orderCancelUserErrors") {
		t.Fatalf("calls %+v", calls)
	}
	v := calls[0].Variables
	if v["orderId"] != "gid://shopify/Order/820982911946154508" || v["reason"] != "CUSTOMER" || v["restock"] != true ||
		v["notifyCustomer"] != false || v["staffNote"] != "wrong size" {
		t.Errorf("variables %v", v)
	}
	if rm, _ := v["refundMethod"].(map[string]any); rm["originalPaymentMethodsRefund"] != true {
		t.Errorf("refundMethod %v", v["refundMethod"])
	}
}

func TestCancelOrderUserErrors(t *testing.T) {
	c, _ := newAdmin(t, func(w http.ResponseWriter, c gqlCall) {
		writeJSON(w, map[string]any{"data": map[string]any{"orderCancel": map[string]any{"job": nil,
			"orderCancelUserErrors": []any{map[string]any{"field": []string{"orderId"}, "message": "Cannot cancel a fulfilled order", "code": "INVALID"}}}}})
	})
	_, err := c.CancelOrder(context.Background(), testShop, testToken, platformapi.CancelOrder{OrderID: "1", Reason: "OTHER"})
	var pe *platformapi.Error
	if !errors.As(err, &pe) || len(pe.UserErrors) != 1 || pe.UserErrors[0].Message != "Cannot cancel a fulfilled order" ||
		pe.UserErrors[0].Field[0] != "orderId" || pe.Retryable {
		t.Fatalf("error %#v", err)
	}
}

func TestActionFailuresThrottledServerErrorUnauthorized(t *testing.T) {
	for name, c := range map[string]struct {
		answer    func(w http.ResponseWriter)
		retryable bool
		after     time.Duration
		unauth    bool
	}{
		"throttled": {answer: func(w http.ResponseWriter) {
			writeJSON(w, map[string]any{"errors": []any{map[string]any{"message": "Throttled", "extensions": map[string]any{"code": "THROTTLED"}}}})
		}, retryable: true},
		"5xx": {answer: func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, retryable: true, after: 3 * time.Second},
		"401": {answer: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"})
		}, unauth: true},
	} {
		t.Run(name, func(t *testing.T) {
			client, _ := newAdmin(t, func(w http.ResponseWriter, _ gqlCall) { c.answer(w) })
			_, err := client.CreateRefund(context.Background(), testShop, testToken, platformapi.CreateRefund{OrderID: "1",
				Lines: []platformapi.RefundLine{{LineItemID: "2", Quantity: 1}}})
			var pe *platformapi.Error
			if !errors.As(err, &pe) || pe.Retryable != c.retryable || pe.RetryAfter != c.after ||
				errors.Is(err, platformapi.ErrUnauthorized) != c.unauth {
				t.Fatalf("error %#v", err)
			}
		})
	}
}

func TestCreateRefundReturnsMoneyOnTheOrdersPayment(t *testing.T) {
	c, f := newAdmin(t, func(w http.ResponseWriter, c gqlCall) {
		switch {
		case strings.Contains(c.Query, "transactions(first"):
			writeJSON(w, map[string]any{"data": map[string]any{"order": map[string]any{"id": c.Variables["id"], "transactions": []any{
				map[string]any{"id": "gid://shopify/OrderTransaction/10", "gateway": "bogus", "kind": "AUTHORIZATION", "status": "SUCCESS"},
				map[string]any{"id": "gid://shopify/OrderTransaction/11", "gateway": "bogus", "kind": "CAPTURE", "status": "SUCCESS"},
				map[string]any{"id": "gid://shopify/OrderTransaction/12", "gateway": "bogus", "kind": "CAPTURE", "status": "FAILURE"},
			}}}})
		case strings.Contains(c.Query, "refundCreate("):
			writeJSON(w, map[string]any{"data": map[string]any{"refundCreate": map[string]any{
				"refund":     map[string]any{"id": "gid://shopify/Refund/555", "totalRefundedSet": map[string]any{"shopMoney": map[string]any{"amount": "12.5", "currencyCode": "EUR"}}},
				"userErrors": []any{}}}})
		default:
			t.Errorf("query %s", c.Query)
		}
	})
	r, err := c.CreateRefund(context.Background(), testShop, testToken, platformapi.CreateRefund{OrderID: "77", Amount: 125000,
		Currency: "EUR", Note: "damaged", Notify: true,
		Lines: []platformapi.RefundLine{{LineItemID: "9", Quantity: 2, RestockType: platformapi.RestockReturn}, {LineItemID: "8", Quantity: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "gid://shopify/Refund/555" || r.ExternalID() != "555" || r.Amount != domain.Amount(125000) {
		t.Errorf("refund %+v", r)
	}
	calls := f.all()
	if len(calls) != 2 {
		t.Fatalf("calls %d", len(calls))
	}
	in := calls[1].Variables["input"].(map[string]any)
	if in["orderId"] != "gid://shopify/Order/77" || in["note"] != "damaged" || in["notify"] != true || in["currency"] != "EUR" {
		t.Errorf("input %v", in)
	}
	lines := in["refundLineItems"].([]any)
	if l := lines[0].(map[string]any); l["lineItemId"] != "gid://shopify/LineItem/9" || l["quantity"] != float64(2) || l["restockType"] != "RETURN" {
		t.Errorf("line %v", l)
	}
	if l := lines[1].(map[string]any); l["restockType"] != "NO_RESTOCK" {
		t.Errorf("line %v", l)
	}
	tx := in["transactions"].([]any)[0].(map[string]any)
	if tx["parentId"] != "gid://shopify/OrderTransaction/11" || tx["gateway"] != "bogus" || tx["kind"] != "REFUND" ||
		tx["amount"] != "12.50" || tx["orderId"] != "gid://shopify/Order/77" {
		t.Errorf("transaction %v", tx)
	}
}

func TestCreateRefundWithoutPaymentIsRefused(t *testing.T) {
	c, f := newAdmin(t, func(w http.ResponseWriter, c gqlCall) {
		writeJSON(w, map[string]any{"data": map[string]any{"order": map[string]any{"id": "x", "transactions": []any{}}}})
	})
	_, err := c.CreateRefund(context.Background(), testShop, testToken, platformapi.CreateRefund{OrderID: "77", Amount: 10000})
	var pe *platformapi.Error
	if !errors.As(err, &pe) || len(pe.UserErrors) != 1 || len(f.all()) != 1 {
		t.Fatalf("error %#v, %d calls", err, len(f.all()))
	}
}

func TestUpdateProductPushesFieldsThenVariants(t *testing.T) {
	c, f := newAdmin(t, func(w http.ResponseWriter, c gqlCall) {
		switch {
		case strings.Contains(c.Query, "productUpdate("):
			writeJSON(w, map[string]any{"data": map[string]any{"productUpdate": map[string]any{"product": map[string]any{"id": "p"}, "userErrors": []any{}}}})
		case strings.Contains(c.Query, "productVariantsBulkUpdate("):
			writeJSON(w, map[string]any{"data": map[string]any{"productVariantsBulkUpdate": map[string]any{"productVariants": []any{},
				"userErrors": []any{map[string]any{"field": []string{"variants", "0", "price"}, "message": "Price must be positive", "code": "INVALID"}}}}})
		}
	})
	title, status, sku := "Linen", "archived", "SKU-1"
	tags := []string{"a", "b"}
	price := domain.Amount(199000)
	err := c.UpdateProduct(context.Background(), testShop, testToken, platformapi.UpdateProduct{ProductID: "42", Title: &title,
		Status: &status, Tags: &tags, Variants: []platformapi.UpdateVariant{{VariantID: "7", Price: &price, ClearCompareAtPrice: true, SKU: &sku}}})
	var pe *platformapi.Error
	if !errors.As(err, &pe) || len(pe.UserErrors) != 1 {
		t.Fatalf("error %#v", err)
	}
	calls := f.all()
	if len(calls) != 2 {
		t.Fatalf("calls %d", len(calls))
	}
	p := calls[0].Variables["product"].(map[string]any)
	if p["id"] != "gid://shopify/Product/42" || p["title"] != "Linen" || p["status"] != "ARCHIVED" || len(p["tags"].([]any)) != 2 {
		t.Errorf("product %v", p)
	}
	if _, ok := p["vendor"]; ok {
		t.Errorf("vendor sent: %v", p)
	}
	v := calls[1].Variables
	vr := v["variants"].([]any)[0].(map[string]any)
	if v["productId"] != "gid://shopify/Product/42" || vr["id"] != "gid://shopify/ProductVariant/7" || vr["price"] != "19.90" {
		t.Errorf("variants %v", v)
	}
	if at, ok := vr["compareAtPrice"]; !ok || at != nil {
		t.Errorf("compareAtPrice %v", vr)
	}
	if vr["inventoryItem"].(map[string]any)["sku"] != "SKU-1" {
		t.Errorf("sku %v", vr)
	}

	// Variants only: one mutation.
	f2calls := len(f.all())
	if err := c.UpdateProduct(context.Background(), testShop, testToken, platformapi.UpdateProduct{ProductID: "42",
		Variants: []platformapi.UpdateVariant{{VariantID: "7", Price: &price}}}); err == nil {
		t.Fatal("the fake refuses every variant change")
	}
	if n := len(f.all()) - f2calls; n != 1 {
		t.Errorf("variants-only change made %d calls", n)
	}
}

func TestGID(t *testing.T) {
	if g := platformapi.GID("Order", "5"); g != "gid://shopify/Order/5" {
		t.Error(g)
	}
	if g := platformapi.GID("Order", "gid://shopify/Order/5"); g != "gid://shopify/Order/5" {
		t.Error(g)
	}
	if tail := platformapi.GIDTail("gid://shopify/Refund/9"); tail != "9" {
		t.Error(tail)
	}
}
