package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// The commerce intake of issue 14 (points 1 and 2): a correctly signed
// body is only taken for its own topic, for the shop whose secret signed
// it, on its own receiver, and a destructive one only while recent.

// fixtureCustomer is the platform id of the customer the fixtures name.
const fixtureCustomer = "7064055069303700841"

// intakeEvents returns the types of the events in the log, and the type of
// the event each delivery id became.
func intakeEvents(t *testing.T, dir, shopID string, deliveries ...string) (types map[string]int, byDelivery map[string]string) {
	t.Helper()
	types, byDelivery = map[string]int{}, map[string]string{}
	ids := map[string]string{}
	for _, d := range deliveries {
		ids[eventlog.DeterministicID("commerce", shopID, d).String()] = d
	}
	for _, e := range readLog(t, dir) {
		types[e.Type]++
		if d, ok := ids[e.ID.String()]; ok {
			byDelivery[d] = e.Type
		}
	}
	return types, byDelivery
}

// warnedFor reports whether the logs hold a warn line for the delivery
// with its topic and reason.
func warnedFor(logs, deliveryID, topic, reason string) bool {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"level":"warn"`) && strings.Contains(line, `"delivery_id":"`+deliveryID+`"`) &&
			strings.Contains(line, `"topic":"`+topic+`"`) && strings.Contains(line, `"reason":"`+reason+`"`) {
			return true
		}
	}
	return false
}

// TestWebhookReplayIntoAnotherTopicIsRefused reproduces the attacks of
// issue 14: a captured, correctly signed customers/data_request body
// re-sent as customers/redact and as shop/redact, and a products/create
// body as app/uninstalled. Each is acknowledged (200) and recorded as
// unprocessable, and nothing is erased or uninstalled.
func TestWebhookReplayIntoAnotherTopicIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "replay-attack.myshopify.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	s.deliver(t, tn, shopify.TopicCustomersCreate, "atk-customer", fixture(t, shopify.TopicCustomersCreate))
	s.deliver(t, tn, shopify.TopicProductsCreate, "atk-product", fixture(t, shopify.TopicProductsCreate))
	s.deliver(t, tn, shopify.TopicCustomersDataRequest, "atk-data-request", fixture(t, shopify.TopicCustomersDataRequest))

	dataRequest := forShop(tn, fixture(t, shopify.TopicCustomersDataRequest))
	product := fixture(t, shopify.TopicProductsCreate)
	attacks := []struct{ id, topic string }{
		{"atk-1", shopify.TopicCustomersRedact},
		{"atk-2", shopify.TopicShopRedact},
		{"atk-3", shopify.TopicAppUninstalled},
	}
	bodies := map[string][]byte{"atk-1": dataRequest, "atk-2": dataRequest, "atk-3": product}
	var last string
	for _, a := range attacks {
		r := do(t, http.MethodPost, s.base+"/webhooks/events", bodies[a.id], webhookHeaders(tn, a.topic, a.id, bodies[a.id]))
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusOK {
			t.Fatalf("%s as %s: %d %s", a.id, a.topic, r.status, r.body)
		}
		last = r.position(t)
	}
	// The shop and the customer are still there.
	customerID := domain.CustomerIDFromExternal(tn.shopID, fixtureCustomer)
	if r := s.get(t, "/api/v1/customers/"+customerID, tn.token, "X-Wait-For-Position", last); r.status != http.StatusOK {
		t.Fatalf("customer after the attacks: %d %s", r.status, r.body)
	}
	if list := countdowns(t, dir, tn.shopID); len(list) != 0 {
		t.Fatalf("an uninstall countdown started: %v", list)
	}
	s.stop()
	types, got := intakeEvents(t, dir, tn.shopID, "atk-1", "atk-2", "atk-3")
	for _, a := range attacks {
		if got[a.id] != "WebhookDeliveryRecorded" {
			t.Errorf("%s as %s became %q, want WebhookDeliveryRecorded", a.id, a.topic, got[a.id])
		}
		if !warnedFor(s.logs.String(), a.id, a.topic, ingest.ReasonUnprocessable) {
			t.Errorf("%s: no warn line with topic, delivery id and reason", a.id)
		}
	}
	for _, typ := range []string{"CustomerRedactRequested", "ShopRedactRequested", "AppUninstalled", "CustomerErased", "ShopErased"} {
		if types[typ] != 0 {
			t.Errorf("%d %s in the log after the replays", types[typ], typ)
		}
	}
	if strings.Contains(s.logs.String(), "noor.haddad@example.com") {
		t.Error("the logs hold the body's e-mail")
	}
}

// TestWebhookBodyNamingAnotherShopIsRefused: a body signed with this
// shop's secret but naming another shop (shop_domain, myshopify_domain) is
// recorded as refused and changes nothing; the same body naming this shop
// takes effect.
func TestWebhookBodyNamingAnotherShopIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "own-shop.myshopify.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	s.deliver(t, tn, shopify.TopicCustomersCreate, "own-customer", fixture(t, shopify.TopicCustomersCreate))
	other := []byte(strings.NewReplacer(fixtureShopDomain, "someone-else.myshopify.com").Replace(string(fixture(t, shopify.TopicCustomersRedact))))
	otherShop := []byte(strings.NewReplacer(fixtureShopDomain, "someone-else.myshopify.com").Replace(string(fixture(t, shopify.TopicAppUninstalled))))
	// s.webhook rewrites only the fixtures' own shop: these keep the other.
	s.deliver(t, tn, shopify.TopicCustomersRedact, "other-1", other)
	s.deliver(t, tn, shopify.TopicShopRedact, "other-2", []byte(`{"shop_id":59000001,"shop_domain":"someone-else.myshopify.com"}`))
	s.deliver(t, tn, shopify.TopicAppUninstalled, "other-3", otherShop)
	s.deliver(t, tn, shopify.TopicCustomersRedact, "own-1", fixture(t, shopify.TopicCustomersRedact))
	s.stop()
	types, got := intakeEvents(t, dir, tn.shopID, "other-1", "other-2", "other-3", "own-1")
	for _, c := range []struct{ id, topic string }{
		{"other-1", shopify.TopicCustomersRedact}, {"other-2", shopify.TopicShopRedact}, {"other-3", shopify.TopicAppUninstalled},
	} {
		if got[c.id] != "WebhookDeliveryRecorded" || !warnedFor(s.logs.String(), c.id, c.topic, ingest.ReasonRefused) {
			t.Errorf("%s (%s naming another shop) became %q", c.id, c.topic, got[c.id])
		}
	}
	if got["own-1"] != "CustomerRedactRequested" {
		t.Errorf("the shop's own customers/redact became %q", got["own-1"])
	}
	if types["ShopRedactRequested"] != 0 || types["AppUninstalled"] != 0 || types["CustomerRedactRequested"] != 1 {
		t.Errorf("log: %v", types)
	}
}

// TestDestructiveWebhookNeedsRecentTriggeredAt: customers/redact,
// shop/redact and app/uninstalled without X-Commerce-Triggered-At, or
// older than ingest.TriggeredAtWindow by the receiver's clock, are
// recorded as refused and change nothing; within the window they act. A
// topic that destroys nothing is taken whatever its triggered-at.
func TestDestructiveWebhookNeedsRecentTriggeredAt(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{now: webhookTriggeredAt.Add(ingest.TriggeredAtWindow + time.Hour)}
	s := startServerWith(t, dir, func(c *Config) { c.Test.WebhookClock = clock.Now })
	tn := newTenant(t, dir, "window.myshopify.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	post := func(topic, id string, mod func(map[string]string)) {
		t.Helper()
		body := forShop(tn, fixture(t, topic))
		h := webhookHeaders(tn, topic, id, body)
		mod(h)
		if r := do(t, http.MethodPost, s.base+webhookPath(topic), body, h); r.status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", topic, id, r.status, r.body)
		}
	}
	keep := func(map[string]string) {}
	missing := func(h map[string]string) { delete(h, ingest.HeaderTriggeredAt) }
	garbled := func(h map[string]string) { h[ingest.HeaderTriggeredAt] = "yesterday" }
	// The clock is 49 h after webhookHeaders' triggered-at: stale.
	post(shopify.TopicCustomersRedact, "win-stale-1", keep)
	post(shopify.TopicShopRedact, "win-stale-2", keep)
	post(shopify.TopicAppUninstalled, "win-stale-3", keep)
	post(shopify.TopicCustomersRedact, "win-missing-1", missing)
	post(shopify.TopicShopRedact, "win-missing-2", missing)
	post(shopify.TopicAppUninstalled, "win-garbled-3", garbled)
	post(shopify.TopicCustomersDataRequest, "win-not-destructive", keep)
	// 47 h after: inside the window.
	clock.Set(webhookTriggeredAt.Add(ingest.TriggeredAtWindow - time.Hour))
	post(shopify.TopicCustomersRedact, "win-fresh-1", keep)
	post(shopify.TopicAppUninstalled, "win-fresh-3", keep)
	s.stop()
	refused := []string{"win-stale-1", "win-stale-2", "win-stale-3", "win-missing-1", "win-missing-2", "win-garbled-3"}
	types, got := intakeEvents(t, dir, tn.shopID, append(refused, "win-not-destructive", "win-fresh-1", "win-fresh-3")...)
	for _, id := range refused {
		if got[id] != "WebhookDeliveryRecorded" {
			t.Errorf("%s became %q, want a refused WebhookDeliveryRecorded", id, got[id])
		}
	}
	if !warnedFor(s.logs.String(), "win-stale-2", shopify.TopicShopRedact, ingest.ReasonRefused) ||
		!warnedFor(s.logs.String(), "win-missing-1", shopify.TopicCustomersRedact, ingest.ReasonRefused) {
		t.Error("no warn line for a refused delivery")
	}
	if got["win-not-destructive"] != "CustomerDataRequested" || got["win-fresh-1"] != "CustomerRedactRequested" || got["win-fresh-3"] != "AppUninstalled" {
		t.Errorf("deliveries inside the window or not destructive: %v", got)
	}
	if types["ShopRedactRequested"] != 0 || types["CustomerRedactRequested"] != 1 || types["AppUninstalled"] != 1 {
		t.Errorf("log: %v", types)
	}
}

// TestWebhookTopicOnTheWrongReceiver: app/scopes_update is taken only at
// /webhooks/app/scopes_update, every other topic only at /webhooks/events;
// a topic at the other receiver is answered 422 validation_failed
// (details.field X-Commerce-Topic) and nothing reaches the log.
func TestWebhookTopicOnTheWrongReceiver(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "routes.myshopify.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	scopes := fixture(t, shopify.TopicAppScopesUpdate)
	customer := fixture(t, shopify.TopicCustomersCreate)
	for _, c := range []struct {
		path, topic string
		body        []byte
	}{
		{"/webhooks/app/scopes_update", shopify.TopicCustomersCreate, customer},
		{"/webhooks/app/scopes_update", shopify.TopicShopRedact, forShop(tn, fixture(t, shopify.TopicShopRedact))},
		{"/webhooks/events", shopify.TopicAppScopesUpdate, scopes},
	} {
		r := do(t, http.MethodPost, s.base+c.path, c.body, webhookHeaders(tn, c.topic, "wrong-"+c.topic, c.body))
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusUnprocessableEntity || r.errorCode(t) != "validation_failed" {
			t.Fatalf("%s at %s: %d %s", c.topic, c.path, r.status, r.body)
		}
		if f, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"].(string); f != ingest.HeaderTopic {
			t.Errorf("%s at %s: details.field %q", c.topic, c.path, f)
		}
	}
	// Each on its own receiver is taken.
	if r := s.webhook(t, tn, shopify.TopicAppScopesUpdate, "right-scopes", scopes); r.status != http.StatusOK {
		t.Fatalf("scopes update at its receiver: %d %s", r.status, r.body)
	}
	if r := s.webhook(t, tn, shopify.TopicCustomersCreate, "right-customer", customer); r.status != http.StatusOK {
		t.Fatalf("customer at /webhooks/events: %d %s", r.status, r.body)
	}
	s.stop()
	types, got := intakeEvents(t, dir, tn.shopID, "wrong-customers/create", "wrong-shop/redact", "wrong-app/scopes_update", "right-scopes", "right-customer")
	for _, id := range []string{"wrong-customers/create", "wrong-shop/redact", "wrong-app/scopes_update"} {
		if got[id] != "" {
			t.Errorf("%s reached the log as %s", id, got[id])
		}
	}
	if types["WebhookDeliveryRecorded"] != 0 || types["ShopScopesUpdated"] != 1 || types["CustomerCreated"] != 1 {
		t.Errorf("log: %v", types)
	}
}
