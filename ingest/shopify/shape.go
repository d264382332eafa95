package shopify

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// The platform's signature covers the body, not the X-Commerce-Topic
// header, so a captured, correctly signed body can be re-sent under
// another topic. The shape rule closes that: a body is taken for a topic
// only when it has the members that topic's payload always carries, with
// their JSON types (shapes, below: one table for every topic). The members
// chosen are the ones that tell the topics apart (a customers/redact body
// has orders_to_redact, a customers/data_request body orders_requested and
// data_request; a shop/redact body is exactly shop_id and shop_domain; an
// app/uninstalled body is a shop: id, name, myshopify_domain). Optional
// members (line-item ids, customer objects, ...) are never required: the
// mappers take them when present.

// Kind is the JSON type a required member must have.
type Kind uint8

// The kinds of required members.
const (
	// KindID is a platform id: an integer JSON number or a string of
	// digits (never null).
	KindID Kind = iota + 1
	// KindString is a JSON string (never null; it may be empty).
	KindString
	// KindObject is a JSON object.
	KindObject
	// KindArray is a JSON array.
	KindArray
	// KindBool is true or false.
	KindBool
	// KindAmount is a money value: a JSON string or number.
	KindAmount
	// KindNumberOrNull is a JSON number or null (the member is present).
	KindNumberOrNull
	// KindStringOrNull is a JSON string or null (the member is present).
	KindStringOrNull
)

func (k Kind) String() string {
	switch k {
	case KindID:
		return "an id"
	case KindString:
		return "a string"
	case KindObject:
		return "an object"
	case KindArray:
		return "an array"
	case KindBool:
		return "a boolean"
	case KindAmount:
		return "an amount"
	case KindNumberOrNull:
		return "a number or null"
	case KindStringOrNull:
		return "a string or null"
	}
	return "a value"
}

// Member is one required member of a topic's payload; Path is the member's
// name, or names joined by "." inside an object ("customer.id").
type Member struct {
	Path string
	Kind Kind
}

// Shape is what a topic's payload must look like.
type Shape struct {
	// Required lists the members that must be present, with their kinds.
	Required []Member
	// Exact: the body has no top-level member beyond Required (a
	// shop/redact body is exactly shop_id and shop_domain, a
	// products/delete body exactly the id).
	Exact bool
	// ShopDomain names the member that carries the shop's platform domain
	// (shop_domain, myshopify_domain), "" when the topic carries none; it
	// must be the domain of the shop whose secret verified the delivery.
	ShopDomain string
}

// shapes is the one table of payload shapes, for every topic of Topics.
var shapes = map[string]Shape{
	TopicCustomersCreate: customerShape,
	TopicCustomersUpdate: customerShape,
	TopicOrdersCreate:    orderShape,
	TopicOrdersUpdated:   orderShape,
	TopicOrdersFulfilled: orderShape,
	TopicOrdersPaid:      orderShape,
	TopicRefundsCreate: {Required: []Member{
		{"id", KindID}, {"order_id", KindID}, {"created_at", KindString}, {"refund_line_items", KindArray},
		{"transactions", KindArray},
	}},
	TopicProductsCreate:              productShape,
	TopicProductsUpdate:              productShape,
	TopicProductsDelete:              {Required: []Member{{"id", KindID}}, Exact: true},
	TopicInventoryLevelsUpdate:       {Required: []Member{{"inventory_item_id", KindID}, {"location_id", KindID}, {"available", KindNumberOrNull}, {"updated_at", KindString}}},
	TopicCartsCreate:                 cartShape,
	TopicCartsUpdate:                 cartShape,
	TopicCheckoutsCreate:             checkoutShape,
	TopicCheckoutsUpdate:             checkoutShape,
	TopicSubscriptionContractsCreate: subscriptionShape,
	TopicSubscriptionContractsUpdate: subscriptionShape,
	TopicBillingAttemptsSuccess:      billingShape,
	TopicBillingAttemptsFailure:      billingShape,
	TopicThemesPublish:               themeShape,
	TopicThemesUpdate:                themeShape,
	TopicAppUninstalled: {Required: []Member{
		{"id", KindID}, {"name", KindString}, {"myshopify_domain", KindString},
	}, ShopDomain: "myshopify_domain"},
	TopicAppSubscriptionsUpdate: {Required: []Member{
		{"app_subscription", KindObject}, {"app_subscription.admin_graphql_api_id", KindString},
		{"app_subscription.name", KindString}, {"app_subscription.status", KindString},
	}},
	TopicAppScopesUpdate: {Required: []Member{
		{"id", KindID}, {"previous", KindArray}, {"current", KindArray}, {"updated_at", KindString},
	}},
	TopicCustomersDataRequest: {Required: []Member{
		{"shop_id", KindID}, {"shop_domain", KindString}, {"customer", KindObject}, {"customer.id", KindID},
		{"orders_requested", KindArray}, {"data_request", KindObject}, {"data_request.id", KindID},
	}, ShopDomain: "shop_domain"},
	TopicCustomersRedact: {Required: []Member{
		{"shop_id", KindID}, {"shop_domain", KindString}, {"customer", KindObject}, {"customer.id", KindID},
		{"orders_to_redact", KindArray},
	}, ShopDomain: "shop_domain"},
	TopicShopRedact: {Required: []Member{{"shop_id", KindID}, {"shop_domain", KindString}}, Exact: true, ShopDomain: "shop_domain"},
}

