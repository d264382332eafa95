package shopify_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// fixture reads testdata/<topic with / replaced by _>.json.
func fixture(t testing.TB, topic string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", strings.ReplaceAll(topic, "/", "_")+".json"))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

func amount(t testing.TB, s string) domain.Amount {
	t.Helper()
	a, err := domain.ParseAmount(s)
	if err != nil {
		t.Fatalf("parse amount %q: %v", s, err)
	}
	return a
}

func utc(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("parse time %q: %v", s, err)
	}
	return tm.UTC()
}

func TestTopics(t *testing.T) {
	topics := shopify.Topics()
	if len(topics) != 27 {
		t.Fatalf("Topics() has %d names, want 27", len(topics))
	}
	seen := map[string]bool{}
	for _, topic := range topics {
		if seen[topic] {
			t.Errorf("topic %q listed twice", topic)
		}
		seen[topic] = true
	}
	topics[0] = "mutated"
	if shopify.Topics()[0] != shopify.TopicCustomersCreate {
		t.Error("Topics() shares its slice between calls")
	}
}

// TestParseFixtures parses every topic's fixture through Parse and checks
// the key fields of the typed value it returns.
func TestParseFixtures(t *testing.T) {
	const (
		orderID    = "5984321190041"
		customerID = "7064055069303700841" // above 2^53: must stay exact
	)
	checkOrder := func(t *testing.T, v any) shopify.Order {
		o := v.(shopify.Order)
		if o.ID != orderID || o.Name != "#1043" || o.CustomerID != customerID || o.Email != "noor.haddad@example.com" {
			t.Errorf("ids: %+v", o)
		}
		if o.Currency != "EUR" || o.TotalPrice != amount(t, "114.30") || o.SubtotalPrice != amount(t, "114.30") ||
			o.TotalTax != amount(t, "19.84") || o.TotalDiscounts != amount(t, "10") {
			t.Errorf("money: %+v", o)
		}
		if !o.CreatedAt.Equal(utc(t, "2026-03-09T09:58:12Z")) || o.CreatedAt.Location() != time.UTC ||
			!o.ProcessedAt.Equal(utc(t, "2026-03-09T09:58:11Z")) || !o.CancelledAt.IsZero() {
			t.Errorf("times: %v %v %v", o.CreatedAt, o.ProcessedAt, o.CancelledAt)
		}
		want := []shopify.LineItem{
			{ID: "14522187530329", ProductID: "8123456789012", VariantID: "44123456789012", SKU: "LIN-SHIRT-M-SAND", Title: "Linen Shirt", Quantity: 2, Price: amount(t, "59.90")},
			{ID: "14522187563097", Title: "Gift wrapping", Quantity: 1, Price: amount(t, "4.50")},
		}
		if !reflect.DeepEqual(o.LineItems, want) {
			t.Errorf("line items:\n got %+v\nwant %+v", o.LineItems, want)
		}
		if !reflect.DeepEqual(o.NoteAttributes, []shopify.NoteAttribute{{"gift_message", "Happy birthday!"}, {"delivery_slot", "2"}}) {
			t.Errorf("note attributes: %+v", o.NoteAttributes)
		}
		if !reflect.DeepEqual(o.DiscountCodes, []string{"SPRING10"}) || o.SourceName != "web" || o.ReferringSite != "https://mail.example.net/" {
			t.Errorf("codes/source: %+v", o)
		}
		if o.UTM != (shopify.UTM{Source: "newsletter", Medium: "email", Campaign: "spring_launch", Content: "hero"}) ||
			o.ClickIDs != (shopify.ClickIDs{GCLID: "EAIaIQobChMI8x"}) {
			t.Errorf("attribution: %+v %+v", o.UTM, o.ClickIDs)
		}
		return o
	}
	tests := []struct {
		topic string
		check func(t *testing.T, v any)
	}{
		{shopify.TopicCustomersCreate, func(t *testing.T, v any) {
			c := v.(shopify.Customer)
			if c.ID != customerID || c.Email != "noor.haddad@example.com" || c.TotalSpent != amount(t, "412.75") ||
				c.OrdersCount != 3 || !reflect.DeepEqual(c.Tags, []string{"vip", "newsletter"}) ||
				!c.CreatedAt.Equal(utc(t, "2026-03-02T14:14:07Z")) {
				t.Errorf("%+v", c)
			}
		}},
		{shopify.TopicCustomersUpdate, func(t *testing.T, v any) {
			if c := v.(shopify.Customer); c.ID != customerID || len(c.Tags) != 3 || !c.UpdatedAt.Equal(utc(t, "2026-03-09T10:00:00Z")) {
				t.Errorf("%+v", c)
			}
		}},
		{shopify.TopicOrdersCreate, func(t *testing.T, v any) {
			if o := checkOrder(t, v); o.FinancialStatus != "pending" || o.FulfillmentStatus != "" ||
				!reflect.DeepEqual(o.Tags, []string{"first-order", "newsletter"}) {
				t.Errorf("%+v", o)
			}
		}},
		{shopify.TopicOrdersUpdated, func(t *testing.T, v any) {
			if o := checkOrder(t, v); len(o.Tags) != 3 || !o.UpdatedAt.Equal(utc(t, "2026-03-09T11:30:00Z")) {
				t.Errorf("%+v", o)
			}
		}},
		{shopify.TopicOrdersPaid, func(t *testing.T, v any) {
			if o := checkOrder(t, v); o.FinancialStatus != "paid" {
				t.Errorf("%+v", o)
			}
		}},
		{shopify.TopicOrdersFulfilled, func(t *testing.T, v any) {
			if o := checkOrder(t, v); o.FulfillmentStatus != "fulfilled" {
				t.Errorf("%+v", o)
			}
		}},
		{shopify.TopicRefundsCreate, func(t *testing.T, v any) {
			r := v.(shopify.Refund)
			want := shopify.Refund{
				ID: "929361464", OrderID: orderID, CreatedAt: utc(t, "2026-03-15T13:02:11Z"),
				// subtotal arrives as a JSON number: no float rounding allowed
				LineItems:    []shopify.RefundLineItem{{LineItemID: "14522187530329", Quantity: 1, Subtotal: amount(t, "59.90")}},
				Transactions: []shopify.RefundTransaction{{Amount: amount(t, "59.90"), Kind: "refund", Status: "success"}},
			}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("\n got %+v\nwant %+v", r, want)
			}
		}},
		{shopify.TopicProductsCreate, func(t *testing.T, v any) {
			p := v.(shopify.Product)
			if p.ID != "8123456789012" || p.Title != "Linen Shirt" || p.Handle != "linen-shirt" || p.Status != "active" ||
				p.Vendor != "Atelier Nord" || p.ProductType != "Shirts" || !reflect.DeepEqual(p.Tags, []string{"linen", "summer"}) ||
				!p.CreatedAt.Equal(utc(t, "2026-02-20T15:00:00Z")) {
				t.Errorf("%+v", p)
			}
			want := []shopify.Variant{
				{ID: "44123456789012", SKU: "LIN-SHIRT-M-SAND", Price: amount(t, "59.90"), InventoryItemID: "46234567890123", InventoryQuantity: 18},
				{ID: "44123456789013", SKU: "LIN-SHIRT-L-SAND", Price: amount(t, "59.90"), InventoryItemID: "46234567890124", InventoryQuantity: 0},
			}
			if !reflect.DeepEqual(p.Variants, want) {
				t.Errorf("variants: %+v", p.Variants)
			}
		}},
		{shopify.TopicProductsUpdate, func(t *testing.T, v any) {
			if p := v.(shopify.Product); p.Status != "archived" || len(p.Variants) != 2 {
				t.Errorf("%+v", p)
			}
		}},
		{shopify.TopicProductsDelete, func(t *testing.T, v any) {
			if d := v.(shopify.ProductDeletion); d.ID != "8123456789012" {
				t.Errorf("%+v", d)
			}
		}},
		{shopify.TopicInventoryLevelsUpdate, func(t *testing.T, v any) {
			l := v.(shopify.InventoryLevel)
			if l.InventoryItemID != "46234567890124" || l.LocationID != "40642626" || l.Available == nil || *l.Available != 7 ||
				!l.UpdatedAt.Equal(utc(t, "2026-03-12T09:21:00Z")) {
				t.Errorf("%+v", l)
			}
		}},
		{shopify.TopicCartsCreate, func(t *testing.T, v any) {
			c := v.(shopify.Cart)
			want := []shopify.CartLineItem{{Key: "44123456789012:6a1b2c3d4e5f", ProductID: "8123456789012", VariantID: "44123456789012",
				SKU: "LIN-SHIRT-M-SAND", Title: "Linen Shirt - M / Sand", Quantity: 1, Price: amount(t, "59.90"), LinePrice: amount(t, "59.90")}}
			if c.ID != "Z2NwLWV1cm9wZS13ZXN0NDowMUhYWjE" || !reflect.DeepEqual(c.LineItems, want) ||
				!c.UpdatedAt.Equal(utc(t, "2026-03-09T09:41:52Z")) {
				t.Errorf("%+v", c)
			}
		}},
		{shopify.TopicCartsUpdate, func(t *testing.T, v any) {
			if c := v.(shopify.Cart); c.LineItems[0].Quantity != 2 || c.LineItems[0].LinePrice != amount(t, "119.80") {
				t.Errorf("%+v", c)
			}
		}},
		{shopify.TopicCheckoutsCreate, func(t *testing.T, v any) {
			c := v.(shopify.Checkout)
			if c.ID != "33012345678901" || c.Token != "b7e3c1d2a4f5e6a7b8c9d0e1f2a3b4c5" || c.CartToken != "Z2NwLWV1cm9wZS13ZXN0NDowMUhYWjE" ||
				c.CustomerID != customerID || c.Email != "noor.haddad@example.com" || c.TotalPrice != amount(t, "119.80") ||
				c.Currency != "EUR" || !c.CompletedAt.IsZero() || c.ReferringSite != "https://l.facebook.com/" ||
				!strings.Contains(c.AbandonedCheckoutURL, "/recover?key=") || len(c.LineItems) != 1 {
				t.Errorf("%+v", c)
			}
			if c.UTM != (shopify.UTM{Source: "facebook", Medium: "paid_social", Campaign: "spring launch", Term: "linen shirt"}) ||
				c.ClickIDs != (shopify.ClickIDs{FBCLID: "IwAR0abc123"}) {
				t.Errorf("attribution: %+v %+v", c.UTM, c.ClickIDs)
			}
		}},
		{shopify.TopicCheckoutsUpdate, func(t *testing.T, v any) {
			if c := v.(shopify.Checkout); !c.CompletedAt.Equal(utc(t, "2026-03-09T09:58:11Z")) {
				t.Errorf("%+v", c)
			}
		}},
		{shopify.TopicSubscriptionContractsCreate, func(t *testing.T, v any) {
			want := shopify.SubscriptionContract{ID: "12582912345", AdminGraphQLAPIID: "gid://shopify/SubscriptionContract/12582912345",
				CustomerID: customerID, Status: "active", BillingPolicy: shopify.BillingPolicy{Interval: "month", IntervalCount: 1},
				OriginOrderID: orderID, CurrencyCode: "EUR"}
			if got := v.(shopify.SubscriptionContract); got != want {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		}},
		{shopify.TopicSubscriptionContractsUpdate, func(t *testing.T, v any) {
			if c := v.(shopify.SubscriptionContract); c.Status != "paused" {
				t.Errorf("%+v", c)
			}
		}},
		{shopify.TopicBillingAttemptsSuccess, func(t *testing.T, v any) {
			want := shopify.BillingAttempt{ID: "60123456", SubscriptionContractID: "12582912345", OrderID: "5990000000001",
				Ready: true, IdempotencyKey: "sc-12582912345-2026-04-09"}
			if got := v.(shopify.BillingAttempt); got != want {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		}},
		{shopify.TopicBillingAttemptsFailure, func(t *testing.T, v any) {
			want := shopify.BillingAttempt{ID: "60123999", SubscriptionContractID: "12582912345", Ready: true,
				ErrorMessage: "Your card has insufficient funds.", ErrorCode: "insufficient_funds", IdempotencyKey: "sc-12582912345-2026-05-09"}
			if got := v.(shopify.BillingAttempt); got != want {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		}},
		{shopify.TopicThemesPublish, func(t *testing.T, v any) {
			th := v.(shopify.Theme)
			if th.ID != "141234567890" || th.Name != "Dawn - spring 2026" || !th.IsMain() || !th.UpdatedAt.Equal(utc(t, "2026-03-10T12:30:00Z")) {
				t.Errorf("%+v", th)
			}
		}},
		{shopify.TopicThemesUpdate, func(t *testing.T, v any) {
			if th := v.(shopify.Theme); th.Role != shopify.ThemeRoleDevelopment || th.IsMain() {
				t.Errorf("%+v", th)
			}
		}},
		{shopify.TopicAppUninstalled, func(t *testing.T, v any) {
			want := shopify.Shop{ID: "59000000", Domain: "atelier-nord.example", MyshopifyDomain: "atelier-nord.myshopify.com"}
			if got := v.(shopify.Shop); got != want {
				t.Errorf("%+v", got)
			}
		}},
		{shopify.TopicAppSubscriptionsUpdate, func(t *testing.T, v any) {
			s := v.(shopify.AppSubscription)
			if s.AdminGraphQLAPIID != "gid://shopify/AppSubscription/27123456789" || s.Name != "Growth" || s.Status != "ACTIVE" ||
				s.AdminGraphQLAPIShopID != "gid://shopify/Shop/59000000" || s.Currency != "USD" ||
				s.CappedAmount == nil || *s.CappedAmount != amount(t, "500") || !s.UpdatedAt.Equal(utc(t, "2026-03-18T09:02:13Z")) {
				t.Errorf("%+v", s)
			}
		}},
		{shopify.TopicAppScopesUpdate, func(t *testing.T, v any) {
			s := v.(shopify.ScopesUpdate)
			if s.ID != "4012345678" || !reflect.DeepEqual(s.Previous, []string{"read_orders", "read_products"}) ||
				!reflect.DeepEqual(s.Current, []string{"read_orders", "read_products", "read_themes"}) ||
				!s.UpdatedAt.Equal(utc(t, "2026-03-19T14:45:00Z")) {
				t.Errorf("%+v", s)
			}
		}},
		{shopify.TopicCustomersDataRequest, func(t *testing.T, v any) {
			want := shopify.DataRequest{ShopID: "59000000", ShopDomain: "atelier-nord.myshopify.com",
				OrdersRequested: []string{orderID, "5990000000001"},
				Customer:        shopify.PrivacyCustomer{ID: customerID, Email: "noor.haddad@example.com", Phone: "+31612345678"},
				DataRequestID:   "9912"}
			if got := v.(shopify.DataRequest); !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		}},
		{shopify.TopicCustomersRedact, func(t *testing.T, v any) {
			want := shopify.CustomerRedact{ShopID: "59000000", ShopDomain: "atelier-nord.myshopify.com",
				Customer:       shopify.PrivacyCustomer{ID: customerID, Email: "noor.haddad@example.com", Phone: "+31612345678"},
				OrdersToRedact: []string{orderID, "5990000000001"}}
			if got := v.(shopify.CustomerRedact); !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		}},
		{shopify.TopicShopRedact, func(t *testing.T, v any) {
			if got := v.(shopify.ShopRedact); got != (shopify.ShopRedact{ShopID: "59000000", ShopDomain: "atelier-nord.myshopify.com"}) {
				t.Errorf("%+v", got)
			}
		}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.topic] = true
		t.Run(strings.ReplaceAll(tt.topic, "/", "_"), func(t *testing.T) {
			v, err := shopify.Parse(tt.topic, fixture(t, tt.topic))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, v)
		})
	}
	for _, topic := range shopify.Topics() {
		if !covered[topic] {
			t.Errorf("topic %s has no fixture test", topic)
		}
	}
}

func TestParseUnknownTopic(t *testing.T) {
	v, err := shopify.Parse("orders/deleted", []byte(`{"id":1}`))
	if !errors.Is(err, shopify.ErrUnknownTopic) || v != nil {
		t.Fatalf("Parse(unknown) = %v, %v; want nil, ErrUnknownTopic", v, err)
	}
}

// TestRejections checks that each parser refuses a payload without its id,
// with a malformed id, amount or timestamp, or that is not one JSON object,
// naming the field at fault.
func TestRejections(t *testing.T) {
	tests := []struct {
		name, topic, body, field string
	}{
		{"order without id", shopify.TopicOrdersCreate, `{"email":"a@example.com","total_price":"1.00"}`, "id"},
		{"order with null id", shopify.TopicOrdersPaid, `{"id":null}`, "id"},
		{"order with negative id", shopify.TopicOrdersCreate, `{"id":-5}`, "id"},
		{"order with fractional id", shopify.TopicOrdersCreate, `{"id":1.5}`, "id"},
		{"order with text id", shopify.TopicOrdersCreate, `{"id":"abc"}`, "body"},
		{"order money", shopify.TopicOrdersCreate, `{"id":1,"total_price":"12,50"}`, "total_price"},
		{"order money too precise", shopify.TopicOrdersCreate, `{"id":1,"total_tax":"1.00001"}`, "total_tax"},
		{"order money as object", shopify.TopicOrdersCreate, `{"id":1,"total_price":{"amount":"1"}}`, "body"},
		{"order time", shopify.TopicOrdersUpdated, `{"id":1,"created_at":"2026-03-09 10:58:12"}`, "created_at"},
		{"order time without zone", shopify.TopicOrdersUpdated, `{"id":1,"processed_at":"2026-03-09T10:58:12"}`, "processed_at"},
		{"order line without id", shopify.TopicOrdersCreate, `{"id":1,"line_items":[{"id":2},{"title":"x"}]}`, "line_items[1].id"},
		{"order line price", shopify.TopicOrdersCreate, `{"id":1,"line_items":[{"id":2,"price":"free"}]}`, "line_items[0].price"},
		{"order customer id", shopify.TopicOrdersCreate, `{"id":1,"customer":{"id":"1e3"}}`, "customer.id"},
		{"order trailing data", shopify.TopicOrdersCreate, `{"id":1} {"id":2}`, "body"},
		{"order not json", shopify.TopicOrdersCreate, `id=1`, "body"},
		{"order array", shopify.TopicOrdersCreate, `[{"id":1}]`, "body"},
		{"empty body", shopify.TopicOrdersCreate, ``, "body"},
		{"customer without id", shopify.TopicCustomersCreate, `{"email":"a@example.com"}`, "id"},
		{"customer money", shopify.TopicCustomersUpdate, `{"id":1,"total_spent":"ten"}`, "total_spent"},
		{"refund without id", shopify.TopicRefundsCreate, `{"order_id":1}`, "id"},
		{"refund without order", shopify.TopicRefundsCreate, `{"id":1}`, "order_id"},
		{"refund subtotal", shopify.TopicRefundsCreate, `{"id":1,"order_id":2,"refund_line_items":[{"line_item_id":3,"subtotal":1e2}]}`, "refund_line_items[0].subtotal"},
		{"refund transaction", shopify.TopicRefundsCreate, `{"id":1,"order_id":2,"transactions":[{"amount":"--1"}]}`, "transactions[0].amount"},
		{"refund time", shopify.TopicRefundsCreate, `{"id":1,"order_id":2,"created_at":"yesterday"}`, "created_at"},
		{"product without id", shopify.TopicProductsCreate, `{"title":"x"}`, "id"},
		{"product variant without id", shopify.TopicProductsUpdate, `{"id":1,"variants":[{"sku":"x"}]}`, "variants[0].id"},
		{"product variant price", shopify.TopicProductsUpdate, `{"id":1,"variants":[{"id":2,"price":"1.2.3"}]}`, "variants[0].price"},
		{"product time", shopify.TopicProductsUpdate, `{"id":1,"updated_at":"2026-13-01T00:00:00Z"}`, "updated_at"},
		{"product delete without id", shopify.TopicProductsDelete, `{}`, "id"},
		{"inventory without item", shopify.TopicInventoryLevelsUpdate, `{"location_id":1,"available":3}`, "inventory_item_id"},
		{"inventory without location", shopify.TopicInventoryLevelsUpdate, `{"inventory_item_id":1}`, "location_id"},
		{"inventory fractional stock", shopify.TopicInventoryLevelsUpdate, `{"inventory_item_id":1,"location_id":2,"available":1.5}`, "body"},
		{"cart without id", shopify.TopicCartsCreate, `{"line_items":[]}`, "id"},
		{"cart price", shopify.TopicCartsUpdate, `{"id":"tok","line_items":[{"price":"x"}]}`, "line_items[0].price"},
		{"checkout without id", shopify.TopicCheckoutsCreate, `{"token":"abc"}`, "id"},
		{"checkout money", shopify.TopicCheckoutsUpdate, `{"id":1,"total_price":"€5"}`, "total_price"},
		{"checkout time", shopify.TopicCheckoutsUpdate, `{"id":1,"completed_at":"soon"}`, "completed_at"},
		{"contract without id", shopify.TopicSubscriptionContractsCreate, `{"status":"active"}`, "id"},
		{"billing attempt without id", shopify.TopicBillingAttemptsSuccess, `{"subscription_contract_id":1}`, "id"},
		{"billing attempt without contract", shopify.TopicBillingAttemptsFailure, `{"id":1}`, "subscription_contract_id"},
		{"theme without id", shopify.TopicThemesPublish, `{"role":"main"}`, "id"},
		{"theme time", shopify.TopicThemesUpdate, `{"id":1,"updated_at":"12:00"}`, "updated_at"},
		{"app subscription without id", shopify.TopicAppSubscriptionsUpdate, `{"app_subscription":{"name":"Growth"}}`, "app_subscription.admin_graphql_api_id"},
		{"app subscription cap", shopify.TopicAppSubscriptionsUpdate, `{"app_subscription":{"admin_graphql_api_id":"gid://x/1","capped_amount":"lots"}}`, "app_subscription.capped_amount"},
		{"uninstalled without id", shopify.TopicAppUninstalled, `{"domain":"x.example"}`, "id"},
		{"scopes without id", shopify.TopicAppScopesUpdate, `{"current":["read_orders"]}`, "id"},
		{"data request without shop", shopify.TopicCustomersDataRequest, `{"customer":{"id":1}}`, "shop_id"},
		{"data request without customer", shopify.TopicCustomersDataRequest, `{"shop_id":1}`, "customer.id"},
		{"data request order id", shopify.TopicCustomersDataRequest, `{"shop_id":1,"customer":{"id":2},"orders_requested":[3,null]}`, "orders_requested"},
		{"redact without customer id", shopify.TopicCustomersRedact, `{"shop_id":1,"customer":{"email":"a@example.com"}}`, "customer.id"},
		{"shop redact without shop", shopify.TopicShopRedact, `{"shop_domain":"x.myshopify.com"}`, "shop_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := shopify.Parse(tt.topic, []byte(tt.body))
			var de *domain.Error
			if !errors.As(err, &de) {
				t.Fatalf("Parse = %+v, %v; want a *domain.Error", v, err)
			}
			if de.Code != domain.CodeInvalid || de.Field != tt.field {
				t.Errorf("error code %q field %q, want %q %q (%v)", de.Code, de.Field, domain.CodeInvalid, tt.field, err)
			}
			if v != nil {
				t.Errorf("Parse returned %+v beside the error", v)
			}
		})
	}
}

