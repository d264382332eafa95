package platform

import (
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// Receiver paths of the platform's webhooks.
const (
	EventsPath       = "/webhooks/events"
	ScopesUpdatePath = "/webhooks/app/scopes_update"
)

// topicScopes is the platform scope each topic's subscription needs (the
// platform refuses a subscription, and delivers nothing, without it);
// "" needs none.
var topicScopes = map[string]string{
	shopify.TopicCustomersCreate: "read_customers", shopify.TopicCustomersUpdate: "read_customers",
	shopify.TopicOrdersCreate: "read_orders", shopify.TopicOrdersUpdated: "read_orders", shopify.TopicOrdersFulfilled: "read_orders",
	shopify.TopicOrdersPaid: "read_orders", shopify.TopicRefundsCreate: "read_orders",
	shopify.TopicProductsCreate: "read_products", shopify.TopicProductsUpdate: "read_products", shopify.TopicProductsDelete: "read_products",
	shopify.TopicInventoryLevelsUpdate: "read_inventory",
	shopify.TopicCartsCreate:           "read_orders", shopify.TopicCartsUpdate: "read_orders",
	shopify.TopicCheckoutsCreate: "read_orders", shopify.TopicCheckoutsUpdate: "read_orders",
	shopify.TopicSubscriptionContractsCreate: "read_own_subscription_contracts",
	shopify.TopicSubscriptionContractsUpdate: "read_own_subscription_contracts",
	shopify.TopicBillingAttemptsSuccess:      "read_own_subscription_contracts",
	shopify.TopicBillingAttemptsFailure:      "read_own_subscription_contracts",
	shopify.TopicThemesPublish:               "read_themes", shopify.TopicThemesUpdate: "read_themes",
	shopify.TopicAppUninstalled: "", shopify.TopicAppSubscriptionsUpdate: "", shopify.TopicAppScopesUpdate: "",
}

// complianceTopics are subscribed in the app's configuration on the
// platform, not through the Admin API (the platform's mandatory privacy
// webhooks): the service receives them at EventsPath all the same.
var complianceTopics = map[string]bool{
	shopify.TopicCustomersDataRequest: true, shopify.TopicCustomersRedact: true, shopify.TopicShopRedact: true,
}

// Subscription is one webhook subscription the app registers.
type Subscription struct {
	Topic string `json:"topic"`
	// Path is the receiver's path (EventsPath or ScopesUpdatePath).
	Path string `json:"path"`
}

// Subscriptions returns the subscriptions a grant allows, in the
// specification's topic order, and the topics it holds back for want of
// a scope.
func Subscriptions(granted []string) (subs []Subscription, withheld []string) {
	implied := map[string]bool{}
	for _, s := range domain.ImpliedPlatformScopes(granted) {
		implied[s] = true
	}
	for _, t := range shopify.Topics() {
		if complianceTopics[t] {
			continue
		}
		if sc := topicScopes[t]; sc != "" && !implied[sc] {
			withheld = append(withheld, t)
			continue
		}
		path := EventsPath
		if t == shopify.TopicAppScopesUpdate {
			path = ScopesUpdatePath
		}
		subs = append(subs, Subscription{Topic: t, Path: path})
	}
	return subs, withheld
}