var (
	customerShape = Shape{Required: []Member{
		{"id", KindID}, {"state", KindString}, {"created_at", KindStringOrNull}, {"updated_at", KindStringOrNull},
	}}
	orderShape = Shape{Required: []Member{
		{"id", KindID}, {"name", KindString}, {"created_at", KindString}, {"currency", KindString},
		{"total_price", KindAmount}, {"line_items", KindArray},
	}}
	productShape = Shape{Required: []Member{
		{"id", KindID}, {"title", KindString}, {"variants", KindArray},
	}}
	cartShape = Shape{Required: []Member{
		{"token", KindString}, {"line_items", KindArray},
	}}
	checkoutShape = Shape{Required: []Member{
		{"id", KindID}, {"token", KindString}, {"line_items", KindArray},
	}}
	subscriptionShape = Shape{Required: []Member{
		{"id", KindID}, {"admin_graphql_api_id", KindString}, {"status", KindString}, {"billing_policy", KindObject},
	}}
	billingShape = Shape{Required: []Member{
		{"idempotency_key", KindString}, {"subscription_contract_id", KindID}, {"ready", KindBool},
	}}
	themeShape = Shape{Required: []Member{
		{"id", KindID}, {"name", KindString}, {"role", KindString},
	}}
)

// ShapeOf returns the shape of topic's payload; false for a topic the
// service does not subscribe to.
func ShapeOf(topic string) (Shape, bool) {
	s, ok := shapes[topic]
	return s, ok
}

// CheckShape checks that body has the shape of topic's payload and returns
// the shop domain it names ("" when the topic carries none). A body of
// another shape fails with a validation *domain.Error naming the first
// member that is missing, of the wrong kind, or (for an exact shape) not
// expected; the message never quotes the body. A topic without a shape
// passes (it is recorded as unhandled anyway).
func CheckShape(topic string, body []byte) (shopDomain string, err error) {
	shape, ok := shapes[topic]
	if !ok {
		return "", nil
	}
	var top map[string]json.RawMessage
	if err := payload.Decode(body, &top); err != nil {
		return "", err
	}
	if top == nil {
		return "", domain.Invalid(payload.Field, "the body of %s is a JSON object", topic)
	}
	for _, m := range shape.Required {
		raw, found := lookup(top, m.Path)
		if !found {
			return "", domain.Invalid(m.Path, "required by %s (%s)", topic, m.Kind)
		}
		if !m.Kind.matches(raw) {
			return "", domain.Invalid(m.Path, "must be %s in %s", m.Kind, topic)
		}
	}
	if shape.Exact {
		for name := range top {
			if !shape.requires(name) {
				return "", domain.Invalid(safeName(name), "not a member of %s", topic)
			}
		}
	}
	if shape.ShopDomain != "" {
		raw, _ := lookup(top, shape.ShopDomain)
		var s string
		_ = json.Unmarshal(raw, &s) // the kind check made it a string
		shopDomain = domain.NormalizeDomain(s)
	}
	return shopDomain, nil
}

func (s Shape) requires(name string) bool {
	for _, m := range s.Required {
		if m.Path == name {
			return true
		}
	}
	return false
}

// safeName keeps a member name short in an error (it comes from the body).
func safeName(name string) string {
	if len(name) > 40 {
		name = name[:40]
	}
	if name = strings.ToValidUTF8(name, ""); name == "" {
		return payload.Field
	}
	return name
}

// lookup finds the member at path in top.
func lookup(top map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	obj := top
	for {
		name, rest, nested := strings.Cut(path, ".")
		raw, ok := obj[name]
		if !ok {
			return nil, false
		}
		if !nested {
			return raw, true
		}
		obj = nil
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, false
		}
		path = rest
	}
}

func (k Kind) matches(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch k {
	case KindID:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return false
		}
		var c conv
		return n != "" && c.optID("", n) != "" && c.err == nil
	case KindString:
		return raw[0] == '"'
	case KindObject:
		return raw[0] == '{'
	case KindArray:
		return raw[0] == '['
	case KindBool:
		return bytes.Equal(raw, []byte("true")) || bytes.Equal(raw, []byte("false"))
	case KindAmount:
		return raw[0] == '"' || raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')
	case KindNumberOrNull:
		return bytes.Equal(raw, []byte("null")) || raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')
	case KindStringOrNull:
		return bytes.Equal(raw, []byte("null")) || raw[0] == '"'
	}
	return false
}
