package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// fixture reads the testdata payload of a commerce topic.
func fixture(t *testing.T, topic string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "ingest", "shopify", "testdata", strings.NewReplacer("/", "_").Replace(topic)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readModels opens the server's read models read-only, as another process
// would.
func readModels(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(sqlitedb.Connector(filepath.Join(dir, "readmodels.db"), "mode=ro", "PRAGMA busy_timeout = 5000;"))
	t.Cleanup(func() { db.Close() })
	return db
}

// waitProjected waits until projector has applied the log up to pos.
func waitProjected(t *testing.T, db *sql.DB, projector string, pos uint64) {
	t.Helper()
	eventually(t, 15*time.Second, projector+" reaches "+strconv.FormatUint(pos, 10), func() bool {
		var got uint64
		err := db.QueryRow(`SELECT position FROM _projector_checkpoints WHERE projector = ?`, projector).Scan(&got)
		return err == nil && got >= pos
	})
}

// deliver posts a signed commerce delivery and requires a 200 with the
// position reached.
func (s *testServer) deliver(t *testing.T, tn tenant, topic, deliveryID string, body []byte) uint64 {
	t.Helper()
	r := s.webhook(t, tn, topic, deliveryID, body)
	if r.status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", topic, deliveryID, r.status, r.body)
	}
	pos, err := strconv.ParseUint(r.header.Get("X-Event-Position"), 10, 64)
	if err != nil {
		t.Fatalf("%s: X-Event-Position %q", topic, r.header.Get("X-Event-Position"))
	}
	return pos
}

// withField replaces the first `"field": old` of a fixture.
func withField(t *testing.T, body []byte, field, old, new string) []byte {
	t.Helper()
	from := fmt.Sprintf("%q: %s", field, old)
	if !bytes.Contains(body, []byte(from)) {
		t.Fatalf("fixture has no %s", from)
	}
	return bytes.Replace(body, []byte(from), []byte(fmt.Sprintf("%q: %s", field, new)), 1)
}