// TestOptionalFields checks that null and absent optional fields parse to
// their zero values rather than failing.
func TestOptionalFields(t *testing.T) {
	o, err := shopify.ParseOrder([]byte(`{"id":"42","email":null,"customer":null,"cancelled_at":null,"total_price":null,"line_items":[{"id":1,"product_id":null,"variant_id":null}]}`))
	if err != nil {
		t.Fatalf("ParseOrder: %v", err)
	}
	if o.ID != "42" || o.Email != "" || o.CustomerID != "" || !o.CancelledAt.IsZero() || o.TotalPrice != 0 || o.LineItems[0].ProductID != "" {
		t.Errorf("%+v", o)
	}
	l, err := shopify.ParseInventoryLevel([]byte(`{"inventory_item_id":1,"location_id":2,"available":null}`))
	if err != nil || l.Available != nil {
		t.Errorf("untracked stock: %+v, %v", l, err)
	}
	s, err := shopify.ParseAppSubscription([]byte(`{"app_subscription":{"admin_graphql_api_id":"gid://shopify/AppSubscription/1","capped_amount":null}}`))
	if err != nil || s.CappedAmount != nil {
		t.Errorf("uncapped plan: %+v, %v", s, err)
	}
	c, err := shopify.ParseCart([]byte(`{"token":"tok-only"}`))
	if err != nil || c.ID != "tok-only" {
		t.Errorf("cart with token only: %+v, %v", c, err)
	}
}

