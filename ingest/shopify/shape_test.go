package shopify_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// TestEveryTopicHasAShape: the shape table covers the 27 topics, and each
// topic's fixture has its own topic's shape.
func TestEveryTopicHasAShape(t *testing.T) {
	for _, topic := range shopify.Topics() {
		if _, ok := shopify.ShapeOf(topic); !ok {
			t.Errorf("%s: no shape", topic)
			continue
		}
		if _, err := shopify.CheckShape(topic, fixture(t, topic)); err != nil {
			t.Errorf("%s: its fixture fails its shape: %v", topic, err)
		}
	}
}

// TestShapeRefusesAnotherTopicsBody: no fixture has the shape of a
// destructive topic but its own (the replay of a signed body under another
// topic header), and the attacks of issue 14 fail on the member that
// tells the topics apart.
func TestShapeRefusesAnotherTopicsBody(t *testing.T) {
	for _, target := range []string{shopify.TopicCustomersRedact, shopify.TopicShopRedact, shopify.TopicAppUninstalled, shopify.TopicProductsDelete} {
		for _, source := range shopify.Topics() {
			if source == target {
				continue
			}
			if _, err := shopify.CheckShape(target, fixture(t, source)); err == nil {
				t.Errorf("a %s body passes as %s", source, target)
			}
		}
	}
	for _, c := range []struct{ source, target, field string }{
		{shopify.TopicCustomersDataRequest, shopify.TopicCustomersRedact, "orders_to_redact"},
		{shopify.TopicCustomersDataRequest, shopify.TopicShopRedact, "orders_requested"},
		{shopify.TopicProductsCreate, shopify.TopicAppUninstalled, "name"},
		{shopify.TopicCustomersRedact, shopify.TopicCustomersDataRequest, "orders_requested"},
	} {
		_, err := shopify.CheckShape(c.target, fixture(t, c.source))
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid {
			t.Errorf("%s as %s: %v, want a validation error", c.source, c.target, err)
			continue
		}
		if c.target != shopify.TopicShopRedact && de.Field != c.field {
			t.Errorf("%s as %s: field %q, want %q", c.source, c.target, de.Field, c.field)
		}
	}
}

func TestShapeKindsAndShopDomain(t *testing.T) {
	for _, c := range []struct {
		topic, body string
		ok          bool
	}{
		{shopify.TopicShopRedact, `{"shop_id":1,"shop_domain":"a.myshopify.com"}`, true},
		{shopify.TopicShopRedact, `{"shop_id":"1","shop_domain":"a.myshopify.com"}`, true},
		{shopify.TopicShopRedact, `{"shop_id":null,"shop_domain":"a.myshopify.com"}`, false},
		{shopify.TopicShopRedact, `{"shop_id":"x1","shop_domain":"a.myshopify.com"}`, false},
		{shopify.TopicShopRedact, `{"shop_id":1.5,"shop_domain":"a.myshopify.com"}`, false},
		{shopify.TopicShopRedact, `{"shop_id":1,"shop_domain":7}`, false},
		{shopify.TopicShopRedact, `{"shop_id":1}`, false},
		{shopify.TopicShopRedact, `[]`, false},
		{shopify.TopicShopRedact, `null`, false},
		{shopify.TopicProductsDelete, `{"id":1,"title":"x","variants":[]}`, false},
		{shopify.TopicInventoryLevelsUpdate, `{"inventory_item_id":1,"location_id":2,"available":null,"updated_at":"x"}`, true},
		{shopify.TopicInventoryLevelsUpdate, `{"inventory_item_id":1,"location_id":2,"available":"7","updated_at":"x"}`, false},
		{shopify.TopicCustomersRedact, `{"shop_id":1,"shop_domain":"a.myshopify.com","customer":{"id":null},"orders_to_redact":[]}`, false},
		{shopify.TopicCustomersRedact, `{"shop_id":1,"shop_domain":"a.myshopify.com","customer":{"id":2},"orders_to_redact":[]}`, true},
		{"unknown/topic", `{}`, true},
	} {
		_, err := shopify.CheckShape(c.topic, []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: %v, want ok=%v", c.topic, c.body, err, c.ok)
		}
	}
	named, err := shopify.CheckShape(shopify.TopicAppUninstalled, []byte(`{"id":1,"name":"A","domain":"a.example","myshopify_domain":"A.MyShopify.com"}`))
	if err != nil || named != "a.myshopify.com" {
		t.Errorf("app/uninstalled names %q (%v)", named, err)
	}
	if named, _ := shopify.CheckShape(shopify.TopicOrdersCreate, fixture(t, shopify.TopicOrdersCreate)); named != "" {
		t.Errorf("orders/create names shop %q", named)
	}
}

// FuzzCheckShape: for any body and topic the check never panics, fails only
// with a validation error naming a member, and names a shop only when it
// passes.
func FuzzCheckShape(f *testing.F) {
	for _, topic := range shopify.Topics() {
		f.Add(topic, fixture(f, topic))
	}
	f.Add(shopify.TopicShopRedact, []byte(`{"shop_id":1,"shop_domain":"a.myshopify.com","x":1}`))
	f.Add(shopify.TopicCustomersRedact, []byte(`{"customer":{"id":{"a":1}}}`))
	f.Fuzz(func(t *testing.T, topic string, body []byte) {
		named, err := shopify.CheckShape(topic, body)
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field == "" {
				t.Fatalf("error %v is not a validation error naming a member", err)
			}
			if named != "" {
				t.Fatalf("names %q beside an error", named)
			}
		}
	})
}

// TestPublishedExamplesParse: every published example and variant
// (testdata/published) has its topic's shape and parses; checkout lines
// with only a key are identified by it, and a billing attempt with a null
// id by its idempotency key.
func TestPublishedExamplesParse(t *testing.T) {
	for _, topic := range shopify.Topics() {
		base := strings.ReplaceAll(topic, "/", "_")
		files, _ := filepath.Glob(filepath.Join("testdata", "published", base+"--*.json"))
		files = append(files, filepath.Join("testdata", "published", base+".json"))
		for _, f := range files {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			body = []byte(strings.ReplaceAll(string(body), "{shop}.myshopify.com", "x.myshopify.com"))
			if _, err := shopify.CheckShape(topic, body); err != nil {
				t.Errorf("%s: shape: %v", f, err)
			}
			if _, err := shopify.Parse(topic, body); err != nil {
				t.Errorf("%s: parse: %v", f, err)
			}
		}
	}
	co, err := shopify.ParseCheckout(readFile(t, "testdata/published/checkouts_update--key-only-lines-guest.json"))
	if err != nil || len(co.LineItems) != 2 || co.LineItems[0].ID != "3a3fd6a6dd9ea1dd0cd4e6f5e5f14b8e" || co.CustomerID != "" {
		t.Errorf("key-only checkout: %+v %v", co.LineItems, err)
	}
	ba, err := shopify.ParseBillingAttempt(readFile(t, "testdata/published/subscription_billing_attempts_success.json"))
	if err != nil || ba.ID != "4f6b5e4d-8f6c-4a9a-9a3e-2b1c0d9e8f7a" {
		t.Errorf("billing attempt with a null id: %+v %v", ba, err)
	}
	if _, err := shopify.ParseOrder([]byte(`{"id":1,"line_items":[{"quantity":1}]}`)); err == nil {
		t.Error("an order line without id or key parsed")
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