// TestCommerceTopicsChangeState delivers every commerce topic over HTTP,
// signed, and checks the state each one changes in the read models.
func TestCommerceTopicsChangeState(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "atelier-nord.example", "agency", "customers:read")
	waitForToken(t, s, tn)
	db := readModels(t, dir)
	ctx := context.Background()
	shop := tn.shopID
	var last uint64
	send := func(topic, id string, body []byte) {
		if p := s.deliver(t, tn, topic, id, body); p > last {
			last = p
		}
	}
	// Deliveries in a realistic order, some out of order.
	send(shopify.TopicCustomersCreate, "d-cus-1", fixture(t, shopify.TopicCustomersCreate))
	send(shopify.TopicCustomersUpdate, "d-cus-2", fixture(t, shopify.TopicCustomersUpdate))
	send(shopify.TopicCheckoutsCreate, "d-chk-1", fixture(t, shopify.TopicCheckoutsCreate))
	send(shopify.TopicCheckoutsUpdate, "d-chk-2", fixture(t, shopify.TopicCheckoutsUpdate))
	send(shopify.TopicCartsCreate, "d-cart-1", fixture(t, shopify.TopicCartsCreate))
	send(shopify.TopicCartsUpdate, "d-cart-2", fixture(t, shopify.TopicCartsUpdate))
	send(shopify.TopicOrdersCreate, "d-ord-1", fixture(t, shopify.TopicOrdersCreate))
	send(shopify.TopicOrdersUpdated, "d-ord-2", fixture(t, shopify.TopicOrdersUpdated))
	send(shopify.TopicOrdersFulfilled, "d-ord-4", fixture(t, shopify.TopicOrdersFulfilled))
	send(shopify.TopicOrdersPaid, "d-ord-3", fixture(t, shopify.TopicOrdersPaid)) // older than fulfilled: stale
	send(shopify.TopicRefundsCreate, "d-ref-1", fixture(t, shopify.TopicRefundsCreate))
	send(shopify.TopicProductsCreate, "d-prd-1", fixture(t, shopify.TopicProductsCreate))
	send(shopify.TopicProductsUpdate, "d-prd-2", fixture(t, shopify.TopicProductsUpdate))
	send(shopify.TopicInventoryLevelsUpdate, "d-inv-1", fixture(t, shopify.TopicInventoryLevelsUpdate))
	send(shopify.TopicSubscriptionContractsCreate, "d-sub-1", fixture(t, shopify.TopicSubscriptionContractsCreate))
	send(shopify.TopicSubscriptionContractsUpdate, "d-sub-2", fixture(t, shopify.TopicSubscriptionContractsUpdate))
	renewal := withField(t, fixture(t, shopify.TopicOrdersCreate), "id", "5984321190041", "5990000000001")
	send(shopify.TopicOrdersCreate, "d-ord-renewal", renewal)
	send(shopify.TopicBillingAttemptsSuccess, "d-bill-1", fixture(t, shopify.TopicBillingAttemptsSuccess))
	send(shopify.TopicBillingAttemptsFailure, "d-bill-2", fixture(t, shopify.TopicBillingAttemptsFailure))
	send(shopify.TopicThemesPublish, "d-thm-1", fixture(t, shopify.TopicThemesPublish))
	send(shopify.TopicThemesUpdate, "d-thm-2", fixture(t, shopify.TopicThemesUpdate)) // a development theme: dropped
	send(shopify.TopicCustomersDataRequest, "d-gdpr-1", fixture(t, shopify.TopicCustomersDataRequest))
	// The redact is about another customer and other orders: erasing this
	// one is erasure_test.go's matter.
	redact := bytes.ReplaceAll(fixture(t, shopify.TopicCustomersRedact), []byte("7064055069303700841"), []byte("7064055069303700999"))
	redact = bytes.ReplaceAll(bytes.ReplaceAll(redact, []byte("5984321190041"), []byte("5984321199999")), []byte("5990000000001"), []byte("5990000099999"))
	send(shopify.TopicCustomersRedact, "d-gdpr-2", redact)
	// shop/redact erases the whole shop: shoperasure_test.go covers it.
	send(shopify.TopicAppSubscriptionsUpdate, "d-appsub-1", fixture(t, shopify.TopicAppSubscriptionsUpdate))
	send(shopify.TopicAppUninstalled, "d-uninstall-1", fixture(t, shopify.TopicAppUninstalled))
	for _, p := range []string{commerce.Name, customers.Name, tenancy.Name} {
		waitProjected(t, db, p, last)
	}
	q := commerce.NewQueries(db)
	const platformCustomer = "7064055069303700841"
	customerID := domain.CustomerIDFromExternal(shop, platformCustomer)

	t.Run("orders", func(t *testing.T) {
		o, err := q.Order(ctx, shop, domain.OrderIDFromExternal(shop, "5984321190041"))
		if err != nil {
			t.Fatal(err)
		}
		// create, updated, fulfilled applied; the late orders/paid is stale.
		if o.Snapshots != 3 || o.LastTopic != shopify.TopicOrdersFulfilled || o.FinancialStatus != "paid" || o.FulfillmentStatus != "fulfilled" {
			t.Errorf("order state: snapshots %d last %s financial %s fulfillment %s", o.Snapshots, o.LastTopic, o.FinancialStatus, o.FulfillmentStatus)
		}
		if o.CustomerID != customerID || o.TotalPrice != amount(t, "114.30") || o.Currency != "EUR" || len(o.Lines) == 0 {
			t.Errorf("order %+v", o)
		}
		if o.Refunded != amount(t, "59.90") {
			t.Errorf("refunded %v, want 59.90", o.Refunded)
		}
		if o.UTM["source"] != "newsletter" || o.UTM["campaign"] != "spring_launch" || o.ClickIDs["gclid"] == "" ||
			o.ReferringSite != "https://mail.example.net/" || !strings.HasPrefix(o.LandingSite, "/products/linen-shirt?") {
			t.Errorf("attribution %+v", o.Attribution)
		}
		if o.Email == nil || *o.Email != "noor.haddad@example.com" {
			t.Errorf("order email %v", o.Email)
		}
	})
	t.Run("customer figures from orders", func(t *testing.T) {
		c, err := customers.NewQueries(db).Get(ctx, shop, customerID)
		if err != nil {
			t.Fatal(err)
		}
		// Two orders of 114.30 (the first and the subscription renewal),
		// 59.90 refunded.
		if c.OrdersCount != 2 || c.TotalSpent != amount(t, "168.70") || c.LastOrderAt.IsZero() {
			t.Errorf("customer orders %d spent %v last %v", c.OrdersCount, c.TotalSpent, c.LastOrderAt)
		}
	})
	t.Run("products and inventory", func(t *testing.T) {
		p, err := q.Product(ctx, shop, domain.ProductIDFromExternal(shop, "8123456789012"))
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != "archived" || len(p.Variants) != 2 || !p.DeletedAt.IsZero() {
			t.Errorf("product %+v", p)
		}
		l, err := q.InventoryLevel(ctx, shop, "46234567890124", "40642626")
		if err != nil || l.Available == nil || *l.Available != 7 {
			t.Fatalf("inventory level %+v %v", l, err)
		}
		if sku, _ := q.VariantSKU(ctx, shop, "46234567890124"); sku != "LIN-SHIRT-L-SAND" {
			t.Errorf("sku of item: %q", sku)
		}
	})
	t.Run("carts and checkouts", func(t *testing.T) {
		cartID := domain.CartIDFromToken(shop, "Z2NwLWV1cm9wZS13ZXN0NDowMUhYWjE")
		c, err := q.Cart(ctx, shop, cartID)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Lines) != 1 || c.Total != amount(t, "119.80") || c.Lines[0].Quantity != 2 {
			t.Errorf("cart %+v", c)
		}
		k, err := q.Checkout(ctx, shop, domain.CheckoutIDFromExternal(shop, "33012345678901"))
		if err != nil {
			t.Fatal(err)
		}
		if k.CartID != cartID || k.CustomerID != customerID || k.UTM["source"] != "facebook" || k.UTM["term"] != "linen shirt" ||
			k.ClickIDs["fbclid"] != "IwAR0abc123" || k.ReferringSite != "https://l.facebook.com/" {
			t.Errorf("checkout touchpoint %+v", k)
		}
	})
	t.Run("subscriptions", func(t *testing.T) {
		sub, err := q.Subscription(ctx, shop, domain.SubscriptionIDFromExternal(shop, "12582912345"))
		if err != nil {
			t.Fatal(err)
		}
		if sub.Status != "paused" || sub.DunningState != domain.DunningDunning || sub.FailedAttempts != 1 ||
			sub.SuccessfulAttempts != 1 || sub.RecognisedRevenue != amount(t, "114.30") || sub.LastBilledAt.IsZero() ||
			sub.CustomerID != customerID || !sub.ChurnedAt.IsZero() {
			t.Errorf("subscription %+v", sub)
		}
	})
	t.Run("themes", func(t *testing.T) {
		themes, err := q.Themes(ctx, shop)
		if err != nil {
			t.Fatal(err)
		}
		if len(themes) != 1 || themes[0].Role != "main" || themes[0].PublishedAt.IsZero() {
			t.Errorf("themes %+v (only the main theme is kept)", themes)
		}
	})
	t.Run("privacy requests", func(t *testing.T) {
		reqs, err := q.PrivacyRequests(ctx, shop)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, r := range reqs {
			kinds = append(kinds, r.Kind)
		}
		if strings.Join(kinds, ",") != "customers/data_request,customers/redact" || reqs[0].CustomerID != customerID {
			t.Errorf("privacy requests %+v", reqs)
		}
	})
	t.Run("install state and plan", func(t *testing.T) {
		in, err := tenancy.NewQueries(db).ShopInstall(ctx, shop)
		if err != nil {
			t.Fatal(err)
		}
		want := webhookTriggeredAt // X-Commerce-Triggered-At
		if in.Installed || !in.UninstalledAt.Equal(want) || !in.RetentionDueAt.Equal(want.Add(30*24*time.Hour)) {
			t.Errorf("install %+v", in)
		}
		if in.Plan != domain.PlanGrowth || in.SubscriptionName != "Growth" || in.SubscriptionStatus != "ACTIVE" {
			t.Errorf("plan %s subscription %q %q", in.Plan, in.SubscriptionName, in.SubscriptionStatus)
		}
		// The admin API's plan check follows: growth has no API access.
		if r := s.get(t, "/api/v1/customers", tn.token); r.status != http.StatusForbidden || r.errorCode(t) != "plan_required" {
			t.Errorf("admin API after the plan change: %d %s", r.status, r.body)
		}
	})
	t.Run("every delivery is in the log", func(t *testing.T) {
		evs := readLog(t, dir)
		ignored := 0
		for _, e := range evs {
			if e.ID == eventlog.DeterministicID("commerce", shop, "d-thm-2") {
				if e.Type != "WebhookDeliveryRecorded" {
					t.Errorf("dropped theme update recorded as %s", e.Type)
				}
				ignored++
			}
		}
		if ignored != 1 {
			t.Errorf("the development theme's delivery is recorded %d times, want 1", ignored)
		}
	})
}

