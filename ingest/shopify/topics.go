package shopify

import (
	"errors"
	"fmt"
)

// Commerce-platform webhook topics the service subscribes to (27).
const (
	TopicCustomersCreate             = "customers/create"
	TopicCustomersUpdate             = "customers/update"
	TopicOrdersCreate                = "orders/create"
	TopicOrdersUpdated               = "orders/updated"
	TopicOrdersFulfilled             = "orders/fulfilled"
	TopicOrdersPaid                  = "orders/paid"
	TopicRefundsCreate               = "refunds/create"
	TopicProductsCreate              = "products/create"
	TopicProductsUpdate              = "products/update"
	TopicProductsDelete              = "products/delete"
	TopicInventoryLevelsUpdate       = "inventory_levels/update"
	TopicCartsCreate                 = "carts/create"
	TopicCartsUpdate                 = "carts/update"
	TopicCheckoutsCreate             = "checkouts/create"
	TopicCheckoutsUpdate             = "checkouts/update"
	TopicSubscriptionContractsCreate = "subscription_contracts/create"
	TopicSubscriptionContractsUpdate = "subscription_contracts/update"
	TopicBillingAttemptsSuccess      = "subscription_billing_attempts/success"
	TopicBillingAttemptsFailure      = "subscription_billing_attempts/failure"
	TopicThemesPublish               = "themes/publish"
	TopicThemesUpdate                = "themes/update"
	TopicAppUninstalled              = "app/uninstalled"
	TopicAppSubscriptionsUpdate      = "app_subscriptions/update"
	TopicAppScopesUpdate             = "app/scopes_update"
	TopicCustomersDataRequest        = "customers/data_request"
	TopicCustomersRedact             = "customers/redact"
	TopicShopRedact                  = "shop/redact"
)

// ErrUnknownTopic is returned (wrapped) by Parse for a topic the service
// does not subscribe to.
var ErrUnknownTopic = errors.New("unknown webhook topic")

// Topics returns the 27 topic names in the specification's order. The
// slice is new on every call; callers may modify it.
func Topics() []string {
	return []string{
		TopicCustomersCreate, TopicCustomersUpdate,
		TopicOrdersCreate, TopicOrdersUpdated, TopicOrdersFulfilled, TopicOrdersPaid,
		TopicRefundsCreate,
		TopicProductsCreate, TopicProductsUpdate, TopicProductsDelete,
		TopicInventoryLevelsUpdate,
		TopicCartsCreate, TopicCartsUpdate,
		TopicCheckoutsCreate, TopicCheckoutsUpdate,
		TopicSubscriptionContractsCreate, TopicSubscriptionContractsUpdate,
		TopicBillingAttemptsSuccess, TopicBillingAttemptsFailure,
		TopicThemesPublish, TopicThemesUpdate,
		TopicAppUninstalled, TopicAppSubscriptionsUpdate, TopicAppScopesUpdate,
		TopicCustomersDataRequest, TopicCustomersRedact, TopicShopRedact,
	}
}

// Parse parses body as the payload of topic and returns the topic's type
// as a value: Customer, Order, Refund, Product, ProductDeletion,
// InventoryLevel, Cart, Checkout, SubscriptionContract, BillingAttempt,
// Theme, Shop, AppSubscription, ScopesUpdate, DataRequest, CustomerRedact
// or ShopRedact. An unknown topic yields an error wrapping ErrUnknownTopic;
// a bad payload yields a *domain.Error.
func Parse(topic string, body []byte) (any, error) {
	switch topic {
	case TopicCustomersCreate, TopicCustomersUpdate:
		return result(ParseCustomer(body))
	case TopicOrdersCreate, TopicOrdersUpdated, TopicOrdersFulfilled, TopicOrdersPaid:
		return result(ParseOrder(body))
	case TopicRefundsCreate:
		return result(ParseRefund(body))
	case TopicProductsCreate, TopicProductsUpdate:
		return result(ParseProduct(body))
	case TopicProductsDelete:
		return result(ParseProductDeletion(body))
	case TopicInventoryLevelsUpdate:
		return result(ParseInventoryLevel(body))
	case TopicCartsCreate, TopicCartsUpdate:
		return result(ParseCart(body))
	case TopicCheckoutsCreate, TopicCheckoutsUpdate:
		return result(ParseCheckout(body))
	case TopicSubscriptionContractsCreate, TopicSubscriptionContractsUpdate:
		return result(ParseSubscriptionContract(body))
	case TopicBillingAttemptsSuccess, TopicBillingAttemptsFailure:
		return result(ParseBillingAttempt(body))
	case TopicThemesPublish, TopicThemesUpdate:
		return result(ParseTheme(body))
	case TopicAppUninstalled:
		return result(ParseAppUninstalled(body))
	case TopicAppSubscriptionsUpdate:
		return result(ParseAppSubscription(body))
	case TopicAppScopesUpdate:
		return result(ParseScopesUpdate(body))
	case TopicCustomersDataRequest:
		return result(ParseDataRequest(body))
	case TopicCustomersRedact:
		return result(ParseCustomerRedact(body))
	case TopicShopRedact:
		return result(ParseShopRedact(body))
	default:
		return nil, fmt.Errorf("parse %.64q: %w", topic, ErrUnknownTopic)
	}
}

// result boxes a parser's value, keeping the any nil on error so callers
// never see a zero payload beside an error.
func result[T any](v T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
