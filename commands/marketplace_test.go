package commands_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// newShop creates an account and a shop on plan, and returns the shop id.
func newShop(t *testing.T, h *commands.Handler, domainName, plan string) string {
	t.Helper()
	ctx := context.Background()
	acc, err := h.CreateAccount(ctx, commands.CreateAccount{Name: "Account of " + domainName, Plan: plan}, meta)
	if err != nil {
		t.Fatal(err)
	}
	shop, err := h.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: domainName, Plan: plan, WebhookSecret: "0123456789abcdef"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	return shop.ID
}

func TestConnectMarketplaceClaimsTheAccount(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	shopA, shopB := newShop(t, h, "a.example.com", "agency"), newShop(t, h, "b.example.com", "agency")
	const secret = "first-secret-0123456789"
	connect := commands.ConnectMarketplace{ShopID: shopA, Marketplace: "tiktok_shop", AccountID: " 7494 ", Secret: secret, AppKey: "app-key"}
	first, err := h.ConnectMarketplace(ctx, connect, meta)
	if err != nil || first.Rotated || first.AccountID != "7494" || first.ID != domain.MarketplaceConnectionID("tiktok_shop", "7494") {
		t.Fatalf("connect: %+v %v", first, err)
	}
	stream := domain.MarketplaceConnectionStream(first.ID)
	evs, _ := l.ReadStream(ctx, stream, 0, 10)
	if len(evs) != 1 || evs[0].Type != "MarketplaceConnected" || bytes.Contains(evs[0].Data, []byte(secret)) {
		t.Fatalf("the connection event is missing or holds the secret in clear: %+v", evs)
	}
	connect.Secret = "second-secret-0123456789"
	again, err := h.ConnectMarketplace(ctx, connect, meta)
	if err != nil || !again.Rotated {
		t.Fatalf("reconnect: %+v %v", again, err)
	}
	connect.ShopID = shopB
	if _, err := h.ConnectMarketplace(ctx, connect, meta); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("another shop: %v", err)
	}
	connect.ShopID = "shop_missing"
	connect.AccountID = "other"
	if _, err := h.ConnectMarketplace(ctx, connect, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("missing shop: %v", err)
	}
	connect.Marketplace = "amazon"
	if _, err := h.ConnectMarketplace(ctx, connect, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("unknown marketplace: %v", err)
	}
	if n := streamLen(t, l, stream); n != 2 {
		t.Fatalf("connection stream has %d events, want 2", n)
	}
}

func TestConcurrentConnectsLeaveOneOwner(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	shops := []string{newShop(t, h, "c1.example.com", "agency"), newShop(t, h, "c2.example.com", "agency")}
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := map[string]int{}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(shop string) {
			defer wg.Done()
			_, err := h.ConnectMarketplace(ctx, commands.ConnectMarketplace{ShopID: shop, Marketplace: "generic", AccountID: "acct",
				Secret: strings.Repeat("s", 16)}, meta)
			mu.Lock()
			defer mu.Unlock()
			switch domain.ErrorCode(err) {
			case "":
				if err != nil {
					t.Errorf("connect: %v", err)
				}
				winners[shop]++
			case domain.CodeConflict:
			default:
				t.Errorf("connect: %v", err)
			}
		}(shops[i%2])
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("both shops hold the account: %v", winners)
	}
	evs, _ := l.ReadStream(ctx, domain.MarketplaceConnectionStream(domain.MarketplaceConnectionID("generic", "acct")), 0, 100)
	if len(evs) != 4 || evs[0].Type != "MarketplaceConnected" {
		t.Fatalf("%d events, want the claim and 3 rotations", len(evs))
	}
}

func TestMarketplaceRecordsAreIdempotentPerDelivery(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	shop := newShop(t, h, "d.example.com", "agency")
	order := commands.RecordMarketplaceOrder{ShopID: shop, EventID: eventlog.DeterministicID("marketplace", "etsy", shop, "msg_1"),
		Update: domain.MarketplaceOrderUpdate{Marketplace: "etsy", AccountID: "42", MarketplaceOrderID: "54321", Kind: "order.paid", Status: "paid"}}
	note := commands.RecordMarketplaceNotification{ShopID: shop, EventID: eventlog.DeterministicID("marketplace", "etsy", shop, "msg_2"),
		Notice: domain.MarketplaceNotice{Marketplace: "etsy", AccountID: "42", Kind: "listing.updated", ResourceID: "777"}}
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := h.RecordMarketplaceOrder(ctx, order, meta); err != nil {
				t.Errorf("order: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := h.RecordMarketplaceNotification(ctx, note, meta); err != nil {
				t.Errorf("notification: %v", err)
			}
		}()
	}
	wg.Wait()
	res, err := h.RecordMarketplaceOrder(ctx, order, meta)
	if err != nil || res.ID != domain.MarketplaceOrderID(shop, "etsy", "54321") {
		t.Fatalf("sequential repeat: %+v %v", res, err)
	}
	if n := streamLen(t, l, domain.MarketplaceOrderStream(res.ID)); n != 1 {
		t.Fatalf("order stream has %d events, want 1", n)
	}
	if n := streamLen(t, l, domain.MarketplaceNotificationStream(note.EventID.String())); n != 1 {
		t.Fatalf("notification stream has %d events, want 1", n)
	}
	order.EventID = eventlog.DeterministicID("marketplace", "etsy", shop, "msg_3")
	order.Update.Status, order.Update.Kind = "shipped", "order.shipped"
	if _, err := h.RecordMarketplaceOrder(ctx, order, meta); err != nil {
		t.Fatal(err)
	}
	if n := streamLen(t, l, domain.MarketplaceOrderStream(res.ID)); n != 2 {
		t.Fatalf("order stream has %d events after a new delivery, want 2", n)
	}
	order.Update.MarketplaceOrderID = ""
	if _, err := h.RecordMarketplaceOrder(ctx, order, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("order without id: %v", err)
	}
}