// TestCommerceChurnAndDeletion: a contract moving to cancelled churns; a
// deleted product stays deleted even when an older update arrives after.
func TestCommerceChurnAndDeletion(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "churn.example", "agency", "customers:read")
	waitForToken(t, s, tn)
	db := readModels(t, dir)
	s.deliver(t, tn, shopify.TopicSubscriptionContractsCreate, "c1", fixture(t, shopify.TopicSubscriptionContractsCreate))
	cancelled := withField(t, fixture(t, shopify.TopicSubscriptionContractsUpdate), "status", `"paused"`, `"cancelled"`)
	s.deliver(t, tn, shopify.TopicSubscriptionContractsUpdate, "c2", cancelled)
	s.deliver(t, tn, shopify.TopicProductsCreate, "p1", fixture(t, shopify.TopicProductsCreate))
	s.deliver(t, tn, shopify.TopicProductsDelete, "p2", fixture(t, shopify.TopicProductsDelete))
	last := s.deliver(t, tn, shopify.TopicProductsUpdate, "p3", fixture(t, shopify.TopicProductsUpdate))
	waitProjected(t, db, commerce.Name, last)
	q := commerce.NewQueries(db)
	sub, err := q.Subscription(context.Background(), tn.shopID, domain.SubscriptionIDFromExternal(tn.shopID, "12582912345"))
	if err != nil || sub.Status != "cancelled" || sub.ChurnedAt.IsZero() {
		t.Fatalf("subscription %+v %v", sub, err)
	}
	p, err := q.Product(context.Background(), tn.shopID, domain.ProductIDFromExternal(tn.shopID, "8123456789012"))
	if err != nil || p.DeletedAt.IsZero() || p.Status != "active" {
		t.Fatalf("product after delete and a late update: %+v %v", p, err)
	}
	if _, err := q.InventoryLevel(context.Background(), tn.shopID, "1", "2"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("unknown level: %v", err)
	}
}

