package shopify_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// fuzzFamily seeds f with the fixtures of topics and checks, for any body,
// that every topic's parser either fails with a validation *domain.Error and
// no value, or returns a value whose identity (given by id) is non-empty,
// and that parsing is deterministic.
func fuzzFamily(f *testing.F, topics []string, id func(any) string) {
	for _, topic := range topics {
		f.Add(fixture(f, topic))
		// The published examples and their variants (testdata/published).
		published, _ := filepath.Glob(filepath.Join("testdata", "published", strings.ReplaceAll(topic, "/", "_")+"*.json"))
		for _, p := range published {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, topic := range topics {
			v, err := shopify.Parse(topic, body)
			if err != nil {
				var de *domain.Error
				if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field == "" {
					t.Fatalf("%s: error %v is not a validation error naming a field", topic, err)
				}
				if v != nil {
					t.Fatalf("%s: value %+v beside error", topic, v)
				}
				continue
			}
			if id(v) == "" {
				t.Fatalf("%s: accepted a payload without id: %+v", topic, v)
			}
			again, err := shopify.Parse(topic, body)
			if err != nil || !reflect.DeepEqual(v, again) {
				t.Fatalf("%s: not deterministic", topic)
			}
		}
	})
}

func FuzzCustomer(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicCustomersCreate, shopify.TopicCustomersUpdate},
		func(v any) string { return v.(shopify.Customer).ID })
}

func FuzzOrder(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicOrdersCreate, shopify.TopicOrdersUpdated, shopify.TopicOrdersPaid, shopify.TopicOrdersFulfilled},
		func(v any) string { return v.(shopify.Order).ID })
}

func FuzzRefund(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicRefundsCreate},
		func(v any) string { r := v.(shopify.Refund); return min(r.ID, r.OrderID) })
}

func FuzzCatalog(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicProductsCreate, shopify.TopicProductsUpdate, shopify.TopicProductsDelete, shopify.TopicInventoryLevelsUpdate},
		func(v any) string {
			switch x := v.(type) {
			case shopify.Product:
				return x.ID
			case shopify.ProductDeletion:
				return x.ID
			case shopify.InventoryLevel:
				return min(x.InventoryItemID, x.LocationID)
			}
			return ""
		})
}

func FuzzCart(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicCartsCreate, shopify.TopicCartsUpdate, shopify.TopicCheckoutsCreate, shopify.TopicCheckoutsUpdate},
		func(v any) string {
			switch x := v.(type) {
			case shopify.Cart:
				return x.ID
			case shopify.Checkout:
				return x.ID
			}
			return ""
		})
}

func FuzzSubscription(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicSubscriptionContractsCreate, shopify.TopicSubscriptionContractsUpdate,
		shopify.TopicBillingAttemptsSuccess, shopify.TopicBillingAttemptsFailure},
		func(v any) string {
			switch x := v.(type) {
			case shopify.SubscriptionContract:
				return x.ID
			case shopify.BillingAttempt:
				return min(x.ID, x.SubscriptionContractID)
			}
			return ""
		})
}

func FuzzApp(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicThemesPublish, shopify.TopicThemesUpdate, shopify.TopicAppUninstalled,
		shopify.TopicAppSubscriptionsUpdate, shopify.TopicAppScopesUpdate},
		func(v any) string {
			switch x := v.(type) {
			case shopify.Theme:
				return x.ID
			case shopify.Shop:
				return x.ID
			case shopify.AppSubscription:
				return x.AdminGraphQLAPIID
			case shopify.ScopesUpdate:
				return x.ID
			}
			return ""
		})
}

func FuzzPrivacy(f *testing.F) {
	fuzzFamily(f, []string{shopify.TopicCustomersDataRequest, shopify.TopicCustomersRedact, shopify.TopicShopRedact},
		func(v any) string {
			switch x := v.(type) {
			case shopify.DataRequest:
				return min(x.ShopID, x.Customer.ID)
			case shopify.CustomerRedact:
				return min(x.ShopID, x.Customer.ID)
			case shopify.ShopRedact:
				return x.ShopID
			}
			return ""
		})
}

// FuzzLandingSite checks that ParseLandingSite never panics and only
// returns values that occur in its input's query.
func FuzzLandingSite(f *testing.F) {
	f.Add("/?utm_source=google&gclid=abc")
	f.Add("https://shop.example/p?utm_campaign=%zz&fbclid=x#frag")
	f.Fuzz(func(t *testing.T, s string) {
		utm, clk := shopify.ParseLandingSite(s)
		if utm != (shopify.UTM{}) || clk != (shopify.ClickIDs{}) {
			if !strings.Contains(s, "?") {
				t.Fatalf("values %+v %+v from a landing site without query", utm, clk)
			}
		}
	})
}
