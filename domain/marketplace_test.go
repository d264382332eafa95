package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestMarketplaceCredentials(t *testing.T) {
	ok, err := domain.NewMarketplaceCredentials("etsy", "  42 ", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", " ")
	if err != nil || ok.AccountID != "42" || ok.AppKey != "" {
		t.Fatalf("valid credentials: %+v %v", ok, err)
	}
	secret := strings.Repeat("s", 16)
	for _, c := range []struct {
		marketplace, account, secret, appKey, field string
	}{
		{"amazon", "42", secret, "", "marketplace"},
		{"", "42", secret, "", "marketplace"},
		{"etsy", " ", secret, "", "account_id"},
		{"etsy", strings.Repeat("a", 201), secret, "", "account_id"},
		{"etsy", "4\n2", secret, "", "account_id"},
		{"etsy", "42", strings.Repeat("s", 15), "", "secret"},
		{"etsy", "42", strings.Repeat("s", 513), "", "secret"},
		{"etsy", "42", " " + secret, "", "secret"},
		{"tiktok_shop", "42", secret, "key\x00", "app_key"},
	} {
		_, err := domain.NewMarketplaceCredentials(c.marketplace, c.account, c.secret, c.appKey)
		if de := asDomainError(err); de == nil || de.Code != domain.CodeInvalid || de.Field != c.field {
			t.Errorf("%+v: %v, want a failure on %s", c, err, c.field)
		} else if strings.Contains(err.Error(), c.secret) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

func TestMarketplaceConnectDecisions(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	creds, _ := domain.NewMarketplaceCredentials("generic", "acct-1", strings.Repeat("s", 16), "")
	shop := &domain.Shop{ID: "shop_a", Exists: true}
	var conn domain.MarketplaceConnection
	ev, err := conn.Connect(shop, creds, now)
	connected, ok := ev.(*domain.MarketplaceConnected)
	if err != nil || !ok || connected.ShopID != "shop_a" || connected.ConnectionID != domain.MarketplaceConnectionID("generic", "acct-1") {
		t.Fatalf("first connection: %#v %v", ev, err)
	}
	conn.Apply(ev)
	creds.Secret = strings.Repeat("t", 16)
	ev, err = conn.Connect(shop, creds, now)
	if rotated, ok := ev.(*domain.MarketplaceSecretRotated); err != nil || !ok || rotated.Secret != creds.Secret {
		t.Fatalf("reconnection by the same shop: %#v %v", ev, err)
	}
	ev, err = conn.Connect(&domain.Shop{ID: "shop_b", Exists: true}, creds, now)
	if domain.ErrorCode(err) != domain.CodeConflict || ev != nil || strings.Contains(err.Error(), "shop_a") {
		t.Fatalf("connection by another shop: %v %v", ev, err)
	}
	if _, err := (&domain.MarketplaceConnection{}).Connect(&domain.Shop{ID: "shop_x"}, creds, now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("missing shop: %v", err)
	}
}

func TestMarketplaceIDsAreStableAndScoped(t *testing.T) {
	a := domain.MarketplaceOrderID("shop_a", "etsy", "1")
	if a != domain.MarketplaceOrderID("shop_a", "etsy", "1") || !domain.HasPrefixID(a, domain.PrefixMarketplaceOrder) {
		t.Fatalf("order id %q", a)
	}
	for _, other := range []string{domain.MarketplaceOrderID("shop_b", "etsy", "1"), domain.MarketplaceOrderID("shop_a", "generic", "1"),
		domain.MarketplaceOrderID("shop_a", "etsy", "2")} {
		if other == a {
			t.Fatalf("ids collide: %s", a)
		}
	}
	c := domain.MarketplaceConnectionID("etsy", "42")
	if strings.Contains(c, "42") || c == domain.MarketplaceConnectionID("tiktok_shop", "42") || !domain.HasPrefixID(c, domain.PrefixMarketplaceConnection) {
		t.Fatalf("connection id %q", c)
	}
}

func TestMarketplaceOrderAndNotificationValidation(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	total := domain.Amount(255000)
	ev, err := domain.NewMarketplaceOrderRecorded("shop_a", domain.MarketplaceOrderUpdate{Marketplace: "generic", AccountID: "acct",
		MarketplaceOrderID: "A-1", Kind: "order.updated", Status: "shipped", Total: &total, Currency: "eur"}, now)
	if err != nil || ev.Currency != "EUR" || !ev.OccurredAt.Equal(now) || ev.OrderID != domain.MarketplaceOrderID("shop_a", "generic", "A-1") {
		t.Fatalf("valid update: %+v %v", ev, err)
	}
	negative := domain.Amount(-1)
	for field, in := range map[string]domain.MarketplaceOrderUpdate{
		"marketplace": {Marketplace: "amazon", MarketplaceOrderID: "1", Status: "paid"},
		"order_id":    {Marketplace: "etsy", Status: "paid"},
		"status":      {Marketplace: "etsy", MarketplaceOrderID: "1"},
		"currency":    {Marketplace: "etsy", MarketplaceOrderID: "1", Status: "paid", Currency: "EURO"},
		"total":       {Marketplace: "etsy", MarketplaceOrderID: "1", Status: "paid", Total: &negative},
		"kind":        {Marketplace: "etsy", MarketplaceOrderID: "1", Status: "paid", Kind: strings.Repeat("k", 201)},
	} {
		if _, err := domain.NewMarketplaceOrderRecorded("shop_a", in, now); asDomainError(err) == nil || asDomainError(err).Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	order := &domain.MarketplaceOrder{}
	order.Apply(ev)
	if _, err := order.Record("shop_b", domain.MarketplaceOrderUpdate{Marketplace: "generic", MarketplaceOrderID: "A-1", Status: "x"}, now); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("order of another shop: %v", err)
	}
	n, err := domain.NewMarketplaceNotificationReceived("shop_a", domain.MarketplaceNotice{Marketplace: "tiktok_shop", Kind: "4", ResourceID: "p-1"}, now)
	if err != nil || n.Kind != "4" || !n.OccurredAt.Equal(now) {
		t.Fatalf("notification: %+v %v", n, err)
	}
	if _, err := domain.NewMarketplaceNotificationReceived("shop_a", domain.MarketplaceNotice{Marketplace: "etsy"}, now); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("notification without a kind: %v", err)
	}
}

func asDomainError(err error) *domain.Error {
	var de *domain.Error
	if errors.As(err, &de) {
		return de
	}
	return nil
}