// TestCommerceDuplicatesEveryTopic: every topic's delivery, repeated
// sequentially, concurrently and after a restart, is applied once: exactly
// one event carries its id.
func TestCommerceDuplicatesEveryTopic(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "dups.example", "agency", "customers:read")
	waitForToken(t, s, tn)
	// shop/redact erases the shop, whose deliveries are refused from then
	// on (shoperasure_test.go).
	topics := slices.DeleteFunc(slices.Clone(shopify.Topics()), func(t string) bool { return t == shopify.TopicShopRedact })
	post := func(s *testServer) {
		var wg sync.WaitGroup
		for _, topic := range topics {
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					body := forShop(tn, fixture(t, topic))
					r := do(t, http.MethodPost, s.base+webhookPath(topic), body, webhookHeaders(tn, topic, "dup-"+topic, body))
					if r.status != http.StatusOK {
						t.Errorf("%s: %d %s", topic, r.status, r.body)
					}
				}()
			}
		}
		wg.Wait()
	}
	post(s) // concurrent repeats
	post(s) // sequential repeats of what is already there
	s.stop()
	s = startServer(t, dir)
	post(s) // after a restart
	s.stop()
	evs := readLog(t, dir)
	for _, topic := range topics {
		id := eventlog.DeterministicID("commerce", tn.shopID, "dup-"+topic).String()
		if n := countEvent(evs, id); n != 1 {
			t.Errorf("%s: %d events with the delivery's id, want 1", topic, n)
		}
	}
}