func TestParseLandingSite(t *testing.T) {
	tests := []struct {
		in   string
		utm  shopify.UTM
		clks shopify.ClickIDs
	}{
		{"", shopify.UTM{}, shopify.ClickIDs{}},
		{"/products/shirt", shopify.UTM{}, shopify.ClickIDs{}},
		{"https://shop.example/?utm_source=google&utm_medium=cpc&utm_campaign=brand&utm_term=linen%20shirt&utm_content=ad1&gclid=G1&gbraid=GB&wbraid=WB&fbclid=F&ttclid=T&msclkid=M#top",
			shopify.UTM{Source: "google", Medium: "cpc", Campaign: "brand", Term: "linen shirt", Content: "ad1"},
			shopify.ClickIDs{GCLID: "G1", GBRAID: "GB", WBRAID: "WB", FBCLID: "F", TTCLID: "T", MSCLKID: "M"}},
		{"/?utm_source=a&utm_source=b&UTM_MEDIUM=x", shopify.UTM{Source: "a"}, shopify.ClickIDs{}},
		{"/?utm_source=ok&bad=%zz&ttclid=T2", shopify.UTM{Source: "ok"}, shopify.ClickIDs{TTCLID: "T2"}},
	}
	for _, tt := range tests {
		utm, clks := shopify.ParseLandingSite(tt.in)
		if utm != tt.utm || clks != tt.clks {
			t.Errorf("ParseLandingSite(%q) = %+v %+v, want %+v %+v", tt.in, utm, clks, tt.utm, tt.clks)
		}
	}
}