// TestCommerceBadDeliveries: what the receiver answers to bad input, and
// that nothing a platform sent with a valid signature is lost.
func TestCommerceBadDeliveries(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.MaxWebhookBody = 64 << 10 })
	tn := newTenant(t, dir, "bad.example", "agency", "customers:read")
	waitForToken(t, s, tn)
	url := s.base + "/webhooks/events"
	body := fixture(t, shopify.TopicOrdersCreate)

	noSig := webhookHeaders(tn, shopify.TopicOrdersCreate, "b1", body)
	delete(noSig, ingest.HeaderHMAC)
	if r := do(t, http.MethodPost, url, body, noSig); r.status != http.StatusBadRequest {
		t.Errorf("no signature: %d", r.status)
	}
	wrong := webhookHeaders(tn, shopify.TopicOrdersCreate, "b2", body)
	wrong[ingest.HeaderHMAC] = ingest.SignCommerce([]byte("another secret entirely"), body)
	if r := do(t, http.MethodPost, url, body, wrong); r.status != http.StatusUnauthorized {
		t.Errorf("wrong signature: %d", r.status)
	}
	unknownShop := webhookHeaders(tn, shopify.TopicOrdersCreate, "b3", body)
	unknownShop[ingest.HeaderShopDomain] = "nobody.example"
	if r := do(t, http.MethodPost, url, body, unknownShop); r.status != http.StatusUnauthorized {
		t.Errorf("unknown shop: %d", r.status)
	}
	big := bytes.Repeat([]byte(" "), 65<<10)
	if r := do(t, http.MethodPost, url, big, webhookHeaders(tn, shopify.TopicOrdersCreate, "b4", big)); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", r.status)
	}
	malformed := []byte(`{"id": 1, "line_items": [`)
	s.deliver(t, tn, shopify.TopicOrdersCreate, "b5", malformed)
	badAmount := withField(t, body, "total_price", `"114.30"`, `"lots"`)
	s.deliver(t, tn, shopify.TopicOrdersCreate, "b6", badAmount)
	s.deliver(t, tn, "orders/teleported", "b7", body)
	s.stop()
	reasons := map[string]string{}
	for _, e := range readLog(t, dir) {
		for _, id := range []string{"b5", "b6", "b7"} {
			if e.ID == eventlog.DeterministicID("commerce", tn.shopID, id) {
				reasons[id] = e.Type
			}
		}
	}
	for _, id := range []string{"b5", "b6", "b7"} {
		if reasons[id] != "WebhookDeliveryRecorded" {
			t.Errorf("delivery %s recorded as %q, want WebhookDeliveryRecorded", id, reasons[id])
		}
	}
}

func amount(t *testing.T, s string) domain.Amount {
	t.Helper()
	a, err := domain.ParseAmount(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
